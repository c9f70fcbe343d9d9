/**
 * Serving certificates requested from the cluster, as the kubelet's certificate manager does with
 * `serverTLSBootstrap: true`: for each served node a fresh ECDSA P-256 key and a CertificateSigningRequest
 * (certificates.k8s.io/v1) for signer `kubernetes.io/kubelet-serving` with the node's addresses as SANs.
 * Nothing here approves it: a cluster administrator (`kubectl certificate approve <name>`) or an approver
 * does; the signer (kube-controller-manager) then issues it into `status.certificate`.
 *
 * States of one node's ServingCertificateManager: waiting (no certificate: connections to the node's
 * address are refused, the node itself runs on), serving (a certificate valid now), renewing (serving
 * the old one while a new CSR waits, from a jittered 70-90 % of its lifetime). A denied or failed CSR, or
 * an API error, is retried with back-off (1 s doubling to 5 min) with a new key. Invariant: the served
 * certificate always matches the served key, and an expired certificate is never served.
 *
 * Reporting: a log line and a Node Event (CertificatePending) naming the CSR and how to approve it;
 * CertificateIssued when it arrives; CertificateDenied / CertificateFailed (Warning) on refusal.
 */
import { X509Certificate, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { NodeEventRecorder } from '../../node/api.js';
import { nodeRef } from '../../node/api.js';
import type { Clock } from '../../util/clock.js';
import { KindError, errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import {
  KUBELET_SERVING_SIGNER,
  KUBELET_SERVING_USAGES,
  buildCsrDer,
  renewalDeadline,
  servingNames,
  servingSubject,
  toPem,
} from './csr.js';
import type { NodeApiTarget } from './registry.js';
import type { ServingCertificate, ServingCertificateSource } from './tlsfront.js';

export const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/** The API calls made here; KubeClient satisfies it. */
export interface CsrApi {
  request<T>(req: {
    method: 'GET' | 'POST';
    path: string;
    body?: unknown;
    query?: Record<string, string | number | boolean | undefined>;
  }): Promise<T>;
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: { type: string; object: unknown }) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

interface Csr {
  metadata: { name?: string; resourceVersion?: string };
  status?: { certificate?: string; conditions?: { type: string; status?: string; message?: string }[] };
}

/** What a CSR says: issued (PEM), refused, or still pending. */
export function csrOutcome(
  csr: Csr,
):
  | { state: 'issued'; certificate: string }
  | { state: 'refused'; reason: string; message: string }
  | { state: 'pending' } {
  for (const c of csr.status?.conditions ?? []) {
    if ((c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False')
      return { state: 'refused', reason: c.type, message: c.message ?? '' };
  }
  const cert = csr.status?.certificate;
  if (cert) return { state: 'issued', certificate: Buffer.from(cert, 'base64').toString('utf8') };
  return { state: 'pending' };
}

export interface ServingCertificateManagerOptions {
  api: CsrApi;
  clock: Clock;
  logger: Logger;
  recorder: NodeEventRecorder;
  nodeName: string;
  /** The node's addresses (InternalIP, hostname): the certificate's SANs. */
  addresses: string[];
  /** [0, 1) for the renewal jitter; Math.random by default. */
  random?: () => number;
  /** How long one watch of the pending CSR lasts before it is re-read (default 300 s). */
  watchTimeoutSeconds?: number;
}

interface Issued extends ServingCertificate {
  notBeforeMs: number;
  notAfterMs: number;
}

const RETRY_INITIAL_MS = 1000;
const RETRY_MAX_MS = 5 * 60_000;

export class ServingCertificateManager {
  private issued: Issued | undefined;
  private readonly stopper = new AbortController();
  private loop: Promise<void> | undefined;
  /** The CSR waiting for approval, if any. */
  pendingCsr: string | undefined;
  private readonly waiters = new Set<() => void>();

  constructor(private readonly opts: ServingCertificateManagerOptions) {
    servingNames(opts.addresses); // bad addresses fail here, at construction
  }

  /** The certificate to serve now, or undefined (none issued yet, or expired). */
  current(): ServingCertificate | undefined {
    const c = this.issued;
    if (!c) return undefined;
    // Only expiry counts: a notBefore a moment ahead of our clock (signer skew) is the client's to judge.
    return this.opts.clock.now() < c.notAfterMs ? c : undefined;
  }

  /** Resolves once a certificate is served (at once if one is). */
  whenServing(): Promise<void> {
    if (this.current()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.add(resolve));
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { clock, logger } = this.opts;
    const signal = this.stopper.signal;
    let retryMs = RETRY_INITIAL_MS;
    while (!signal.aborted) {
      try {
        const got = await this.requestOnce(signal);
        this.issued = got;
        retryMs = RETRY_INITIAL_MS;
        for (const w of this.waiters) w();
        this.waiters.clear();
        const renewAt = renewalDeadline(got.notBeforeMs, got.notAfterMs, (this.opts.random ?? Math.random)());
        logger.info('node API serving certificate issued', {
          notAfter: new Date(got.notAfterMs).toISOString(),
          renewAt: new Date(renewAt).toISOString(),
        });
        // A year-long certificate renews ~300 days out; the Clock holds a sleep of any length.
        while (clock.now() < renewAt) await clock.sleep(renewAt - clock.now(), signal);
      } catch (err) {
        if (signal.aborted) break;
        logger.warn('node API serving certificate request failed; retrying', {
          error: errorMessage(err),
          retryInMs: retryMs,
        });
        await clock.sleep(retryMs, signal).catch(() => undefined);
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      }
    }
  }

  /** One CSR from key to issued certificate. Throws when it is refused or the API fails. */
  private async requestOnce(signal: AbortSignal): Promise<Issued> {
    const { api, nodeName, recorder, logger } = this.opts;
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const der = buildCsrDer(privateKey, servingSubject(nodeName), servingNames(this.opts.addresses));
    const created = await api.request<Csr>({
      method: 'POST',
      path: CSR_PATH,
      body: {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: { generateName: 'csr-' },
        spec: {
          request: Buffer.from(toPem('CERTIFICATE REQUEST', der)).toString('base64'),
          signerName: KUBELET_SERVING_SIGNER,
          usages: [...KUBELET_SERVING_USAGES],
        },
      },
    });
    const name = created.metadata.name ?? '';
    this.pendingCsr = name;
    const message =
      `Waiting for approval of CertificateSigningRequest ${name} (signer ${KUBELET_SERVING_SIGNER}) for ` +
      `the node API serving certificate; approve it with: kubectl certificate approve ${name}`;
    logger.info(message, { csr: name, addresses: this.opts.addresses });
    recorder.event(nodeRef(nodeName), 'Normal', 'CertificatePending', message);
    try {
      const pem = await this.waitIssued(name, created, signal);
      const issued = this.checkIssued(pem, privateKey, name);
      recorder.event(
        nodeRef(nodeName),
        'Normal',
        'CertificateIssued',
        `Node API serving certificate issued from CertificateSigningRequest ${name}, valid until ${new Date(issued.notAfterMs).toISOString()}`,
      );
      return issued;
    } catch (err) {
      if (err instanceof KindError && err.kind === 'Forbidden' && !signal.aborted) {
        const reason = String(err.context.reason ?? 'CertificateDenied');
        recorder.event(nodeRef(nodeName), 'Warning', reason, err.message);
      }
      throw err;
    } finally {
      this.pendingCsr = undefined;
    }
  }

  /**
   * Follows the CSR with a watch (field selector on its name) until it is issued or refused. Only `watch`
   * is needed: a watch that ends is resumed from the last resourceVersion seen, and one whose version
   * expired starts over without one, which replays the CSR's current state as ADDED.
   */
  private async waitIssued(name: string, first: Csr, signal: AbortSignal): Promise<string> {
    let csr: Csr = first;
    let rv = first.metadata.resourceVersion;
    for (;;) {
      const o = csrOutcome(csr);
      if (o.state === 'issued') return o.certificate;
      if (o.state === 'refused')
        throw new KindError(
          'Forbidden',
          `CertificateSigningRequest ${name} ${o.reason.toLowerCase()}: ${o.message}`,
          { reason: o.reason === 'Denied' ? 'CertificateDenied' : 'CertificateFailed' },
        );
      const watchStop = new AbortController();
      let deleted = false;
      let progressed = false;
      const failed = await this.opts.api
        .watch(
          CSR_PATH,
          {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion: rv,
            timeoutSeconds: this.opts.watchTimeoutSeconds ?? 300,
          },
          (ev) => {
            const obj = ev.object as Csr;
            if (ev.type === 'ERROR') {
              rv = undefined; // 410 Gone: start over from the current state
              watchStop.abort();
              return;
            }
            progressed = true;
            rv = obj.metadata?.resourceVersion ?? rv;
            if (ev.type === 'DELETED') {
              deleted = true;
              watchStop.abort();
              return;
            }
            if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') return;
            csr = obj;
            if (csrOutcome(csr).state !== 'pending') watchStop.abort();
          },
          AbortSignal.any([signal, watchStop.signal]),
        )
        .then(
          () => false,
          (err: unknown) => {
            if (err instanceof KindError && err.kind === 'Gone') rv = undefined;
            else if (!signal.aborted)
              this.opts.logger.warn('watching the CertificateSigningRequest failed; retrying', {
                csr: name,
                error: errorMessage(err),
              });
            return true;
          },
        );
      if (signal.aborted) throw new KindError('Unavailable', 'stopped');
      // Pending CSRs are garbage-collected after a day; a deleted one is replaced by a new request.
      if (deleted) throw new KindError('NotFound', `CertificateSigningRequest ${name} was deleted`);
      if (failed && !progressed) await this.opts.clock.sleep(5000, signal).catch(() => undefined);
    }
  }

  private checkIssued(pem: string, key: KeyObject, name: string): Issued {
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(pem);
    } catch (err) {
      throw new KindError(
        'InvalidArgument',
        `CertificateSigningRequest ${name}: bad certificate: ${errorMessage(err)}`,
      );
    }
    if (!x509.checkPrivateKey(key))
      throw new KindError(
        'InvalidArgument',
        `CertificateSigningRequest ${name}: certificate does not match our key`,
      );
    const notBeforeMs = Date.parse(x509.validFrom);
    const notAfterMs = Date.parse(x509.validTo);
    if (!(notAfterMs > this.opts.clock.now()))
      throw new KindError(
        'InvalidArgument',
        `CertificateSigningRequest ${name}: certificate already expired`,
      );
    return {
      cert: pem,
      key: key.export({ type: 'pkcs8', format: 'pem' }),
      notBeforeMs,
      notAfterMs,
    };
  }
}

/** A NodeEventRecorder that may hold writes still to go (the EventRecorder of src/kube/events.ts). */
export type ClosableRecorder = NodeEventRecorder & { close?(): void; flush?(): Promise<void> };

/** What CsrServingCertificates needs from the node registry. */
export interface ServedNodes {
  nodes(): NodeApiTarget[];
  nodeByAddress(address: string): NodeApiTarget | undefined;
  /** Calls `fn` after each register/unregister; returns the unsubscribe function. */
  onChange(fn: () => void): () => void;
}

export interface CsrServingCertificatesOptions {
  api: CsrApi;
  clock: Clock;
  logger: Logger;
  nodes: ServedNodes;
  /**
   * An event recorder for the named Node. When that node's manager stops (the node leaves, or stop()), the
   * recorder is closed (a write sleeping before its next try gives up) and flushed, as a node's own recorder
   * is when the node stops.
   */
  recorderFor(nodeName: string): ClosableRecorder;
  random?: () => number;
}

/**
 * A certificate source for the node API: one ServingCertificateManager per served node (started when the
 * node registers, stopped when it leaves), chosen by the local address a connection arrived on.
 */
export class CsrServingCertificates implements ServingCertificateSource {
  private readonly managers = new Map<
    string,
    { key: string; m: ServingCertificateManager; recorder: ClosableRecorder }
  >();
  private unsubscribe: (() => void) | undefined;
  private readonly lastRefusal = new Map<string, number>();

  constructor(private readonly opts: CsrServingCertificatesOptions) {}

  start(): void {
    this.unsubscribe ??= this.opts.nodes.onChange(() => this.sync());
    this.sync();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    const all = [...this.managers.values()];
    this.managers.clear();
    await Promise.all(all.map((e) => retire(e)));
  }

  /** The manager of a node (tests and diagnostics). */
  manager(nodeName: string): ServingCertificateManager | undefined {
    return this.managers.get(nodeName)?.m;
  }

  certificateFor(localAddress: string): ServingCertificate | undefined {
    const node = this.opts.nodes.nodeByAddress(localAddress);
    return node ? this.managers.get(node.nodeName)?.m.current() : undefined;
  }

  /** Logs a refused connection, at most once a minute per address, with the CSR it waits for. */
  reportRefused(localAddress: string): void {
    const now = this.opts.clock.now();
    if (now - (this.lastRefusal.get(localAddress) ?? -Infinity) < 60_000) return;
    this.lastRefusal.set(localAddress, now);
    const node = this.opts.nodes.nodeByAddress(localAddress);
    const pending = node ? this.managers.get(node.nodeName)?.m.pendingCsr : undefined;
    this.opts.logger.warn('node API connection refused: no serving certificate for this address yet', {
      address: localAddress,
      node: node?.nodeName,
      csr: pending,
      hint: pending ? `kubectl certificate approve ${pending}` : undefined,
    });
  }

  private sync(): void {
    const want = new Map(this.opts.nodes.nodes().map((n) => [n.nodeName, n]));
    for (const [name, e] of this.managers) {
      const n = want.get(name);
      if (!n || e.key !== `${n.internalIP}`) {
        this.managers.delete(name);
        void retire(e);
      }
    }
    for (const [name, n] of want) {
      if (this.managers.has(name)) continue;
      try {
        const recorder = this.opts.recorderFor(name);
        const m = new ServingCertificateManager({
          api: this.opts.api,
          clock: this.opts.clock,
          logger: this.opts.logger.child({ node: name }),
          recorder,
          nodeName: name,
          addresses: [n.internalIP, name],
          random: this.opts.random,
        });
        this.managers.set(name, { key: n.internalIP, m, recorder });
        m.start();
      } catch (err) {
        this.opts.logger.warn('cannot request a node API serving certificate', {
          node: name,
          error: errorMessage(err),
        });
      }
    }
  }
}

/** Stops a node's manager, then closes and flushes its recorder (nothing records to it any more). */
async function retire(e: { m: ServingCertificateManager; recorder: ClosableRecorder }): Promise<void> {
  await e.m.stop();
  e.recorder.close?.();
  await e.recorder.flush?.();
}

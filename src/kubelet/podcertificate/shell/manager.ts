/**
 * The kubelet's podcertificate manager (pkg/kubelet/podcertificate): one credential state per podCertificate
 * projection of the node's pods (credstate.ts decides; this module does the I/O), driven through a work queue:
 *
 * - a projection is queued when its pod is added (trackPod), when one of the node's PodCertificateRequests
 *   naming its pod is added, changed or deleted, and by a refresh pass over every pod every 1 to 2 minutes;
 * - handling it runs one step: create a request (the ServiceAccount's UID by GET, the Node's UID from the node
 *   informer, a new key and its stub PKCS#10 request, POST), or read the outcome of the request it waits on,
 *   recording the kubelet's Warning Events; an error requeues it with back-off;
 * - a pod gone from the pod manager, or forgotten (forgetPod), takes its states with it.
 *
 * The requests are read from an informer of the node's PodCertificateRequests (field selector
 * spec.nodeName=<node>), as the kubelet reads them, not by a GET each: the informer's events wake a projection
 * the moment its signer answers, and its lag is what the 10-minute abandon rule of credstate.ts allows for.
 *
 * Private keys stay in this process's memory (the kubelet's credStore): they reach the pod's volume files and
 * nothing else. Nothing survives a restart: a restarted operator asks again for every projection.
 */
import type { Pod } from '../../../api/core.js';
import {
  PCR_API_VERSION,
  podCertificateRequestsPath,
  type PodCertificateRequest,
} from '../../../api/podcertificaterequest.js';
import type { PodCertificateProjection } from '../../../api/volumes.js';
import type { KubeClient } from '../../../kube/client.js';
import type { Informer } from '../../../kube/informer.js';
import { runWorkers, WorkQueue } from '../../../kube/workqueue.js';
import type { Clock, TimerHandle } from '../../../util/clock.js';
import { errorKind, errorMessage, KindError } from '../../../util/errors.js';
import type { Logger } from '../../../util/logger.js';
import type { EventRecorderFunc } from '../../container/ref.js';
import { apiServerMessage } from '../../token/resttokenrequester.js';
import {
  credentialBundle,
  INITIAL,
  JITTER_MAX_MS,
  pendingRequestName,
  requestCreated,
  step,
  type CreatedRequest,
  type CredState,
} from '../credstate.js';
import { generateKeyAndRequest, type KeyAndRequest } from './keys.js';
import {
  podCertificateProjections,
  projectionKeyGoString,
  projectionKeyString,
  projectionSource,
  type CredentialBundle,
  type ProjectionKey,
} from '../projection.js';

/** The API calls of the manager. Both reject with the API server's message. */
export interface PodCertificateAPI {
  /** The UID of a ServiceAccount (GET). */
  serviceAccountUID(namespace: string, name: string): Promise<string>;
  /** Creates a request (POST); resolves with the object as created (its generated name). */
  createRequest(request: PodCertificateRequest): Promise<PodCertificateRequest>;
}

const enc = encodeURIComponent;

/** PodCertificateAPI through the operator's client (RBAC: get serviceaccounts, create podcertificaterequests). */
export function restPodCertificateAPI(client: Pick<KubeClient, 'request'>): PodCertificateAPI {
  return {
    async serviceAccountUID(namespace, name) {
      const path = `/api/v1/namespaces/${enc(namespace)}/serviceaccounts/${enc(name)}`;
      try {
        const sa = await client.request<{ metadata?: { uid?: string } }>({ method: 'GET', path });
        return sa.metadata?.uid ?? '';
      } catch (err) {
        throw new KindError(errorKind(err), apiServerMessage(err, `GET ${path}`), { namespace, name });
      }
    },
    async createRequest(request) {
      const path = podCertificateRequestsPath(request.metadata.namespace ?? '');
      try {
        return await client.request<PodCertificateRequest>({ method: 'POST', path, body: request });
      } catch (err) {
        throw new KindError(errorKind(err), apiServerMessage(err, `POST ${path}`), {
          namespace: request.metadata.namespace,
          pod: request.spec.podName,
        });
      }
    },
  };
}

export interface PodCertificateManagerDeps {
  api: PodCertificateAPI;
  /** The node's PodCertificateRequests (field selector spec.nodeName), by `namespace/name`; started by its owner. */
  requests: Pick<Informer<PodCertificateRequest>, 'get' | 'addHandlers' | 'waitForSync'>;
  nodeName: string;
  /** The Node's UID, as the node informer has it; undefined while it has none. */
  nodeUID: () => string | undefined;
  /** The node's pods (the kubelet's pod manager). */
  pods: { getPodByUID(uid: string): Pod | undefined; getPods(): Pod[] };
  record: EventRecorderFunc;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'debug'>;
  /** Uniform [0, 1): jitter; default Math.random. */
  random?: () => number;
  /** A new key and its stub request (default keys.ts); tests pass a faster one. */
  generateKey?: (keyType: string) => Promise<KeyAndRequest>;
}

/** The refresh pass: every pod's projections are queued every 1 min, jittered up to 1 min more. */
export const REFRESH_PASS_MS = 60_000;

/**
 * Invariants: a projection is handled by one step at a time (the work queue's guarantee); a state is only
 * replaced by the step that read it; states exist only for pods the pod manager had when they were made, and
 * go with their pod (forgetPod, or the first step that no longer finds it).
 */
export class PodCertificateManager {
  private readonly queue: WorkQueue<string>;
  /** Credential states by projectionKeyString. */
  private readonly states = new Map<string, { key: ProjectionKey; state: CredState }>();
  private readonly random: () => number;
  private readonly generateKey: (keyType: string) => Promise<KeyAndRequest>;
  private refreshTimer: TimerHandle | undefined;
  private phase: 'new' | 'started' | 'stopped' = 'new';

  constructor(private readonly d: PodCertificateManagerDeps) {
    this.random = d.random ?? Math.random;
    this.generateKey = d.generateKey ?? generateKeyAndRequest;
    this.queue = new WorkQueue<string>(d.clock);
    // The refresh pass would come by within two minutes anyway; with these a pod sees its signer's answer
    // as soon as the watch brings it.
    const wake = (r: PodCertificateRequest): void => this.queuePod(r.spec?.podUID ?? '');
    d.requests.addHandlers({ add: wake, update: (_old, r) => wake(r), delete: wake });
  }

  /** Starts handling projections once the requests' informer has synced (once). */
  start(): void {
    if (this.phase !== 'new') return;
    this.phase = 'started';
    void this.d.requests.waitForSync().then(() => {
      if (this.phase !== 'started') return;
      this.scheduleRefreshPass();
      void runWorkers(
        this.queue,
        1,
        (k) => this.handle(k),
        (k, err) =>
          this.d.logger.warn('while handling podCertificate projected volume source', {
            projection: k,
            error: errorMessage(err),
          }),
      );
    });
  }

  /** Stops the queue and the refresh pass; the states are dropped. */
  stop(): void {
    this.phase = 'stopped';
    this.refreshTimer?.cancel();
    this.queue.shutDown();
    this.states.clear();
  }

  /** A pod was added to the node: its projections are queued (kubelet TrackPod). */
  trackPod(pod: Pod): void {
    this.queuePod(pod.metadata.uid ?? '');
  }

  /** A pod left the node: its states go at once (kubelet ForgetPod). */
  forgetPod(pod: Pod): void {
    this.dropPod(pod.metadata.namespace ?? '', pod.metadata.name ?? '', pod.metadata.uid ?? '');
  }

  /** The key and chain of a projection; throws with the kubelet's words for why there are none. */
  credentialBundle(key: ProjectionKey): CredentialBundle {
    const entry = this.states.get(projectionKeyString(key));
    if (!entry)
      throw new KindError('Unavailable', `no credentials yet for key=${projectionKeyGoString(key)}`);
    const b = credentialBundle(entry.state);
    if (!b.ok) throw new KindError('Unavailable', b.error);
    return { privateKey: b.privateKey, certChain: b.certChain };
  }

  private jitterMs(): number {
    return Math.floor(this.random() * JITTER_MAX_MS);
  }

  private queuePod(uid: string): void {
    const pod = uid ? this.d.pods.getPodByUID(uid) : undefined;
    if (!pod) return;
    for (const { key } of podCertificateProjections(pod)) this.queue.add(encodeKey(key));
  }

  private dropPod(namespace: string, podName: string, podUID: string): void {
    for (const [k, e] of this.states) {
      if (e.key.namespace === namespace && e.key.podName === podName && e.key.podUID === podUID)
        this.states.delete(k);
    }
  }

  private scheduleRefreshPass(): void {
    if (this.phase !== 'started') return;
    this.refreshTimer = this.d.clock.setTimer(REFRESH_PASS_MS * (1 + this.random()), () => {
      for (const pod of this.d.pods.getPods()) this.queuePod(pod.metadata.uid ?? '');
      // States whose pod left without a forgetPod (none should) go too: no pod, no step to drop them.
      for (const [k, e] of this.states) if (!this.d.pods.getPodByUID(e.key.podUID)) this.states.delete(k);
      this.scheduleRefreshPass();
    });
  }

  /** One step of one projection (kubelet handleProjection). Throws to be retried with back-off. */
  private async handle(encoded: string): Promise<void> {
    const key = decodeKey(encoded);
    const pod = this.d.pods.getPodByUID(key.podUID);
    if (!pod) {
      // Deleted: its states go, and nothing is retried.
      this.dropPod(key.namespace, key.podName, key.podUID);
      return;
    }
    const source = projectionSource(pod, key);
    if (!source) {
      // No retry can help.
      this.d.logger.warn('pod does not contain the named podCertificate projected volume source', {
        projection: projectionKeyGoString(key),
      });
      return;
    }
    const id = projectionKeyString(key);
    let entry = this.states.get(id);
    if (!entry) {
      entry = { key, state: INITIAL };
      this.states.set(id, entry);
    }
    const waitingOn = pendingRequestName(entry.state);
    const result = step(entry.state, key.namespace, {
      now: this.d.clock.now(),
      jitterMs: this.jitterMs(),
      ...(waitingOn ? { request: this.d.requests.get(`${key.namespace}/${waitingOn}`) } : {}),
    });
    entry.state = result.state;
    for (const e of result.events) this.d.record(pod, 'Warning', e.reason, e.message);
    switch (result.action.kind) {
      case 'done':
        return;
      case 'retry':
        throw new KindError('Unavailable', result.action.error, { projection: id });
      case 'create': {
        const refresh = entry.state.kind !== 'initial';
        let created: CreatedRequest;
        try {
          created = await this.createRequest(pod, source);
        } catch (err) {
          const what = refresh ? 'refresh' : 'initial';
          throw new KindError(
            errorKind(err),
            `while creating ${what} PodCertificateRequest: ${errorMessage(err)}`,
            { projection: id },
          );
        }
        // Whatever the pod did meanwhile, this entry is the one the step read (a forgotten pod's is dropped).
        entry.state = requestCreated(entry.state, created, this.d.clock.now(), this.jitterMs());
        this.d.logger.debug('PodCertificateRequest created', { projection: id, request: created.name });
        return;
      }
      default: {
        const never: never = result.action;
        throw new Error(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }

  /** The request of one projection, with a new key (kubelet createPodCertificateRequest). */
  private async createRequest(pod: Pod, source: PodCertificateProjection): Promise<CreatedRequest> {
    const namespace = pod.metadata.namespace ?? '';
    const saName = pod.spec.serviceAccountName ?? '';
    let saUID: string;
    try {
      saUID = await this.d.api.serviceAccountUID(namespace, saName);
    } catch (err) {
      throw new KindError(errorKind(err), `while fetching service account: ${errorMessage(err)}`);
    }
    const nodeUID = this.d.nodeUID();
    if (!nodeUID) {
      throw new KindError(
        'Unavailable',
        `while getting node object from local cache: node "${this.d.nodeName}" not found`,
      );
    }
    let generated: KeyAndRequest;
    try {
      generated = await this.generateKey(source.keyType);
    } catch (err) {
      throw new KindError(errorKind(err), `while generating keypair: ${errorMessage(err)}`);
    }
    const request: PodCertificateRequest = {
      apiVersion: PCR_API_VERSION,
      kind: 'PodCertificateRequest',
      metadata: {
        namespace,
        generateName: 'req-',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
        ],
      },
      spec: {
        signerName: source.signerName,
        podName: pod.metadata.name ?? '',
        podUID: pod.metadata.uid ?? '',
        serviceAccountName: saName,
        serviceAccountUID: saUID,
        nodeName: this.d.nodeName,
        nodeUID,
        ...(source.maxExpirationSeconds !== undefined
          ? { maxExpirationSeconds: source.maxExpirationSeconds }
          : {}),
        stubPKCS10Request: generated.stubRequest.toString('base64'),
        ...(source.userAnnotations ? { unverifiedUserAnnotations: source.userAnnotations } : {}),
      },
    };
    let created: PodCertificateRequest;
    try {
      created = await this.d.api.createRequest(request);
    } catch (err) {
      throw new KindError(errorKind(err), `while creating on API: ${errorMessage(err)}`);
    }
    return {
      name: created.metadata.name ?? '',
      ...(created.metadata.creationTimestamp
        ? { creationTimestamp: created.metadata.creationTimestamp }
        : {}),
      privateKey: generated.privateKeyPem,
    };
  }
}

/** A projection key as the work queue holds it (a string: the queue de-duplicates by value). */
function encodeKey(k: ProjectionKey): string {
  return JSON.stringify([k.namespace, k.podName, k.podUID, k.volumeName, k.sourceIndex]);
}

function decodeKey(s: string): ProjectionKey {
  const [namespace, podName, podUID, volumeName, sourceIndex] = JSON.parse(s) as [
    string,
    string,
    string,
    string,
    number,
  ];
  return { namespace, podName, podUID, volumeName, sourceIndex };
}

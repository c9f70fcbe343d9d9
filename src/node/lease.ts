/**
 * The node heartbeat: keeps `kube-node-lease/<node>` renewed (kubelet: component-helpers lease controller
 * with the kubelet's SetNodeOwnerFunc). The node lifecycle controller marks the Node Unknown when
 * `renewTime + leaseDurationSeconds` passes, so this loop is what keeps a Node alive.
 *
 * Each sync:
 * - with a Lease from the previous sync in hand, PUTs it with a fresh renewTime (optimistic concurrency on
 *   its resourceVersion: no GET per heartbeat);
 * - on Conflict or NotFound, or with nothing in hand, GETs the Lease (creating it when absent) and PUTs again
 *   (right after the Node was created, creates it first and GETs only if it exists: see expectAbsent);
 * - any other failure waits a back-off (200 ms doubling to 7 s) before the next attempt, until one succeeds or
 *   the controller stops.
 * Every write carries holderIdentity = node name, the configured duration, and an owner reference to the Node
 * once its UID is known; a Lease without that reference (created before the Node was, or left from an
 * earlier Node of the same name) gets it on the next write.
 *
 * Syncs start every renewInterval measured from the start of the previous one; after a sync that overran
 * (back-off) the next waits a whole interval from its end, as the kubelet's sliding loop does. Time and timers
 * come from the injected Clock.
 */
import type { Lease } from '../api/node.js';
import type { OwnerReference } from '../api/core.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorKind, errorMessage } from '../util/errors.js';
import { NODE_LEASE_NAMESPACE, silentLogger, type NodeAPI, type NodeLogger } from './api.js';

export const DEFAULT_LEASE_DURATION_SECONDS = 40;
export const DEFAULT_RENEW_INTERVAL_MS = 10_000;
const BACKOFF_INITIAL_MS = 200;
const BACKOFF_MAX_MS = 7_000;

/** metav1.MicroTime's wire form: `YYYY-MM-DDTHH:MM:SS.ffffffZ` (microseconds, UTC). */
export function formatMicroTime(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.floor((ms - whole) * 1000);
  return new Date(whole).toISOString().replace(/Z$/, `${String(micros).padStart(3, '0')}Z`);
}

export interface LeaseControllerConfig {
  api: Pick<NodeAPI, 'getLease' | 'createLease' | 'updateLease'>;
  clock: Clock;
  nodeName: string;
  /** The Node's UID, once registered; read at every write so a re-created Node is picked up. */
  nodeUID: () => string | undefined;
  leaseDurationSeconds?: number;
  renewIntervalMs?: number;
  logger?: NodeLogger;
  /**
   * Waited for (when it returns a promise) before the Lease of a Node just created is created: while other
   * nodes of the process register, their Node creates go first (see StartupHold). Bounded by its giver.
   */
  createAfter?: () => Promise<void> | undefined;
}

/** Whether `lease` already carries the owner reference to the Node with `uid`. */
function ownedBy(lease: Lease, nodeName: string, uid: string): boolean {
  return (lease.metadata.ownerReferences ?? []).some(
    (r) => r.kind === 'Node' && r.apiVersion === 'v1' && r.name === nodeName && r.uid === uid,
  );
}

/**
 * Invariants: at most one sync runs at a time; `lastRenewTime` only moves forward and is the clock time of
 * the last write the API server accepted; after `stop()` resolves no further request is started.
 */
export class LeaseController {
  /** Clock time (epoch ms) of the last successful renewal, or undefined before the first. */
  lastRenewTime: number | undefined;
  /** Resolves at the first successful renewal; rejects if the controller stops before that. */
  readonly ready: Promise<void>;
  /** Resolves once the controller has stopped (after `stop()`). */
  readonly done: Promise<void>;

  private readonly leaseDurationSeconds: number;
  private readonly renewIntervalMs: number;
  private readonly logger: NodeLogger;
  private readonly abort = new AbortController();
  private latest: Lease | undefined;
  private started = false;
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private resolveDone!: () => void;
  private failures = 0;
  /** The Node was just created: create the Lease before trying to read it (see expectAbsent). */
  private absentLikely = false;

  constructor(private readonly cfg: LeaseControllerConfig) {
    if (!cfg.api || !cfg.clock || !cfg.nodeName || typeof cfg.nodeUID !== 'function') {
      throw new KindError('InvalidArgument', 'lease controller needs api, clock, nodeName and nodeUID', {
        node: cfg.nodeName,
      });
    }
    this.leaseDurationSeconds = cfg.leaseDurationSeconds ?? DEFAULT_LEASE_DURATION_SECONDS;
    this.renewIntervalMs = cfg.renewIntervalMs ?? DEFAULT_RENEW_INTERVAL_MS;
    if (this.renewIntervalMs <= 0 || this.leaseDurationSeconds <= 0) {
      throw new KindError('InvalidArgument', 'lease duration and renew interval must be positive', {
        node: cfg.nodeName,
      });
    }
    this.logger = cfg.logger ?? silentLogger;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {});
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.run();
  }

  /** Stops renewing; an in-flight request completes but nothing new starts. Resolves with `done`. */
  stop(): Promise<void> {
    this.abort.abort();
    this.rejectReady(new KindError('Unavailable', 'lease controller stopped', { node: this.cfg.nodeName }));
    if (!this.started) this.resolveDone();
    return this.done;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async run(): Promise<void> {
    const { clock } = this.cfg;
    try {
      while (!this.stopped) {
        const began = clock.now();
        await this.sync();
        if (this.stopped) break;
        const elapsed = clock.now() - began;
        const wait = elapsed < this.renewIntervalMs ? this.renewIntervalMs - elapsed : this.renewIntervalMs;
        await clock.sleep(wait, this.abort.signal);
      }
    } catch {
      // Only the abort of a sleep lands here.
    } finally {
      this.resolveDone();
    }
  }

  /** One renewal, retried with back-off until it succeeds or the controller stops. */
  private async sync(): Promise<void> {
    let base = this.latest;
    while (!this.stopped) {
      try {
        if (!base) {
          const got = await this.ensure();
          if (got.created) return this.renewed(got.lease);
          base = got.lease;
        }
        const updated = await this.cfg.api.updateLease(this.withRenewal(base));
        return this.renewed(updated);
      } catch (err) {
        // Stopped while it waited (createAfter): nothing failed.
        if (this.stopped) return;
        const kind = errorKind(err);
        this.latest = undefined;
        base = undefined;
        this.logger.warn('node lease renewal failed', {
          node: this.cfg.nodeName,
          kind,
          error: errorMessage(err),
        });
        // A conflict (or a deleted Lease) means our copy is stale: re-read at once the first time, as the
        // kubelet does; back off if it keeps happening. Anything else backs off.
        if ((kind === 'Conflict' || kind === 'NotFound') && this.failures === 0) {
          this.failures++;
          continue;
        }
        const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** Math.min(this.failures, 10));
        this.failures++;
        try {
          await this.cfg.clock.sleep(delay, this.abort.signal);
        } catch {
          return;
        }
      }
    }
  }

  /**
   * Says the Node was just created, so its Lease most likely does not exist: the next ensure creates it
   * first and reads it only if it exists after all (one request instead of a GET that fails and a create;
   * at 100 nodes starting, 100 requests fewer). The kubelet always GETs first.
   */
  expectAbsent(): void {
    this.absentLikely = true;
  }

  /** GETs the Lease, creating it when absent (creating first when it is expected absent). */
  private async ensure(): Promise<{ lease: Lease; created: boolean }> {
    const fresh: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.cfg.nodeName, namespace: NODE_LEASE_NAMESPACE },
      spec: {},
    };
    if (this.absentLikely) {
      this.absentLikely = false;
      await this.cfg.createAfter?.();
      if (this.stopped)
        throw new KindError('Unavailable', 'lease controller stopped', { node: this.cfg.nodeName });
      try {
        return { lease: await this.cfg.api.createLease(this.withRenewal(fresh)), created: true };
      } catch (err) {
        if (errorKind(err) !== 'AlreadyExists') throw err;
      }
    }
    try {
      return { lease: await this.cfg.api.getLease(this.cfg.nodeName), created: false };
    } catch (err) {
      if (errorKind(err) !== 'NotFound') throw err;
    }
    return { lease: await this.cfg.api.createLease(this.withRenewal(fresh)), created: true };
  }

  /** A copy of `lease` with our holder, duration, a renewTime of now and the Node owner reference. */
  private withRenewal(lease: Lease): Lease {
    const { nodeName } = this.cfg;
    const uid = this.cfg.nodeUID();
    const metadata = { ...lease.metadata };
    if (uid && !ownedBy(lease, nodeName, uid)) {
      // Keep references to anything else; replace one to an earlier Node of this name.
      const others = (lease.metadata.ownerReferences ?? []).filter(
        (r) => !(r.kind === 'Node' && r.name === nodeName),
      );
      const owner: OwnerReference = { apiVersion: 'v1', kind: 'Node', name: nodeName, uid };
      metadata.ownerReferences = [...others, owner];
    }
    return {
      ...lease,
      metadata,
      spec: {
        ...lease.spec,
        holderIdentity: nodeName,
        leaseDurationSeconds: this.leaseDurationSeconds,
        renewTime: formatMicroTime(this.cfg.clock.now()),
      },
    };
  }

  private renewed(lease: Lease): void {
    this.latest = lease;
    this.failures = 0;
    this.lastRenewTime = this.cfg.clock.now();
    this.resolveReady();
  }
}

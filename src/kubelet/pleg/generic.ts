/**
 * The generic pod lifecycle event generator (kubelet: pkg/kubelet/pleg/generic.go, GenericPLEG): each
 * relist lists every pod on the runtime, diffs it against the previous listing, inspects the pods that
 * changed into the pod cache, and sends the resulting events to a bounded channel.
 *
 * No timers here: the shell calls `relist()` once a second and `healthy(now)` from its health check. The
 * runtime is reached only through the injected PodLister, time only through the injected clock.
 */
import { emptyPodStatus, type PodCache } from '../container/cache.js';
import type { PodUID, RuntimePodStatus } from '../container/types.js';
import { BoundedChannel } from '../../util/channel.js';
import type { Clock } from '../../util/clock.js';
import { KindError } from '../../util/errors.js';
import { computePodEvents, isSentEvent, type ListedContainer, type PodLifecycleEvent } from './events.js';

/** One pod as the runtime lists it (kubelet: kubecontainer.Pod): identity plus container/sandbox states. */
export interface RuntimePod {
  readonly uid: PodUID;
  readonly name: string;
  readonly namespace: string;
  readonly containers: readonly ListedContainer[];
  /** Sandboxes as container-like records: ready = running, not ready = exited. */
  readonly sandboxes: readonly ListedContainer[];
}

/**
 * The runtime as the PLEG sees it.
 * - `getPods` lists every pod, including exited containers and sandboxes (kubelet: GetPods(all=true)).
 *   Rejecting aborts the relist. Answering with the very array it gave the last time says that nothing
 *   changed: that relist then diffs nothing (unless a pod waits to be inspected again).
 * - `getPodStatus` inspects one pod (kubelet: GetPodStatus). Rejecting marks the pod for reinspection.
 * - `getPod` lists one pod the way `getPods` lists it, undefined when the runtime has nothing of it (kubelet:
 *   GetPod). Without it, `relistPod` picks the pod out of `getPods`.
 * No result is mutated by the PLEG.
 */
export interface PodLister {
  getPods(): Promise<readonly RuntimePod[]>;
  getPodStatus(uid: PodUID, name: string, namespace: string): Promise<RuntimePodStatus>;
  getPod?(uid: PodUID): Promise<RuntimePod | undefined>;
}

/** A predicate over a freshly inspected status; once it holds, the PLEG emits ConditionMet and forgets it. */
export type WatchCondition = (status: RuntimePodStatus) => boolean;

const UNCHANGED: RelistResult = Object.freeze({
  listed: true,
  eventsSent: 0,
  eventsDropped: 0,
  inspected: Object.freeze([]),
  inspectionFailed: Object.freeze([]),
});

/** Default capacity of the event channel (kubelet: plegChannelCapacity). */
export const DEFAULT_PLEG_CHANNEL_CAPACITY = 1000;
/** Default longest quiet time before the PLEG counts as unhealthy (kubelet: genericPlegRelistThreshold). */
export const DEFAULT_RELIST_THRESHOLD_MS = 3 * 60 * 1000;

export interface GenericPLEGConfig {
  lister: PodLister;
  cache: PodCache;
  clock: Pick<Clock, 'now'>;
  channelCapacity?: number;
  relistThresholdMs?: number;
}

/** What one relist did: either the listing failed (nothing else happened) or counts of what it sent. */
export type RelistResult =
  | { readonly listed: false; readonly error: unknown }
  | {
      readonly listed: true;
      readonly eventsSent: number;
      readonly eventsDropped: number;
      readonly inspected: readonly string[];
      readonly inspectionFailed: readonly string[];
    };

export type PLEGHealth = { readonly healthy: true } | { readonly healthy: false; readonly message: string };

/** `old` is the listing the last successful inspection saw; `current` is this relist's (absent = gone). */
interface PodRecord {
  old: RuntimePod | undefined;
  current: RuntimePod | undefined;
}

interface VersionedCondition {
  condition: WatchCondition;
  version: number;
}

/** What inspecting one pod gave; a pod that was not inspected counts as inspected fine. */
type Inspection =
  { readonly ok: true; readonly status?: RuntimePodStatus } | { readonly ok: false; readonly error: unknown };
const NOT_INSPECTED: Inspection = Object.freeze({ ok: true });

const NO_CONDITIONS: readonly (VersionedCondition & { key: string })[] = Object.freeze([]);

function isRuntimePod(p: unknown): p is RuntimePod {
  if (typeof p !== 'object' || p === null) return false;
  const r = p as Record<string, unknown>;
  return typeof r.uid === 'string' && Array.isArray(r.containers) && Array.isArray(r.sandboxes);
}

/** The answer of a healthy PLEG, shared: the sync loop asks before every input it handles. */
const HEALTHY: PLEGHealth = Object.freeze({ healthy: true });

/**
 * Invariants: a pod's record advances (`old = current`) only after a successful inspection, so a failed
 * one is retried with the same diff; the reinspection set holds exactly the pods whose inspection failed
 * in the last completed relist; a pod whose `updateCache` failed is inspected again by every relist until an
 * inspection succeeds, so an error cached during a runtime outage never outlives it; watch conditions exist
 * only for pods present in the last listing; relists never overlap (calls queue behind each other).
 */
export class GenericPLEG {
  /** Events for the sync loop. Full channel: the event is dropped and counted in `discardedEvents`. */
  readonly events: BoundedChannel<PodLifecycleEvent>;
  readonly relistThresholdMs: number;
  private readonly lister: PodLister;
  private readonly cache: PodCache;
  private readonly clock: Pick<Clock, 'now'>;
  private readonly records = new Map<string, PodRecord>();
  private podsToReinspect = new Set<string>();
  /** Pods whose last updateCache cached an error: the relist inspects them even without an event. */
  private readonly updateFailed = new Set<string>();
  private readonly watchConditions = new Map<string, Map<string, VersionedCondition>>();
  private relistTime: number | undefined;
  private lastListing: RuntimePod[] = [];
  /** The lister's answer the last full relist diffed, as it was given. */
  private lastPods: unknown;
  private discarded = 0;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(config: GenericPLEGConfig) {
    if (!config?.lister || !config.cache || typeof config.clock?.now !== 'function') {
      throw new KindError('InvalidArgument', 'GenericPLEG needs a lister, a cache and a clock');
    }
    const threshold = config.relistThresholdMs ?? DEFAULT_RELIST_THRESHOLD_MS;
    if (!Number.isFinite(threshold) || threshold <= 0) {
      throw new KindError('InvalidArgument', `relist threshold must be positive: ${threshold}`);
    }
    this.lister = config.lister;
    this.cache = config.cache;
    this.clock = config.clock;
    this.relistThresholdMs = threshold;
    this.events = new BoundedChannel(config.channelCapacity ?? DEFAULT_PLEG_CHANNEL_CAPACITY);
  }

  /** Epoch ms of the start of the last relist whose listing succeeded. */
  get lastRelistTime(): number | undefined {
    return this.relistTime;
  }

  /** Events dropped so far because the channel was full. */
  get discardedEvents(): number {
    return this.discarded;
  }

  /** Pods that will be inspected on the next relist because their last inspection failed. */
  get reinspectionSet(): ReadonlySet<string> {
    return this.podsToReinspect;
  }

  /** Unhealthy before the first successful relist and when the last one is older than the threshold. */
  healthy(now: number): PLEGHealth {
    if (this.relistTime === undefined) return { healthy: false, message: 'pleg has yet to be successful' };
    const elapsed = now - this.relistTime;
    if (elapsed > this.relistThresholdMs) {
      return {
        healthy: false,
        message: `pleg was last seen active ${elapsed}ms ago; threshold is ${this.relistThresholdMs}ms`,
      };
    }
    return HEALTHY;
  }

  /**
   * Registers (or replaces) the condition under `key` for a pod. Replacing bumps the version, so a check
   * that started before the replacement does not remove it. While a pod has conditions it is inspected on
   * every relist.
   */
  setPodWatchCondition(uid: string, key: string, condition: WatchCondition): void {
    if (typeof condition !== 'function')
      throw new KindError('InvalidArgument', 'watch condition is not a function');
    const conditions = this.watchConditions.get(uid) ?? new Map<string, VersionedCondition>();
    const existing = conditions.get(key);
    conditions.set(key, { condition, version: existing ? existing.version + 1 : 0 });
    this.watchConditions.set(uid, conditions);
  }

  /** The pod's registered condition keys with their versions. */
  podWatchConditions(uid: string): ReadonlyMap<string, number> {
    const m = this.watchConditions.get(uid);
    return new Map([...(m ?? [])].map(([k, v]) => [k, v.version]));
  }

  /**
   * The runtime's pods as the last successful relist listed them (kubelet: the runtime cache): what
   * housekeeping looks at for pods no worker knows, without listing the runtime again.
   */
  listedPods(): RuntimePod[] {
    return this.lastListing;
  }

  /**
   * Inspects one pod now and writes the result to the cache (kubelet: GenericPLEG.UpdateCache). A pod worker
   * calls it after its sync changed the runtime, so the status it reports shows what it just did. The next
   * relist still compares against its own previous listing and emits the change as an event (the worker's
   * follow-up sync then finds the cache already current). Resolves with what was cached; never rejects.
   */
  async updateCache(pod: { uid: PodUID; name: string; namespace: string }): Promise<{
    status: RuntimePodStatus;
    error: unknown;
  }> {
    const timestamp = this.clock.now();
    try {
      const got: unknown = await this.lister.getPodStatus(pod.uid, pod.name, pod.namespace);
      if (typeof got !== 'object' || got === null) {
        throw new KindError('InvalidArgument', 'runtime returned no pod status', { pod: pod.uid });
      }
      const status = this.keepPodIPs(pod.uid, got as RuntimePodStatus);
      this.cache.set(pod.uid, status, undefined, timestamp);
      this.updateFailed.delete(pod.uid);
      return { status, error: undefined };
    } catch (error) {
      const status = emptyPodStatus(pod.uid, pod.name, pod.namespace);
      this.cache.set(pod.uid, status, error, timestamp);
      this.updateFailed.add(pod.uid);
      return { status, error };
    }
  }

  /**
   * Relists one pod now (kubelet: GenericPLEG.relistPod under PLEGOnDemandRelist, which a pod worker requests
   * after a sync that changed the runtime without an error): lists the pod, diffs it against its record as
   * a full relist does, inspects it into the cache and sends its events to the channel at once, instead of at
   * the next relist; its record advances, so that relist does not send them again. The pod is always
   * inspected (the worker reports the status from it), but an inspection that finds no change sends nothing.
   * When the pod cannot be listed (a runtime error, or nothing of it left), it is only inspected, as
   * `updateCache` does, and its events wait for the next relist. Serialized with `relist()`. Never rejects.
   */
  relistPod(pod: { uid: PodUID; name: string; namespace: string }): Promise<{
    status: RuntimePodStatus;
    error: unknown;
    eventsSent: number;
  }> {
    const run = this.queue.then(() => this.relistPodOnce(pod));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async relistPodOnce(pod: { uid: PodUID; name: string; namespace: string }): Promise<{
    status: RuntimePodStatus;
    error: unknown;
    eventsSent: number;
  }> {
    let listed: RuntimePod | undefined;
    try {
      const got: unknown = this.lister.getPod
        ? await this.lister.getPod(pod.uid)
        : (await this.lister.getPods()).find((p) => p.uid === pod.uid);
      if (got !== undefined && !isRuntimePod(got)) {
        throw new KindError('InvalidArgument', 'runtime pod listing is malformed', { pod: pod.uid });
      }
      listed = got;
    } catch {
      listed = undefined;
    }
    if (!listed || listed.uid !== pod.uid) return { ...(await this.updateCache(pod)), eventsSent: 0 };
    const record = this.records.get(pod.uid) ?? { old: undefined, current: undefined };
    record.current = listed;
    this.records.set(pod.uid, record);
    const { inspection, sent } = await this.reconcile(pod.uid, record, true);
    if (!inspection.ok) {
      // The next relist inspects it again (kubelet: podsToReinspect).
      this.podsToReinspect.add(pod.uid);
      return {
        status: emptyPodStatus(pod.uid, pod.name, pod.namespace),
        error: inspection.error,
        eventsSent: 0,
      };
    }
    this.podsToReinspect.delete(pod.uid);
    if (inspection.status) return { status: inspection.status, error: undefined, eventsSent: sent };
    // Not reached: a listed pod is always inspected when forced.
    return { ...(await this.updateCache(pod)), eventsSent: sent };
  }

  /** Lists, diffs, inspects and sends (SEMANTICS §7.3). Calls are serialized. Never rejects. */
  relist(): Promise<RelistResult> {
    const run = this.queue.then(() => this.relistOnce());
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async relistOnce(): Promise<RelistResult> {
    const timestamp = this.clock.now();
    let pods: readonly RuntimePod[];
    try {
      const listed: unknown = await this.lister.getPods();
      if (listed === this.lastPods && this.settled()) {
        // The very listing the last relist diffed (a lister that keeps unchanged answers, getPods): nothing
        // changed, nothing waits to be inspected, so this relist would send nothing and inspect nothing.
        this.relistTime = timestamp;
        this.cache.updateTime(timestamp);
        return UNCHANGED;
      }
      if (!Array.isArray(listed) || !listed.every(isRuntimePod)) {
        throw new KindError('InvalidArgument', 'runtime pod listing is malformed');
      }
      pods = listed;
    } catch (error) {
      return { listed: false, error };
    }
    this.relistTime = timestamp;
    this.lastPods = pods;
    this.lastListing = [...pods];
    this.setCurrent(pods);
    for (const uid of [...this.watchConditions.keys()]) {
      if (!this.records.get(uid)?.current) this.watchConditions.delete(uid);
    }

    const needsReinspection = new Set<string>();
    const inspected: string[] = [];
    let eventsSent = 0;
    let eventsDropped = 0;
    for (const [uid, record] of [...this.records]) {
      const r = await this.reconcile(uid, record, this.podsToReinspect.has(uid));
      if (r.inspected) inspected.push(uid);
      if (!r.inspection.ok) needsReinspection.add(uid);
      eventsSent += r.sent;
      eventsDropped += r.dropped;
    }

    // A failed updateCache of a pod the runtime no longer lists: nothing of it is left to inspect.
    for (const uid of [...this.updateFailed]) {
      if (this.records.has(uid)) continue;
      this.cache.delete(uid);
      this.updateFailed.delete(uid);
    }
    this.cache.updateTime(timestamp);
    this.podsToReinspect = needsReinspection;
    return { listed: true, eventsSent, eventsDropped, inspected, inspectionFailed: [...needsReinspection] };
  }

  /**
   * Compares a pod's record (old and current listing) and, when it changed, is watched, waits for inspection
   * (`force`) or has an error cached, inspects it into the cache (or forgets a pod no longer listed),
   * advances the record and sends the events (kubelet: reconcilePodRecord). A failed inspection leaves the
   * record where it was, so the next relist finds the same change.
   */
  private async reconcile(
    uid: string,
    record: PodRecord,
    force: boolean,
  ): Promise<{ inspected: boolean; inspection: Inspection; sent: number; dropped: number }> {
    const events = computePodEvents(uid, record.old, record.current);
    const watched = this.watchConditions.get(uid);
    const conditions = watched ? [...watched].map(([key, v]) => ({ key, ...v })) : NO_CONDITIONS;
    const stale = this.updateFailed.has(uid);
    if (events.length === 0 && conditions.length === 0 && !force && !stale) {
      // No event means every container and sandbox has the same state in both listings, so the new one
      // diffs exactly like the old: keep one of them, not two listings per pod.
      if (record.current) record.old = record.current;
      record.current = undefined;
      return { inspected: false, inspection: NOT_INSPECTED, sent: 0, dropped: 0 };
    }

    const pod = record.current;
    let inspection: Inspection = NOT_INSPECTED;
    if (!pod) {
      this.cache.delete(uid);
      this.updateFailed.delete(uid);
    } else {
      const got = await this.inspect(pod);
      inspection = got;
      if (!got.ok) return { inspected: true, inspection, sent: 0, dropped: 0 };
      this.updateFailed.delete(uid);
      const status = got.status;
      const met = conditions.filter((c) => this.holds(c.condition, status));
      if (met.length > 0) {
        this.completeWatchConditions(uid, met);
        events.push({ podUID: uid, type: 'ConditionMet' });
      }
    }

    if (record.current) {
      record.old = record.current;
      record.current = undefined;
    } else {
      this.records.delete(uid);
    }

    let sent = 0;
    let dropped = 0;
    for (const e of events) {
      if (!isSentEvent(e.type)) continue;
      if (this.events.trySend(e)) sent++;
      else {
        dropped++;
        this.discarded++;
      }
    }
    return { inspected: pod !== undefined, inspection, sent, dropped };
  }

  /** No pod is watched, waits for reinspection or has a failed inspection cached. */
  private settled(): boolean {
    return this.watchConditions.size === 0 && this.podsToReinspect.size === 0 && this.updateFailed.size === 0;
  }

  private setCurrent(pods: readonly RuntimePod[]): void {
    for (const r of this.records.values()) r.current = undefined;
    for (const p of pods) {
      const r = this.records.get(p.uid);
      if (r) r.current = p;
      else this.records.set(p.uid, { old: undefined, current: p });
    }
  }

  /** Inspects one pod into the cache; a failed inspection caches its error. */
  private async inspect(
    pod: RuntimePod,
  ): Promise<{ ok: true; status: RuntimePodStatus } | { ok: false; error: unknown }> {
    const timestamp = this.clock.now();
    let status: RuntimePodStatus;
    try {
      const got: unknown = await this.lister.getPodStatus(pod.uid, pod.name, pod.namespace);
      if (typeof got !== 'object' || got === null) {
        throw new KindError('InvalidArgument', 'runtime returned no pod status', { pod: pod.uid });
      }
      status = got as RuntimePodStatus;
    } catch (error) {
      this.cache.set(pod.uid, emptyPodStatus(pod.uid, pod.name, pod.namespace), error, timestamp);
      return { ok: false, error };
    }
    const withIPs = this.keepPodIPs(pod.uid, status);
    this.cache.set(pod.uid, withIPs, undefined, timestamp);
    return { ok: true, status: withIPs };
  }

  /**
   * A torn-down pod keeps its last known IPs: when the new status has none and no sandbox is ready, the
   * previously cached (error-free) IPs are kept, because the API expects a finished pod's IP to remain.
   */
  private keepPodIPs(uid: string, status: RuntimePodStatus): RuntimePodStatus {
    if ((status.ips ?? []).length > 0) return status;
    const old = this.cache.entry(uid);
    if (!old || old.error !== undefined || (old.status.ips ?? []).length === 0) return status;
    if ((status.sandboxes ?? []).some((s) => s.state === 'ready')) return status;
    return { ...status, ips: [...old.status.ips] };
  }

  private holds(condition: WatchCondition, status: RuntimePodStatus): boolean {
    try {
      return condition(status) === true;
    } catch {
      return false;
    }
  }

  /** Removes the conditions that held, unless they were re-registered (version bumped) meanwhile. */
  private completeWatchConditions(uid: string, met: readonly { key: string; version: number }[]): void {
    const conditions = this.watchConditions.get(uid);
    if (!conditions) return;
    for (const m of met) if (conditions.get(m.key)?.version === m.version) conditions.delete(m.key);
    if (conditions.size === 0) this.watchConditions.delete(uid);
  }
}

/**
 * The probe results cache (kubelet: pkg/kubelet/prober/results/results_manager.go). One instance per probe
 * type: the kubelet keeps a liveness, a readiness and a startup manager, and so do we.
 *
 * Workers write; computePodActions, the prober manager's UpdatePodStatus and the sync loop read. Reads see
 * the newest value at once; changes are also pushed to subscribers so the sync loop can react to them.
 */
import type { PodUID } from '../container/types.js';
import { KindError } from '../../util/errors.js';
import type { ProbeResult, ProbeResultsReader, ProbeType } from './types.js';

/** One change of a cached result, as pushed to subscribers (kubelet: results.Update). */
export interface ProbeResultUpdate {
  /** The container ID exactly as the writer passed it (workers pass the API form `<type>://<id>`). */
  containerID: string;
  result: ProbeResult;
  podUID: PodUID;
  probeType: ProbeType;
}

export type ProbeResultListener = (update: ProbeResultUpdate) => void;

/**
 * The cache key of a container ID. The API form `<type>://<id>` and the bare runtime ID name the same
 * container (one runtime per node), so both are reduced to the bare ID; `get` then answers for either form.
 * Returns '' for an empty or malformed ID.
 */
export function containerIDKey(id: string): string {
  const sep = id.indexOf('://');
  return sep >= 0 ? id.slice(sep + 3) : id;
}

/**
 * Results cache for one probe type.
 *
 * Contract:
 * - `set` stores the result and pushes an update only when the container ID was not present or the value
 *   changed; setting the same value again is silent.
 * - `remove` forgets the entry and never pushes an update.
 * - Listeners are called synchronously, in subscription order, after the value is stored. A listener that
 *   throws does not prevent the store nor the other listeners from running.
 */
export class ResultsManager implements ProbeResultsReader {
  readonly probeType: ProbeType;
  private readonly cache = new Map<string, ProbeResult>();
  private readonly listeners = new Set<ProbeResultListener>();
  private changes = 0;

  constructor(probeType: ProbeType) {
    if (probeType !== 'liveness' && probeType !== 'readiness' && probeType !== 'startup') {
      throw new KindError('InvalidArgument', `unknown probe type: ${String(probeType)}`);
    }
    this.probeType = probeType;
  }

  /** The cached result for a container, or undefined when none was set (or it was removed). */
  get(id: string): ProbeResult | undefined {
    if (typeof id !== 'string') return undefined;
    const key = containerIDKey(id);
    return key === '' ? undefined : this.cache.get(key);
  }

  /** Stores `result` for the container; pushes an update if it is new or different. */
  set(id: string, result: ProbeResult, podUID: PodUID): void {
    const key = typeof id === 'string' ? containerIDKey(id) : '';
    if (key === '') throw new KindError('InvalidArgument', 'probe result without a container ID', { podUID });
    if (result !== 'success' && result !== 'failure' && result !== 'unknown') {
      throw new KindError('InvalidArgument', `unknown probe result: ${String(result)}`, { podUID, id });
    }
    const previous = this.cache.get(key);
    // Map.set keeps an existing entry's key object, which may be a slice of an old copy of the ID string;
    // re-inserting keys the entry by the caller's current string, so the old copy can be collected.
    if (previous !== undefined) this.cache.delete(key);
    this.cache.set(key, result);
    if (previous === result) return;
    this.changes++;
    const update: ProbeResultUpdate = {
      containerID: id,
      result,
      podUID,
      probeType: this.probeType,
    };
    for (const listener of [...this.listeners]) {
      try {
        listener(update);
      } catch {
        // A faulty listener must not break the writer (a probe worker) or the other listeners.
      }
    }
  }

  /** Forgets the container's result. Silent: no update is pushed. */
  remove(id: string): void {
    if (typeof id !== 'string') return;
    if (this.cache.delete(containerIDKey(id))) this.changes++;
  }

  /** Counts the changes of what `get` answers: a new or different result set, a result removed. */
  get revision(): number {
    return this.changes;
  }

  /** Registers a listener for updates; the returned function unregisters it. */
  subscribe(listener: ProbeResultListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Number of cached entries (for tests and metrics). */
  get size(): number {
    return this.cache.size;
  }
}

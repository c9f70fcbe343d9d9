/**
 * Probe vocabulary shared by the prober, computePodActions and the status generator.
 */
import type { ContainerID } from '../container/types.js';

export type ProbeType = 'liveness' | 'readiness' | 'startup';
export type ProbeResult = 'success' | 'failure' | 'unknown';

/** Read side of a probe results cache (kubelet: results.Manager.Get). Undefined = no result yet. */
export interface ProbeResultsReader {
  get(id: ContainerID | string): ProbeResult | undefined;
  /** Counts the changes of what `get` answers (a result set to another value, or removed); optional. */
  readonly revision?: number;
}

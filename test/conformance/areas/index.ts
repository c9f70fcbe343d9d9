/** Area name (the `area` field of a case) -> its interpreter. */
import type { AreaInterpreter } from '../types.js';
import { interpretBackoff } from './backoff.js';
import { interpretComputePodActions } from './computePodActions.js';
import { interpretConditions } from './conditions.js';
import { interpretPhase } from './phase.js';
import { interpretPleg } from './pleg.js';
import { interpretProber } from './prober.js';
import { interpretStatusManager } from './statusManager.js';

export const interpreters: Record<string, AreaInterpreter> = {
  phase: interpretPhase,
  conditions: interpretConditions,
  computePodActions: interpretComputePodActions,
  statusManager: interpretStatusManager,
  prober: interpretProber,
  pleg: interpretPleg,
  backoff: interpretBackoff,
};

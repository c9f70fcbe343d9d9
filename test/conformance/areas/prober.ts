/**
 * The prober area: `worker.doProbe` step cases and `manager.UpdatePodStatus` cases, told apart by
 * `given.function`. Any other function is Uninterpretable.
 */
import { Uninterpretable, type AreaInterpreter } from '../types.js';
import { interpretDoProbe } from './prober-doprobe.js';
import { interpretUpdatePodStatus } from './prober-manager.js';
import { functionName } from './prober-read.js';

export const interpretProber: AreaInterpreter = (c) => {
  const fn = functionName(c.given.function, 'given.function');
  switch (fn) {
    case 'worker.doProbe':
      return interpretDoProbe(c);
    case 'manager.UpdatePodStatus':
      return interpretUpdatePodStatus(c);
    default:
      throw new Uninterpretable(`prober: unknown function '${fn}'`);
  }
};

/**
 * The PLEG area: `generateEvents(old, new)` tables, and `GenericPLEG.Relist` cases given either as
 * `relists` or as `steps`. Anything else is Uninterpretable.
 */
import { Uninterpretable, type AreaInterpreter } from '../types.js';
import { functionName } from './prober-read.js';
import { interpretRelists, interpretSteps } from './pleg-relist.js';
import { interpretEventTable } from './pleg-table.js';

export const interpretPleg: AreaInterpreter = (c) => {
  const fn = c.given.function === undefined ? undefined : functionName(c.given.function, 'given.function');
  if (fn === 'generateEvents') return interpretEventTable(c);
  if (fn !== undefined && fn !== 'GenericPLEG.Relist')
    throw new Uninterpretable(`pleg: unknown function '${fn}'`);
  const hasRelists = c.given.relists !== undefined;
  const hasSteps = c.given.steps !== undefined;
  if (hasRelists && !hasSteps) return interpretRelists(c);
  if (hasSteps && !hasRelists) return interpretSteps(c);
  throw new Uninterpretable('pleg: expected exactly one of given.relists and given.steps');
};

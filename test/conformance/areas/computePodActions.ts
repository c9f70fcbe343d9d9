import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the computePodActions interpreter lands; every case of the area fails by name meanwhile.
export const interpretComputePodActions: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area computePodActions has no interpreter yet (case ${c.id})`);
};

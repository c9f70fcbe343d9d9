import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the prober interpreter lands; every case of the area fails by name meanwhile.
export const interpretProber: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area prober has no interpreter yet (case ${c.id})`);
};

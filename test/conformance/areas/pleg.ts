import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the pleg interpreter lands; every case of the area fails by name meanwhile.
export const interpretPleg: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area pleg has no interpreter yet (case ${c.id})`);
};

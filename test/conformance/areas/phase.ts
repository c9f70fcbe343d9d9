import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the phase interpreter lands; every case of the area fails by name meanwhile.
export const interpretPhase: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area phase has no interpreter yet (case ${c.id})`);
};

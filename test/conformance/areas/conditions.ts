import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the conditions interpreter lands; every case of the area fails by name meanwhile.
export const interpretConditions: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area conditions has no interpreter yet (case ${c.id})`);
};

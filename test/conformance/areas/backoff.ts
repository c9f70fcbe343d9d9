import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the backoff interpreter lands; every case of the area fails by name meanwhile.
export const interpretBackoff: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area backoff has no interpreter yet (case ${c.id})`);
};

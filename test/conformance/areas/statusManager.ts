import { Uninterpretable, type AreaInterpreter } from '../types.js';

// Placeholder until the statusManager interpreter lands; every case of the area fails by name meanwhile.
export const interpretStatusManager: AreaInterpreter = (c) => {
  throw new Uninterpretable(`area statusManager has no interpreter yet (case ${c.id})`);
};

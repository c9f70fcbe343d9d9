/**
 * Sandbox and container IDs of the simulated runtime: 64 hex digits, as containerd's, different for every
 * record a runtime makes and, through the seed (the node's name and a salt of the process), from every other
 * runtime's. The seed is hashed once; each ID mixes a counter into its eight words with a bijective 32-bit
 * finaliser (MurmurHash3's), so two counters below 2^32 never give one ID. A SHA-256 per ID (a hash object,
 * its digest, its hex) was 0.8 % of the operator's CPU in a 10,000-pod create burst; an ID is a name, not a
 * secret, and needs none of it.
 */
import { createHash } from 'node:crypto';

/** What an ID names: a runtime keeps a source per kind (an adopted container's ID is never a sandbox's). */
export type IdKind = 'sandbox' | 'container';

/** MurmurHash3's 32-bit finaliser: a bijection of the 32-bit integers that spreads every input bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** An odd constant per word (the golden ratio's), so the eight words of one ID differ. */
const WORD_STEP = 0x9e3779b9;

export class IdSource {
  private readonly words: Uint32Array;
  /** The ID's bytes, written anew for each ID and read out as hex. */
  private readonly scratch = Buffer.alloc(32);

  constructor(seed: string) {
    const digest = createHash('sha256').update(seed).digest();
    this.words = new Uint32Array(8);
    for (let i = 0; i < 8; i++) this.words[i] = digest.readUInt32BE(i * 4);
  }

  /** The ID of counter value `n` (0 <= n < 2^32). */
  id(n: number): string {
    const out = this.scratch;
    for (let i = 0; i < 8; i++) {
      out.writeUInt32BE(fmix32((this.words[i]! ^ fmix32((n + Math.imul(i, WORD_STEP)) >>> 0)) >>> 0), i * 4);
    }
    return out.toString('hex');
  }
}

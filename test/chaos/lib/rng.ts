/**
 * The seeded random source of the hostile-input scenario (mulberry32: small, fast, good enough to pick
 * mutations); the same seed gives the same run.
 */
export class Rng {
  private s: number;

  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }

  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** `n` characters from `alphabet`. */
  text(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.next() * alphabet.length)];
    return s;
  }

  /** Text with the characters that break naive code: emoji, right-to-left, zero-width, combining, NUL. */
  unicode(n: number): string {
    const parts = [
      '🦄',
      '💥',
      '\u202e',
      '\u200b',
      '\u0301',
      'Ω',
      '漢字',
      'ｆｕｌｌ',
      '\u0000',
      '"',
      '\\',
      '\n',
      'a',
      ' ',
    ];
    let s = '';
    while (s.length < n) s += this.pick(parts);
    return s;
  }
}

import { expect } from 'chai';
import { IdSource } from '../../../../src/runtime/sim/ids.js';

describe('sim runtime: IDs', () => {
  it('gives 64 hex digits, a different ID for every counter, the same for the same seed and counter', () => {
    const a = new IdSource('node-a/salt');
    const seen = new Set<string>();
    const prefixes = new Set<string>();
    for (let n = 0; n < 20_000; n++) {
      const id = a.id(n);
      expect(id).to.match(/^[0-9a-f]{64}$/);
      seen.add(id);
      // What `crictl ps` and many logs show of an ID.
      prefixes.add(id.slice(0, 13));
    }
    expect(seen.size).to.equal(20_000);
    expect(prefixes.size, 'short forms differ too').to.equal(20_000);
    expect(new IdSource('node-a/salt').id(7)).to.equal(a.id(7));
  });

  it('differs between seeds at every counter, in the whole ID and in its short form', () => {
    const a = new IdSource('node-a/salt');
    const b = new IdSource('node-b/salt');
    const all = new Set<string>();
    for (let n = 0; n < 5_000; n++) {
      expect(a.id(n).slice(0, 13)).to.not.equal(b.id(n).slice(0, 13));
      all.add(a.id(n)).add(b.id(n));
    }
    expect(all.size).to.equal(10_000);
    // Counters near the top of their range still give distinct IDs.
    expect(a.id(0xffffffff)).to.not.equal(a.id(0xfffffffe));
  });
});

import { expect } from 'chai';
import { exact } from '../../../src/util/exact.js';

describe('exact', () => {
  it('gives a copy with the same elements in the same order, and a fresh empty array for an empty one', () => {
    const grown: object[] = [];
    const a = { a: 1 };
    const b = { b: 2 };
    grown.push(a, b);
    const out = exact(grown);
    expect(out).to.not.equal(grown);
    expect(out).to.have.length(2);
    expect(out[0]).to.equal(a);
    expect(out[1]).to.equal(b);
    const empty: number[] = [];
    const copy = exact(empty);
    expect(copy).to.have.length(0);
    expect(copy).to.not.equal(empty);
  });
});

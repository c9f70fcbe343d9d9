import { expect } from 'chai';
import { cloneData } from '../../../src/util/clone.js';

describe('cloneData', () => {
  it('copies plain data deeply: equal, independent, unfrozen, undefined fields kept', () => {
    const input = Object.freeze({
      phase: 'Running',
      n: 3,
      ok: true,
      none: null,
      gone: undefined,
      conditions: Object.freeze([Object.freeze({ type: 'Ready', status: 'True' })]),
      nested: { deeper: { list: [1, 'two', [3]] } },
    });
    const out = cloneData(input);
    expect(out).to.deep.equal(structuredClone(input));
    expect(Object.keys(out)).to.include('gone');
    expect(out).to.not.equal(input);
    expect(out.conditions).to.not.equal(input.conditions);
    expect(out.conditions[0]).to.not.equal(input.conditions[0]);
    expect(out.nested.deeper.list[2]).to.not.equal(input.nested.deeper.list[2]);
    expect(Object.isFrozen(out) || Object.isFrozen(out.conditions[0])).to.equal(false);
    (out.conditions[0] as { status: string }).status = 'False';
    expect(input.conditions[0]!.status).to.equal('True');
  });

  it('returns primitives as they are', () => {
    for (const v of ['s', 0, false, null, undefined]) expect(cloneData(v)).to.equal(v);
  });
});

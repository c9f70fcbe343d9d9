import { expect } from 'chai';
import { aggregateMessage, failure, isFetchError } from '../../../../src/kubelet/volume/payload.js';

describe('payload results', () => {
  it('aggregate messages as utilerrors.NewAggregate prints them', () => {
    expect(aggregateMessage([])).to.equal('');
    expect(aggregateMessage(['one'])).to.equal('one');
    expect(aggregateMessage(['same', 'same'])).to.equal('same');
    expect(aggregateMessage(['a', 'b', 'a'])).to.equal('[a, b]');
  });

  it('a failure keeps the distinct errors in order', () => {
    expect(failure(['x', 'y', 'x'])).to.deep.equal({ ok: false, message: '[x, y]', errors: ['x', 'y'] });
  });

  it('tells a fetch error from an object', () => {
    expect(isFetchError({ error: 'boom' })).to.equal(true);
    expect(isFetchError({ data: { error: 'x' } })).to.equal(false);
    expect(isFetchError(undefined)).to.equal(false);
  });
});

import { expect } from 'chai';
import { formatRFC3339, formatRFC3339Optional, parseRFC3339 } from '../../../src/util/rfc3339.js';
import { isInvalidArgument } from '../../../src/util/errors.js';
import { truncateTime } from '../../../src/kubelet/status/normalize.js';

describe('rfc3339', () => {
  it('formats whole seconds in UTC, truncating sub-second parts (also before 1970)', () => {
    expect(formatRFC3339(0)).to.equal('1970-01-01T00:00:00Z');
    expect(formatRFC3339(1999)).to.equal('1970-01-01T00:00:01Z');
    expect(formatRFC3339(-1)).to.equal('1969-12-31T23:59:59Z');
  });
  it('rejects non-finite times, or leaves them out in the optional form', () => {
    expect(() => formatRFC3339(Number.NaN))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    expect(() => formatRFC3339(1e20))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    expect(formatRFC3339Optional(undefined)).to.equal(undefined);
    expect(formatRFC3339Optional(Number.POSITIVE_INFINITY)).to.equal(undefined);
  });
  it('parses back, and returns undefined for junk', () => {
    expect(parseRFC3339('1970-01-01T00:00:01Z')).to.equal(1000);
    expect(parseRFC3339('yesterday')).to.equal(undefined);
    expect(parseRFC3339(undefined)).to.equal(undefined);
  });

  it('formats alternating seconds right (the last-second cache never leaks across seconds)', () => {
    const t = Date.UTC(2026, 0, 1, 0, 0, 5);
    for (let i = 0; i < 3; i++) {
      expect(formatRFC3339(t + 999)).to.equal('2026-01-01T00:00:05Z');
      expect(formatRFC3339(t + 1000)).to.equal('2026-01-01T00:00:06Z');
      expect(formatRFC3339(t - 1)).to.equal('2026-01-01T00:00:04Z');
    }
  });

  it('truncateTime gives the same answer from its memo as the first time, odd inputs included', () => {
    for (const s of [
      '2026-01-01T00:00:05.123Z',
      '2026-02-30T00:00:00Z',
      '2026-01-01T01:00:00+01:00',
      'junk',
    ]) {
      const first = truncateTime(s);
      expect(truncateTime(s)).to.equal(first);
    }
    expect(truncateTime('2026-01-01T00:00:05.123Z')).to.equal('2026-01-01T00:00:05Z');
    expect(truncateTime('2026-01-01T01:00:00+01:00')).to.equal('2026-01-01T00:00:00Z');
    expect(truncateTime('junk')).to.equal('junk');
    expect(truncateTime('')).to.equal('');
  });
});

import { expect } from 'chai';
import { errorKind } from '../../../src/util/errors.js';
import {
  parseQuantityNano,
  quantityMilliValue,
  quantityValue,
  formatBinaryQuantity,
  formatMilliQuantity,
} from '../../../src/util/quantity.js';
import { catchErr } from '../../support/throws.js';

describe('util/quantity', () => {
  it('prints milli-cpu and byte quantities as apimachinery canonicalizes them', () => {
    expect([0, 1, 500, 1000, 1500, 2000].map(formatMilliQuantity)).to.deep.equal([
      '0',
      '1m',
      '500m',
      '1',
      '1500m',
      '2',
    ]);
    expect([0, 1000, 1024, 1536, 3670016, 67108864, 1e9, 1 << 30].map(formatBinaryQuantity)).to.deep.equal([
      '0',
      '1000',
      '1Ki',
      '1536',
      '3584Ki',
      '64Mi',
      '1000000000',
      '1Gi',
    ]);
    expect(() => formatMilliQuantity(0.5)).to.throw(/not an integer/);
  });

  it('reads cpu quantities as millicores, rounding up', () => {
    const cases: [string | number, number][] = [
      ['100m', 100],
      ['1', 1000],
      ['1.5', 1500],
      ['0.1', 100],
      ['2', 2000],
      ['250m', 250],
      ['1u', 1], // 0.000001 cpu rounds up to 1m
      ['0', 0],
      [0.5, 500],
      [3, 3000],
      ['1e3', 1_000_000],
      ['5e-3', 5],
    ];
    for (const [q, want] of cases) expect(quantityMilliValue(q), String(q)).to.equal(want);
  });

  it('reads memory quantities as bytes with binary and decimal suffixes', () => {
    const cases: [string | number, number][] = [
      ['128974848', 128974848],
      ['129e6', 129_000_000],
      ['129M', 129_000_000],
      ['123Mi', 123 * 1024 * 1024],
      ['1k', 1000],
      ['1Ki', 1024],
      ['64Mi', 67108864],
      ['1G', 1e9],
      ['1Gi', 1024 ** 3],
      ['2T', 2e12],
      ['1Ti', 1024 ** 4],
      ['1.5Gi', 1.5 * 1024 ** 3],
      ['1P', 1e15],
      ['1Pi', 1024 ** 5],
      ['.5Ki', 512],
      ['+1Mi', 1024 * 1024],
    ];
    for (const [q, want] of cases) expect(quantityValue(q), String(q)).to.equal(want);
  });

  it('tells the exa suffix E from a decimal exponent E<n>', () => {
    expect(quantityValue('1E3')).to.equal(1000);
    expect(quantityValue('1e+3')).to.equal(1000);
    expect(quantityValue('2E-0')).to.equal(2);
    expect(quantityMilliValue('1.5e-3')).to.equal(2); // 0.0015 cpu = 1.5m, rounded up
    expect(parseQuantityNano('1E')).to.equal(10n ** 27n);
    expect(parseQuantityNano('3E')).to.equal(3n * 10n ** 27n);
  });

  it('keeps E and Ei exact in nano-units (beyond safe integers)', () => {
    expect(parseQuantityNano('1E')).to.equal(10n ** 27n);
    expect(parseQuantityNano('1Ei')).to.equal(1024n ** 6n * 10n ** 9n);
    expect(parseQuantityNano('2Pi')).to.equal(2n * 1024n ** 5n * 10n ** 9n);
  });

  it('refuses values that do not fit a safe integer instead of rounding them', () => {
    expect(errorKind(catchErr(() => quantityValue('1Ei')))).to.equal('InvalidArgument');
    expect(errorKind(catchErr(() => quantityValue('1E')))).to.equal('InvalidArgument');
  });

  it('rounds fractional units up, as apimachinery Value() does', () => {
    expect(quantityValue('1500m')).to.equal(2);
    expect(quantityValue('100m')).to.equal(1);
    expect(quantityValue('0.5Ki')).to.equal(512);
    expect(quantityMilliValue('1n')).to.equal(1);
  });

  it('rejects malformed quantities with InvalidArgument', () => {
    for (const q of ['', 'abc', '1.2.3', '10 Mi', '1mi', '1KiB', 'Mi', '--1', '1e', 'NaN']) {
      expect(errorKind(catchErr(() => quantityValue(q))), q).to.equal('InvalidArgument');
    }
    expect(errorKind(catchErr(() => quantityMilliValue(Number.NaN)))).to.equal('InvalidArgument');
  });

  it('handles negative values (rounding towards +infinity)', () => {
    expect(quantityValue('-1Ki')).to.equal(-1024);
    expect(quantityMilliValue('-100m')).to.equal(-100);
  });
});

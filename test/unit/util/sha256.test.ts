import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { sha256Hex } from '../../../src/util/sha256.js';

describe('util/sha256', () => {
  const inputs = [
    '',
    'abc',
    'vol-1hostpath.csi.k8s.ionode-a',
    // Lengths around the one- and two-block boundaries of the padding.
    'x'.repeat(55),
    'x'.repeat(56),
    'x'.repeat(63),
    'x'.repeat(64),
    'x'.repeat(119),
    'x'.repeat(1000),
    'ünïcødé ✓ 卷',
  ];
  for (const s of inputs) {
    it(`matches node:crypto for ${JSON.stringify(s.slice(0, 20))} (${s.length} chars)`, () => {
      expect(sha256Hex(s)).to.equal(createHash('sha256').update(s, 'utf8').digest('hex'));
    });
  }

  it('is the FIPS 180-4 digest of "abc"', () => {
    expect(sha256Hex('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

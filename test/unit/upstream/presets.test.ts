import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../support/controlplane.js';

/** A preset file's specs: one full text a line, `#` comments and blank lines ignored (as run.ts reads it). */
function presetSpecs(file: string): string[] {
  return readFileSync(path.join(REPO_ROOT, 'test/upstream', file), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

describe('upstream presets', () => {
  describe('plugins.txt (issue #59: DRA and CSI mock specs)', () => {
    const specs = presetSpecs('plugins.txt');

    it('names only [sig-node] [DRA] and [sig-storage] CSI Mock specs, each once', () => {
      expect(specs.length).to.be.greaterThan(100);
      expect(new Set(specs).size).to.equal(specs.length);
      const strays = specs.filter((s) => !/^\[sig-node\] \[DRA\] |^\[sig-storage\] CSI Mock /.test(s));
      expect(strays).to.deep.equal([]);
      expect(specs.some((s) => s.startsWith('[sig-storage] CSI Mock '))).to.equal(true);
      expect(specs.some((s) => s.startsWith('[sig-node] [DRA] '))).to.equal(true);
    });

    it('holds no Serial, Slow, Disruptive, Flaky, Alpha or off-by-default spec', () => {
      const refused = /\[(Serial|Slow|Disruptive|Flaky|Alpha|Feature:OffByDefault)\]/;
      expect(specs.filter((s) => refused.test(s))).to.deep.equal([]);
    });

    it('holds no feature label but DynamicResourceAllocation (SELinux hosts, snapshots are not ours)', () => {
      const features = specs.flatMap((s) => [...s.matchAll(/\[Feature:([^\]]+)\]/g)].map((m) => m[1]));
      expect([...new Set(features)]).to.deep.equal(['DynamicResourceAllocation']);
    });
  });
});

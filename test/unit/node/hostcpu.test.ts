import { expect } from 'chai';
import { parseCpuList } from '../../../src/node/hostcpu.js';

describe('hostcpu: the kernel cpu list of /sys/devices/system/cpu/possible', () => {
  it('reads single cpus and ranges; anything else does not parse', () => {
    const cases: [string, number[] | undefined][] = [
      ['0\n', [0]],
      ['0-3', [0, 1, 2, 3]],
      ['0-1,4,6-7\n', [0, 1, 4, 6, 7]],
      ['', undefined],
      ['3-1', undefined],
      ['0-x', undefined],
    ];
    for (const [text, want] of cases) expect(parseCpuList(text), JSON.stringify(text)).to.deep.equal(want);
  });
});

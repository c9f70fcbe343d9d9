// The eviction admit handler (src/kubelet/eviction/admit.ts): who may start on a node under pressure.
import { expect } from 'chai';
import type { Pod, Toleration } from '../../../../src/api/core.js';
import { admitUnderPressure } from '../../../../src/kubelet/eviction/admit.js';
import type { PressureCondition } from '../../../../src/kubelet/eviction/signals.js';
import { ctr, pod } from './fixtures.js';

const besteffort = (tolerations?: Toleration[]): Pod =>
  pod('be', [ctr('c')], tolerations ? { tolerations } : {});
const burstable = pod('bu', [ctr('c', { memory: '100Mi' })]);
const critical = pod('cr', [ctr('c')], { priority: 2_000_000_000 });

const refused = (conditions: string) => ({
  admit: false,
  reason: 'Evicted',
  message: `The node had condition: ${conditions}. `,
});

describe('eviction admission', () => {
  const cases: [string, Pod, PressureCondition[], ReturnType<typeof admitUnderPressure>][] = [
    ['no pressure: BestEffort in', besteffort(), [], { admit: true }],
    ['memory pressure: Burstable in', burstable, ['MemoryPressure'], { admit: true }],
    ['memory pressure: BestEffort out', besteffort(), ['MemoryPressure'], refused('[MemoryPressure]')],
    [
      'memory pressure: BestEffort tolerating the taint in',
      besteffort([{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }]),
      ['MemoryPressure'],
      { admit: true },
    ],
    [
      'memory pressure: BestEffort tolerating everything in',
      besteffort([{ operator: 'Exists' }]),
      ['MemoryPressure'],
      { admit: true },
    ],
    [
      'memory pressure: a toleration for NoExecute only does not count',
      besteffort([{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoExecute' }]),
      ['MemoryPressure'],
      refused('[MemoryPressure]'),
    ],
    [
      'memory pressure: Equal with a value does not match the valueless taint',
      besteffort([{ key: 'node.kubernetes.io/memory-pressure', operator: 'Equal', value: 'x' }]),
      ['MemoryPressure'],
      refused('[MemoryPressure]'),
    ],
    [
      'memory pressure: Equal without value matches',
      besteffort([{ key: 'node.kubernetes.io/memory-pressure' }]),
      ['MemoryPressure'],
      { admit: true },
    ],
    ['disk pressure: Burstable out', burstable, ['DiskPressure'], refused('[DiskPressure]')],
    ['PID pressure: Burstable out', burstable, ['PIDPressure'], refused('[PIDPressure]')],
    [
      'memory and disk pressure: Burstable out, both named',
      burstable,
      ['MemoryPressure', 'DiskPressure'],
      refused('[MemoryPressure DiskPressure]'),
    ],
    ['disk pressure: critical in', critical, ['DiskPressure'], { admit: true }],
    ['memory pressure: a BestEffort critical pod in', critical, ['MemoryPressure'], { admit: true }],
  ];
  for (const [name, p, conditions, want] of cases) {
    it(name, () => {
      expect(admitUnderPressure(p, conditions)).to.deep.equal(want);
    });
  }
});

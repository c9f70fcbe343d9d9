// HugepageAwareEviction (beta and on in v1.37): the node's memory.available in the Summary, and so in the
// eviction manager, is capacity minus working set less the Node's huge page capacity (kubelet summary.go
// adjustForHugePages), floored at 0. This machine has no huge pages, so the numbers here are declared.
import { expect } from 'chai';
import { makeSignalObservations } from '../../../../src/kubelet/eviction/observations.js';
import { thresholdsMet } from '../../../../src/kubelet/eviction/manager.js';
import { parseThresholdStatement, type Threshold } from '../../../../src/kubelet/eviction/thresholds.js';
import {
  SummaryBuilder,
  adjustForHugePages,
  hugePageCapacityBytes,
} from '../../../../src/kubelet/stats/summary.js';
import type { MemoryStats } from '../../../../src/kubelet/stats/types.js';

const Gi = 1024 ** 3;
const Mi = 1024 ** 2;
const T = Date.UTC(2026, 11, 6, 12, 0, 0);

describe('HugepageAwareEviction', () => {
  describe("the Node's huge page capacity", () => {
    const table: [string, Record<string, string | number> | undefined, number][] = [
      ['no capacity', undefined, 0],
      [
        'no huge pages (this machine, and every VirtualNode today)',
        { cpu: '4', memory: '16Gi', pods: '110' },
        0,
      ],
      ['hugepages-2Mi: 512 pages', { memory: '16Gi', 'hugepages-2Mi': '1Gi' }, Gi],
      ['both sizes add up', { 'hugepages-2Mi': '512Mi', 'hugepages-1Gi': '2Gi' }, 2 * Gi + 512 * Mi],
      ['a size with none configured', { 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' }, 0],
      ['an integer quantity', { 'hugepages-2Mi': 4 * Mi }, 4 * Mi],
      ['memory itself is not a huge page', { memory: '16Gi', 'example.com/hugepages-2Mi': '1Gi' }, 0],
      ['an unparsable value counts as none', { 'hugepages-2Mi': 'lots', 'hugepages-1Gi': '1Gi' }, Gi],
    ];
    for (const [what, capacity, want] of table)
      it(what, () => expect(hugePageCapacityBytes(capacity)).to.equal(want));
  });

  describe('adjustForHugePages', () => {
    const mem = (availableBytes?: number): MemoryStats => ({
      time: T,
      workingSetBytes: 3 * Gi,
      usageBytes: 3 * Gi,
      ...(availableBytes === undefined ? {} : { availableBytes }),
    });
    const table: [string, number | undefined, number, number | undefined][] = [
      ['no huge pages: unchanged', 13 * Gi, 0, 13 * Gi],
      ['available less the huge pages', 13 * Gi, 4 * Gi, 9 * Gi],
      ['huge pages as large as available: 0', 4 * Gi, 4 * Gi, 0],
      ['more huge pages than available: 0, not negative', 2 * Gi, 4 * Gi, 0],
      ['no available figure: unchanged', undefined, 4 * Gi, undefined],
    ];
    for (const [what, available, huge, want] of table) {
      it(what, () => {
        const out = adjustForHugePages(mem(available), huge);
        expect(out.availableBytes).to.equal(want);
        expect(out.workingSetBytes).to.equal(3 * Gi);
      });
    }
    it('does not change its input', () => {
      const m = mem(13 * Gi);
      adjustForHugePages(m, Gi);
      expect(m.availableBytes).to.equal(13 * Gi);
    });
  });

  describe('Summary and eviction on a 16Gi node with 1Gi working set', () => {
    const summaryWith = (hugePageCapacityBytes: number | undefined) =>
      new SummaryBuilder().build({
        nodeName: 'n1',
        nodeStartTimeMs: T - 60_000,
        nowMs: T,
        memoryCapacityBytes: 16 * Gi,
        ...(hugePageCapacityBytes === undefined ? {} : { hugePageCapacityBytes }),
        sandboxes: [],
        containers: [],
        sandboxStats: [],
        kubelet: { cpu: { timeMs: T, coreNanoSeconds: 0 }, memoryBytes: Gi },
      });
    const hard = (value: string): Threshold => parseThresholdStatement('memory.available', value)!;

    const table: [string, number | undefined, number, string, boolean][] = [
      // huge pages, node available, threshold, met
      ['no huge pages: 15Gi available, 100Mi not met', undefined, 15 * Gi, '100Mi', false],
      ['12Gi of huge pages: 3Gi available', 12 * Gi, 3 * Gi, '100Mi', false],
      ['12Gi of huge pages: under a 4Gi threshold', 12 * Gi, 3 * Gi, '4Gi', true],
      ['15Gi of huge pages: nothing left, 100Mi met', 15 * Gi, 0, '100Mi', true],
      ['20% of what is left (3Gi + 1Gi working set): 819.2Mi, not met', 12 * Gi, 3 * Gi, '20%', false],
      ['80% of 4Gi (3.2Gi): met', 12 * Gi, 3 * Gi, '80%', true],
    ];
    for (const [what, huge, available, threshold, met] of table) {
      it(what, () => {
        const summary = summaryWith(huge);
        expect(summary.node.memory?.availableBytes).to.equal(available);
        const { observations } = makeSignalObservations(summary);
        const obs = observations.get('memory.available')!;
        // Capacity as the kubelet's eviction manager derives it: available plus working set.
        expect(obs.capacity).to.equal(available + Gi);
        expect(thresholdsMet([hard(threshold)], observations, false).length === 1).to.equal(met);
      });
    }
  });
});

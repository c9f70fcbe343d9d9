// The order pods are evicted in (src/kubelet/eviction/rank.ts) and what a pod counts for it (pods.ts).
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import type { PodStatsByUID } from '../../../../src/kubelet/eviction/observations.js';
import { isCriticalPod, podDiskUsage, podRequest } from '../../../../src/kubelet/eviction/pods.js';
import {
  fsStatsToMeasure,
  nodeReclaimFor,
  rankDiskPressure,
  rankFuncFor,
  rankMemoryPressure,
  rankPIDPressure,
  type FsLayout,
} from '../../../../src/kubelet/eviction/rank.js';
import type { PodStats } from '../../../../src/kubelet/stats/types.js';
import { cstats, ctr, Gi, Mi, pod, pstats } from './fixtures.js';

function statsMap(...s: PodStats[]): PodStatsByUID {
  return new Map(s.map((x) => [x.podRef.uid, x]));
}
const names = (pods: Pod[]) => pods.map((p) => p.metadata.name);

describe('eviction ranking: memory', () => {
  // name, memory request, working set, priority
  const table: [string, string | undefined, number, number][] = [
    ['guaranteed-under', '1Gi', 500 * Mi, 0],
    ['burstable-over-small', '100Mi', 200 * Mi, 0],
    ['besteffort-big', undefined, 900 * Mi, 0],
    ['besteffort-high-priority', undefined, 2 * Gi, 1000],
    ['burstable-over-low-priority', '100Mi', 150 * Mi, -10],
  ];
  const pods = table.map(([name, req, , priority]) =>
    pod(name, [ctr('c', req ? { memory: req } : {})], { priority }),
  );
  const stats = statsMap(...table.map(([, , ws], i) => pstats(pods[i] as Pod, [cstats('c', { ws })])));

  it('over requests first, then lower priority, then most above requests', () => {
    expect(names(rankMemoryPressure(pods, stats))).to.deep.equal([
      'burstable-over-low-priority',
      'besteffort-big',
      'burstable-over-small',
      'besteffort-high-priority',
      'guaranteed-under',
    ]);
  });

  it('a pod without stats ranks first', () => {
    const ghost = pod('ghost', [ctr('c', { memory: '1Gi' })], { priority: 1_000_000 });
    expect(names(rankMemoryPressure([...pods, ghost], stats))[0]).to.equal('ghost');
  });
});

describe('eviction ranking: pids', () => {
  it('lower priority first, then more processes', () => {
    const a = pod('a', [ctr('c')], { priority: 10 });
    const b = pod('b', [ctr('c')]);
    const c = pod('c', [ctr('c')]);
    const stats = statsMap(
      pstats(a, [], { process_stats: { process_count: 500 } }),
      pstats(b, [], { process_stats: { process_count: 5 } }),
      pstats(c, [], { process_stats: { process_count: 50 } }),
    );
    expect(names(rankPIDPressure([a, b, c], stats))).to.deep.equal(['c', 'b', 'a']);
  });
});

describe('eviction ranking: disk', () => {
  const withVolume = pod('vol', [ctr('c', { 'ephemeral-storage': '1Gi' })], {
    volumes: [
      { name: 'scratch', emptyDir: {} },
      { name: 'tmpfs', emptyDir: { medium: 'Memory' } },
    ],
  });
  const volStats = pstats(withVolume, [cstats('c', { rootfs: 100 * Mi, logs: 10 * Mi })], {
    volume: [
      { name: 'scratch', time: 0, usedBytes: 2 * Gi, inodesUsed: 7 },
      { name: 'tmpfs', time: 0, usedBytes: 5 * Gi, inodesUsed: 9 },
    ],
  });

  it('counts what each filesystem holds', () => {
    expect(podDiskUsage(volStats, withVolume, ['root', 'logs', 'localVolumeSource'])).to.deep.equal({
      bytes: 2 * Gi + 110 * Mi,
      inodes: 9,
    });
    expect(podDiskUsage(volStats, withVolume, ['logs', 'localVolumeSource'])).to.deep.equal({
      bytes: 2 * Gi + 10 * Mi,
      inodes: 8,
    });
    expect(podDiskUsage(volStats, withVolume, ['images'])).to.deep.equal({ bytes: 0, inodes: 0 });
  });

  const layouts: [string, FsLayout, string, string[]][] = [
    [
      'one filesystem',
      { dedicatedImageFs: false, splitContainerImageFs: false },
      'nodefs.available',
      ['images', 'root', 'logs', 'localVolumeSource'],
    ],
    [
      'imagefs: nodefs',
      { dedicatedImageFs: true, splitContainerImageFs: false },
      'nodefs.available',
      ['logs', 'localVolumeSource'],
    ],
    [
      'imagefs: imagefs',
      { dedicatedImageFs: true, splitContainerImageFs: false },
      'imagefs.available',
      ['root', 'images'],
    ],
    [
      'imagefs: containerfs',
      { dedicatedImageFs: true, splitContainerImageFs: false },
      'containerfs.inodesFree',
      ['root', 'images'],
    ],
    [
      'split: nodefs',
      { dedicatedImageFs: true, splitContainerImageFs: true },
      'nodefs.inodesFree',
      ['logs', 'localVolumeSource', 'root'],
    ],
    [
      'split: imagefs',
      { dedicatedImageFs: true, splitContainerImageFs: true },
      'imagefs.available',
      ['images'],
    ],
    [
      'split: containerfs',
      { dedicatedImageFs: true, splitContainerImageFs: true },
      'containerfs.available',
      ['logs', 'localVolumeSource', 'root'],
    ],
  ];
  for (const [name, layout, signal, want] of layouts) {
    it(`measures ${want.join('+')} for ${signal} (${name})`, () => {
      expect(fsStatsToMeasure(signal as 'nodefs.available', layout)).to.deep.equal(want);
    });
  }

  const reclaims: [FsLayout, string, string[]][] = [
    [
      { dedicatedImageFs: false, splitContainerImageFs: false },
      'nodefs.available',
      ['DeleteAllUnusedContainers', 'DeleteUnusedImages'],
    ],
    [{ dedicatedImageFs: true, splitContainerImageFs: false }, 'nodefs.available', []],
    [
      { dedicatedImageFs: true, splitContainerImageFs: false },
      'imagefs.inodesFree',
      ['DeleteAllUnusedContainers', 'DeleteUnusedImages'],
    ],
    [{ dedicatedImageFs: true, splitContainerImageFs: true }, 'imagefs.available', ['DeleteUnusedImages']],
    [
      { dedicatedImageFs: true, splitContainerImageFs: true },
      'containerfs.available',
      ['DeleteAllUnusedContainers'],
    ],
    [{ dedicatedImageFs: false, splitContainerImageFs: false }, 'memory.available', []],
    [{ dedicatedImageFs: false, splitContainerImageFs: false }, 'pid.available', []],
  ];
  for (const [layout, signal, want] of reclaims) {
    it(`node-level reclaim for ${signal} (image fs ${layout.dedicatedImageFs}, split ${layout.splitContainerImageFs}): ${want.join(', ') || 'none'}`, () => {
      expect(nodeReclaimFor(signal as 'nodefs.available', layout)).to.deep.equal(want);
    });
  }

  it('over the ephemeral-storage request first, then priority, then most above request', () => {
    const small = pod('small-over', [ctr('c', { 'ephemeral-storage': '10Mi' })]);
    const big = pod('big-under', [ctr('c', { 'ephemeral-storage': '10Gi' })]);
    const nreq = pod('no-request', [ctr('c')], { priority: 5 });
    const stats = statsMap(
      pstats(small, [cstats('c', { rootfs: 20 * Mi, logs: 1 * Mi })]),
      pstats(big, [cstats('c', { rootfs: 5 * Gi, logs: 0 })]),
      pstats(nreq, [cstats('c', { rootfs: 1 * Mi, logs: 0 })]),
    );
    const rank = rankDiskPressure(['root', 'logs', 'localVolumeSource'], 'ephemeral-storage');
    expect(names(rank([big, nreq, small], stats))).to.deep.equal(['small-over', 'no-request', 'big-under']);
    const one = { dedicatedImageFs: false, splitContainerImageFs: false };
    expect(names(rankFuncFor('nodefs.available', one)([big, nreq, small], stats))).to.deep.equal([
      'small-over',
      'no-request',
      'big-under',
    ]);
  });
});

describe('eviction pod facts', () => {
  const cases: [string, Pod, boolean][] = [
    ['an API pod', pod('a', [ctr('c')]), false],
    ['system-cluster-critical', pod('a', [ctr('c')], { priority: 2_000_000_000 }), true],
    ['system-node-critical', pod('a', [ctr('c')], { priority: 2_000_001_000 }), true],
    ['just below critical', pod('a', [ctr('c')], { priority: 1_999_999_999 }), false],
    [
      'static',
      {
        ...pod('a', [ctr('c')]),
        metadata: { name: 'a', annotations: { 'kubernetes.io/config.source': 'file' } },
      },
      true,
    ],
    [
      'mirror',
      {
        ...pod('a', [ctr('c')]),
        metadata: { name: 'a', annotations: { 'kubernetes.io/config.mirror': 'h' } },
      },
      true,
    ],
  ];
  for (const [name, p, want] of cases) {
    it(`${name} is ${want ? '' : 'not '}critical`, () => {
      expect(isCriticalPod(p)).to.equal(want);
    });
  }

  it('requests: containers aggregated, or pod-level only for supported resources', () => {
    const p = pod('a', [
      ctr('c', { memory: '100Mi', 'ephemeral-storage': '1Gi' }),
      ctr('d', { memory: '50Mi' }),
    ]);
    expect(podRequest(p, 'memory')).to.equal(150 * Mi);
    expect(podRequest(p, 'ephemeral-storage')).to.equal(Gi);
    const pl = { ...p, spec: { ...p.spec, resources: { requests: { memory: '1Gi' } } } };
    expect(podRequest(pl, 'memory')).to.equal(Gi);
    expect(podRequest(pl, 'ephemeral-storage')).to.equal(0);
  });
});

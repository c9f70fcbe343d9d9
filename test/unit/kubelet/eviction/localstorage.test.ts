// Local ephemeral storage limits (src/kubelet/eviction/localstorage.ts), alone and within a round.
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import {
  localStorageEvictions,
  podEphemeralStorageLimit,
} from '../../../../src/kubelet/eviction/localstorage.js';
import { initialEvictionState, synchronize } from '../../../../src/kubelet/eviction/manager.js';
import type { PodStatsByUID } from '../../../../src/kubelet/eviction/observations.js';
import { formatQuantity } from '../../../../src/kubelet/eviction/quantity.js';
import { parseThresholdConfig } from '../../../../src/kubelet/eviction/thresholds.js';
import type { PodStats } from '../../../../src/kubelet/stats/types.js';
import { cstats, ctr, Gi, Mi, pod, pstats, summary } from './fixtures.js';

const eph = (limit: string): Record<string, string> => ({ 'ephemeral-storage': limit });
const statsMap = (...s: PodStats[]): PodStatsByUID => new Map(s.map((x) => [x.podRef.uid, x]));

describe('local ephemeral storage limits', () => {
  const scratch = pod('scratch', [ctr('c')], {
    volumes: [
      { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
      { name: 'unbounded', emptyDir: {} },
    ],
  });
  const limited = pod('limited', [ctr('a', {}, eph('1Gi')), ctr('b', {}, eph('500Mi'))]);
  const sidecar: Pod = {
    ...pod('sidecar', [ctr('main')]),
    spec: {
      containers: [ctr('main')],
      initContainers: [{ ...ctr('log', {}, eph('200Mi')), restartPolicy: 'Always' }],
    },
  };

  // Container b's writable layer and logs pass its 500Mi; its writable layer alone does not.
  const bOverItsLimit = pstats(
    limited,
    [cstats('a', { rootfs: 100 * Mi, logs: 0 }), cstats('b', { rootfs: 450 * Mi, logs: 51 * Mi })],
    { 'ephemeral-storage': { time: 0, usedBytes: 601 * Mi } },
  );
  const cases: [string, Pod, PodStats, boolean, string | undefined][] = [
    [
      'an emptyDir over its sizeLimit',
      scratch,
      pstats(scratch, [cstats('c', { rootfs: 0, logs: 0 })], {
        volume: [{ name: 'cache', time: 0, usedBytes: Gi + 1 }],
      }),
      false,
      'Usage of EmptyDir volume "cache" exceeds the limit "1Gi". ',
    ],
    [
      'an emptyDir at its sizeLimit',
      scratch,
      pstats(scratch, [cstats('c', { rootfs: 0, logs: 0 })], {
        volume: [{ name: 'cache', time: 0, usedBytes: Gi }],
      }),
      false,
      undefined,
    ],
    [
      'the pod over the sum of its limits',
      limited,
      pstats(limited, [cstats('a', { rootfs: 0, logs: 0 }), cstats('b', { rootfs: 0, logs: 0 })], {
        'ephemeral-storage': { time: 0, usedBytes: 1600 * Mi },
      }),
      false,
      'Pod ephemeral local storage usage exceeds the total limit of containers 1524Mi. ',
    ],
    [
      'a container over its own limit (writable layer and logs)',
      limited,
      bOverItsLimit,
      false,
      'Container b exceeded its local ephemeral storage limit "500Mi". ',
    ],
    [
      'with a dedicated image filesystem the writable layer does not count',
      limited,
      bOverItsLimit,
      true,
      undefined,
    ],
    [
      'a sidecar over its limit',
      sidecar,
      pstats(
        sidecar,
        [cstats('main', { rootfs: 0, logs: 0 }), cstats('log', { rootfs: 0, logs: 201 * Mi })],
        {
          'ephemeral-storage': { time: 0, usedBytes: 201 * Mi },
        },
      ),
      false,
      // The pod limit (the sidecar's 200Mi) is passed first.
      'Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ',
    ],
  ];
  for (const [name, p, s, dedicated, want] of cases) {
    it(`${name}: ${want === undefined ? 'kept' : 'evicted'}`, () => {
      const out = localStorageEvictions([p], statsMap(s), dedicated);
      if (want === undefined) {
        expect(out).to.deep.equal([]);
        return;
      }
      expect(out).to.have.length(1);
      // The kubelet's eviction_signal for each kind of breach.
      const signal = want.startsWith('Usage of EmptyDir')
        ? 'emptydirfs.limit'
        : want.startsWith('Pod ')
          ? 'ephemeralpodfs.limit'
          : 'ephemeralcontainerfs.limit';
      expect(out[0]).to.deep.equal({
        pod: p,
        signal,
        gracePeriodSeconds: 1,
        status: { phase: 'Failed', reason: 'Evicted', message: want },
        event: { type: 'Warning', reason: 'Evicted', message: want },
      });
    });
  }

  it('critical pods and pods without stats are left alone', () => {
    const crit = { ...scratch, spec: { ...scratch.spec, priority: 2_000_000_000 } };
    const s = pstats(crit, [], { volume: [{ name: 'cache', time: 0, usedBytes: 2 * Gi }] });
    expect(localStorageEvictions([crit], statsMap(s), false)).to.deep.equal([]);
    expect(localStorageEvictions([scratch], statsMap(), false)).to.deep.equal([]);
  });

  const limits: [string, Container[], Container[], string | undefined][] = [
    ['none', [ctr('a')], [], undefined],
    ['one', [ctr('a', {}, eph('1Gi'))], [], '1Gi'],
    ['a sum keeps the first format', [ctr('a', {}, eph('1G')), ctr('b', {}, eph('1Gi'))], [], '2073741824'],
    ['an init container raises the floor', [ctr('a', {}, eph('1Gi'))], [ctr('i', {}, eph('2Gi'))], '2Gi'],
  ];
  for (const [name, containers, initContainers, want] of limits) {
    it(`pod ephemeral-storage limit: ${name}`, () => {
      const p = pod('p', containers, { initContainers });
      const q = podEphemeralStorageLimit(p);
      expect(q === undefined ? undefined : formatQuantity(q)).to.equal(want);
    });
  }

  it('in a round, local storage evictions come first and end it', () => {
    const s = pstats(scratch, [cstats('c', { ws: 10 * Mi, rootfs: 0, logs: 0 })], {
      volume: [{ name: 'cache', time: 0, usedBytes: 2 * Gi }],
    });
    const r = synchronize({
      config: {
        thresholds: parseThresholdConfig({ evictionHard: { 'memory.available': '100Mi' } }),
        pressureTransitionPeriodMs: 300_000,
        maxPodGracePeriodSeconds: 0,
        localStorageCapacityIsolation: true,
        layout: { dedicatedImageFs: false, splitContainerImageFs: false },
      },
      state: initialEvictionState,
      summary: summary({ time: 1, memAvailable: 10 * Mi, memWorkingSet: Gi }, [s]),
      activePods: [scratch],
      now: 1,
    });
    expect(r.localStorage.map((e) => e.pod.metadata.name)).to.deep.equal(['scratch']);
    expect(r.reclaim).to.equal(undefined);
    expect(r.nodeConditions).to.deep.equal(['MemoryPressure']);
  });
});

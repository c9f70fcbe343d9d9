// The shutdown configuration as the kubelet reads it: its validation messages, the migration of the two
// durations into priority groups (Test_migrateConfig), the order of the groups, and "no config = off".
import { expect } from 'chai';
import {
  migrateConfig,
  periodRequestedSeconds,
  shutdownConfigFrom,
  shutdownEnabled,
  SystemCriticalPriority,
} from '../../../../src/kubelet/nodeshutdown/config.js';
import { validateShutdownSettings, type ShutdownSettings } from '../../../../src/api/shutdownsettings.js';
import { parseVirtualNodeSpec } from '../../../../src/api/virtualnode.js';
import { nodeKubeletSettings } from '../../../../src/app/nodeconfigz.js';
import { kubeletConfiguration } from '../../../../src/server/nodeapi/configz.js';

describe('nodeshutdown config', () => {
  describe('migrateConfig (kubelet Test_migrateConfig)', () => {
    const cases: {
      name: string;
      period: number;
      critical: number;
      want: ReturnType<typeof migrateConfig>;
    }[] = [
      {
        name: 'both shutdownGracePeriodRequested and shutdownGracePeriodCriticalPods',
        period: 300_000,
        critical: 120_000,
        want: [
          { priority: 0, shutdownGracePeriodSeconds: 180 },
          { priority: SystemCriticalPriority, shutdownGracePeriodSeconds: 120 },
        ],
      },
      {
        name: 'only shutdownGracePeriodRequested',
        period: 100_000,
        critical: 0,
        want: [
          { priority: 0, shutdownGracePeriodSeconds: 100 },
          { priority: SystemCriticalPriority, shutdownGracePeriodSeconds: 0 },
        ],
      },
      { name: 'empty configuration', period: 0, critical: 0, want: [] },
      { name: 'wrong configuration', period: 1_000, critical: 100_000, want: [] },
      {
        name: 'fractional seconds are truncated as Go divides durations',
        period: 2_500,
        critical: 1_000,
        want: [
          { priority: 0, shutdownGracePeriodSeconds: 1 },
          { priority: SystemCriticalPriority, shutdownGracePeriodSeconds: 1 },
        ],
      },
    ];
    for (const c of cases) {
      it(c.name, () => expect(migrateConfig(c.period, c.critical)).to.deep.equal(c.want));
    }
  });

  describe('validateShutdownSettings (kubelet config validation, both gates on)', () => {
    const cases: { name: string; s: ShutdownSettings | undefined; want: string[] }[] = [
      { name: 'nothing set', s: undefined, want: [] },
      {
        name: 'period and critical',
        s: { shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' },
        want: [],
      },
      {
        name: 'by priority alone',
        s: { shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 10 }] },
        want: [],
      },
      {
        name: 'critical longer than the period',
        s: { shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '1m' },
        want: [
          'invalid configuration: shutdownGracePeriodCriticalPods 1m0s must be <= shutdownGracePeriod 10s',
        ],
      },
      {
        name: 'sub-second period',
        s: { shutdownGracePeriod: '500ms' },
        want: ['invalid configuration: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec'],
      },
      {
        name: 'negative critical period',
        s: { shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '-1s' },
        want: [
          'invalid configuration: shutdownGracePeriodCriticalPods -1s must be either zero or otherwise >= 1 sec',
        ],
      },
      {
        name: 'both forms',
        s: {
          shutdownGracePeriod: '30s',
          shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 10 }],
        },
        want: [
          'invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
        ],
      },
      {
        name: 'not a duration',
        s: { shutdownGracePeriod: 'soon' },
        want: ['invalid configuration: shutdownGracePeriod: time: invalid duration "soon"'],
      },
      {
        name: 'negative seconds in an entry',
        s: { shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: -1 }] },
        want: [
          'invalid configuration: shutdownGracePeriodByPodPriority[0].shutdownGracePeriodSeconds must be a whole number of seconds >= 0',
        ],
      },
    ];
    for (const c of cases) {
      it(c.name, () => expect(validateShutdownSettings(c.s)).to.deep.equal(c.want));
    }
  });

  describe('shutdownConfigFrom', () => {
    it('is off without settings, as the kubelet stub (defaults 0s)', () => {
      const c = shutdownConfigFrom(undefined);
      expect(shutdownEnabled(c)).to.equal(false);
      expect(c.groups).to.deep.equal([]);
      expect(c.shutdownGracePeriodMs).to.equal(0);
    });
    it('migrates the durations and sums the period requested', () => {
      const c = shutdownConfigFrom({ shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' });
      expect(shutdownEnabled(c)).to.equal(true);
      expect(c.groups).to.deep.equal([
        { priority: 0, shutdownGracePeriodSeconds: 20 },
        { priority: SystemCriticalPriority, shutdownGracePeriodSeconds: 10 },
      ]);
      expect(periodRequestedSeconds(c)).to.equal(30);
    });
    it('sorts shutdownGracePeriodByPodPriority lowest priority first, ties kept in order', () => {
      const c = shutdownConfigFrom({
        shutdownGracePeriodByPodPriority: [
          { priority: 2_000_000_000, shutdownGracePeriodSeconds: 10 },
          { priority: 10_000, shutdownGracePeriodSeconds: 20 },
          { priority: 0, shutdownGracePeriodSeconds: 30 },
          { priority: 10_000, shutdownGracePeriodSeconds: 5 },
        ],
      });
      expect(c.groups.map((g) => [g.priority, g.shutdownGracePeriodSeconds])).to.deep.equal([
        [0, 30],
        [10_000, 20],
        [10_000, 5],
        [2_000_000_000, 10],
      ]);
      // As configured, for /configz.
      expect(c.shutdownGracePeriodByPodPriority[0]!.priority).to.equal(2_000_000_000);
    });
    it('throws with the kubelet messages on invalid settings', () => {
      expect(() => shutdownConfigFrom({ shutdownGracePeriod: '500ms' })).to.throw(
        'shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec',
      );
    });
  });

  describe('the VirtualNode spec', () => {
    const base = { runtime: { type: 'sim' } };
    it('defaults spec.shutdown to false and accepts the fields', () => {
      const r = parseVirtualNodeSpec({
        ...base,
        kubelet: { shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' },
      });
      expect(r.ok).to.equal(true);
      if (r.ok) {
        expect(r.spec.shutdown).to.equal(false);
        expect(r.spec.kubelet.shutdownGracePeriod).to.equal('30s');
      }
    });
    it('refuses what the kubelet refuses, naming the field', () => {
      const r = parseVirtualNodeSpec({
        ...base,
        kubelet: {
          shutdownGracePeriod: '30s',
          shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 1 }],
        },
      });
      expect(r).to.deep.equal({
        ok: false,
        message:
          'spec.kubelet: invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
      });
    });
    it('refuses an entry that is not an int32 priority', () => {
      const r = parseVirtualNodeSpec({
        ...base,
        kubelet: { shutdownGracePeriodByPodPriority: [{ priority: 2 ** 31, shutdownGracePeriodSeconds: 1 }] },
      });
      expect(r.ok).to.equal(false);
      if (!r.ok)
        expect(r.message).to.match(/^spec\.kubelet\.shutdownGracePeriodByPodPriority\[0\]\.priority: /);
    });
  });

  describe('on /configz', () => {
    const configz = (settings: ShutdownSettings): Record<string, unknown> => {
      const r = parseVirtualNodeSpec({ runtime: { type: 'sim' }, kubelet: settings });
      if (!r.ok) throw new Error(r.message);
      const c = kubeletConfiguration(
        nodeKubeletSettings({
          spec: r.spec,
          nodeName: 'n',
          nodeIP: '10.0.0.1',
          settings: { podNetwork: 'cni', podLogsRoot: '/var/log/pods', cgroupRoot: '/kubelet-operator' },
          env: {},
          resolvConf: '',
          shutdown: shutdownConfigFrom(r.spec.kubelet),
        }),
        { address: '0.0.0.0', port: 10250, clientCAFile: '', operatorFlags: {} },
      );
      return Object.fromEntries(Object.entries(c).filter(([k]) => k.startsWith('shutdown')));
    };
    it('shows 0s durations when off, as a kubelet (they are structs in v1beta1)', () => {
      expect(configz({})).to.deep.equal({ shutdownGracePeriod: '0s', shutdownGracePeriodCriticalPods: '0s' });
    });
    it('shows the durations as Go prints them', () => {
      expect(configz({ shutdownGracePeriod: '90s', shutdownGracePeriodCriticalPods: '30s' })).to.deep.equal({
        shutdownGracePeriod: '1m30s',
        shutdownGracePeriodCriticalPods: '30s',
      });
    });
    it('shows shutdownGracePeriodByPodPriority as configured', () => {
      const byPriority = [
        { priority: 2_000_000_000, shutdownGracePeriodSeconds: 10 },
        { priority: 0, shutdownGracePeriodSeconds: 30 },
      ];
      expect(configz({ shutdownGracePeriodByPodPriority: byPriority })).to.deep.equal({
        shutdownGracePeriod: '0s',
        shutdownGracePeriodCriticalPods: '0s',
        shutdownGracePeriodByPodPriority: byPriority,
      });
    });
  });
});

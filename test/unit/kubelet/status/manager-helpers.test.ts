import { expect } from 'chai';
import type { Pod, PodCondition, PodStatus } from '../../../../src/api/core.js';
import { isPodStatusByKubeletEqual } from '../../../../src/kubelet/status/equality.js';
import { mergePodStatus } from '../../../../src/kubelet/status/merge.js';
import {
  MaxPodTerminationMessageLogLength,
  normalizeStatus,
  truncateUTF8,
} from '../../../../src/kubelet/status/normalize.js';
import { createPodStatusPatch } from '../../../../src/kubelet/status/patch.js';
import { canonicalEqual, semanticEqual, wireCanonical } from '../../../../src/kubelet/status/semantic.js';
import { hasPodInitialized, terminatedPodStatus } from '../../../../src/kubelet/status/terminate.js';
import { checkContainerStateTransition } from '../../../../src/kubelet/status/transition.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';
import { applyPodStatusPatch } from '../../../conformance/areas/statusManager-apiserver.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0, 250);

/** A small deterministic generator (xorshift): rand(n) is an integer in [0, n). */
function xorshift(seed: number): (n: number) => number {
  return (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
}

function pod(spec: Partial<Pod['spec']> = {}, status: PodStatus = {}): Pod {
  return { metadata: { uid: 'u1', name: 'p', namespace: 'ns' }, spec: { containers: [], ...spec }, status };
}

describe('status manager helpers', () => {
  describe('semanticEqual', () => {
    it('answers as comparing the two canonical forms, on thousands of random pairs', () => {
      // A small deterministic generator of status-like values, zero values and pointer keys
      // included, and of near-copies of them, so that both equal and unequal pairs are common.
      const rand = xorshift(0x2f6b1a3d);
      const keys = [
        'ready',
        'started',
        'running',
        'state',
        'name',
        'startedAt',
        'restartCount',
        'waiting',
        'x',
      ];
      const leaf = (): unknown =>
        [
          null,
          undefined,
          '',
          'a',
          0,
          1,
          false,
          true,
          '2026-01-01T00:00:00Z',
          '2026-01-01T01:00:00+01:00',
          [],
          {},
        ][rand(12)];
      const value = (depth: number): unknown => {
        if (depth === 0 || rand(3) === 0) return leaf();
        if (rand(4) === 0) return Array.from({ length: rand(3) }, () => value(depth - 1));
        const o: Record<string, unknown> = {};
        for (let i = rand(4); i > 0; i--) o[keys[rand(keys.length)]!] = value(depth - 1);
        return o;
      };
      const nearCopy = (v: unknown, depth: number): unknown => {
        if (rand(5) === 0) return value(depth);
        if (Array.isArray(v)) return v.map((e) => nearCopy(e, depth - 1));
        if (v && typeof v === 'object') {
          const o: Record<string, unknown> = {};
          for (const [k, e] of Object.entries(v)) if (rand(6) !== 0) o[k] = nearCopy(e, depth - 1);
          if (rand(4) === 0) o[keys[rand(keys.length)]!] = leaf();
          return o;
        }
        return v;
      };
      let equal = 0;
      for (let i = 0; i < 5000; i++) {
        const a = value(4);
        const b = rand(2) ? nearCopy(a, 4) : value(4);
        const expected = canonicalEqual(wireCanonical(a), wireCanonical(b));
        if (expected) equal++;
        expect(semanticEqual(a, b), JSON.stringify([a, b])).to.equal(expected);
      }
      expect(equal, 'equal pairs are common enough to matter').to.be.greaterThan(500);
    });

    it('treats zero values as absent but keeps pointer fields', () => {
      expect(semanticEqual({ ready: false, restartCount: 0, image: '' }, {})).to.equal(true);
      expect(semanticEqual({ name: 'a', started: false }, { name: 'a' })).to.equal(false);
      expect(semanticEqual({ state: { running: {} } }, { state: {} })).to.equal(false);
      expect(
        semanticEqual({ state: { terminated: { exitCode: 0 } } }, { state: { terminated: {} } }),
      ).to.equal(true);
      expect(semanticEqual({ conditions: [], lastProbeTime: null }, {})).to.equal(true);
    });

    it('compares times as instants', () => {
      expect(
        semanticEqual({ startTime: '2026-01-01T00:00:00Z' }, { startTime: '2026-01-01T01:00:00+01:00' }),
      ).to.equal(true);
      expect(
        semanticEqual({ message: '2026-01-01T00:00:00Z' }, { message: '2026-01-01T01:00:00+01:00' }),
      ).to.equal(false);
    });
  });

  describe('normalizeStatus', () => {
    it('splits the 12 KiB message budget over all containers of the spec', () => {
      const names = Array.from({ length: 48 }, (_, i) => `c${i}`);
      const p = pod({ containers: names.map((name) => ({ name })) });
      const status: PodStatus = {
        containerStatuses: names.map((name) => ({
          name,
          ready: false,
          restartCount: 0,
          lastState: { terminated: { exitCode: 1, message: 'x'.repeat(1000) } },
        })),
      };
      const out = normalizeStatus(p, status);
      const lengths = (out.containerStatuses ?? []).map((s) => s.lastState?.terminated?.message?.length);
      expect(new Set(lengths)).to.deep.equal(new Set([Math.floor(MaxPodTerminationMessageLogLength / 48)]));
      expect(status.containerStatuses?.[0]?.lastState?.terminated?.message).to.have.length(1000);
    });

    it('never splits a UTF-8 character when truncating', () => {
      expect(truncateUTF8('aé', 2)).to.equal('a');
      expect(truncateUTF8('aé', 3)).to.equal('aé');
      expect(truncateUTF8('€€', 4)).to.equal('€');
    });

    it('sorts init statuses by spec order, keeping unknown names after them, and is idempotent', () => {
      const p = pod({ initContainers: [{ name: 'b' }, { name: 'a' }] });
      const s = (name: string) => ({ name, ready: false, restartCount: 0 });
      const out = normalizeStatus(p, {
        initContainerStatuses: [s('x'), s('a'), s('b')],
        containerStatuses: [s('z'), s('y')],
        startTime: '2026-01-01T00:00:00.999999Z',
      });
      expect(out.initContainerStatuses?.map((c) => c.name)).to.deep.equal(['b', 'a', 'x']);
      expect(out.containerStatuses?.map((c) => c.name)).to.deep.equal(['y', 'z']);
      expect(out.startTime).to.equal('2026-01-01T00:00:00Z');
      expect(normalizeStatus(p, out)).to.deep.equal(out);
    });

    it('leaves an unparsable time as it is', () => {
      expect(normalizeStatus(pod(), { startTime: 'yesterday' }).startTime).to.equal('yesterday');
    });

    it('answers a normal status with itself, anything else with a normalized copy, never touching its input', () => {
      const p = pod({ containers: [{ name: 'a' }, { name: 'b' }] });
      const running = (name: string, startedAt: string) => ({ name, state: { running: { startedAt } } });
      const normal = {
        startTime: '2026-01-01T00:00:00Z',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' }],
        containerStatuses: [running('a', '2026-01-01T00:00:02Z'), running('b', '2026-01-01T00:00:03Z')],
      };
      expect(normalizeStatus(p, normal as never)).to.equal(normal);
      const variants = {
        'sub-second start': { ...normal, startTime: '2026-01-01T00:00:00.5Z' },
        'sub-second condition': {
          ...normal,
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:01.1Z' }],
        },
        'unsorted containers': { ...normal, containerStatuses: [...normal.containerStatuses].reverse() },
        'sub-second container start': {
          ...normal,
          containerStatuses: [running('a', '2026-01-01T00:00:02.3Z'), normal.containerStatuses[1]!],
        },
        'over-long message': {
          ...normal,
          containerStatuses: [
            { name: 'a', state: { terminated: { exitCode: 1, message: 'x'.repeat(7_000) } } },
            normal.containerStatuses[1]!,
          ],
        },
      };
      for (const [what, status] of Object.entries(variants)) {
        const before = JSON.stringify(status);
        const out = normalizeStatus(p, status as never);
        expect(out, what).to.not.equal(status);
        expect(normalizeStatus(p, out), what).to.equal(out);
        expect(JSON.stringify(status), `${what}: input untouched`).to.equal(before);
      }
    });
  });

  describe('isPodStatusByKubeletEqual', () => {
    it('ignores condition times and foreign conditions but not kubelet-owned reasons', () => {
      const a: PodStatus = {
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
          { type: 'example.com/x', status: 'True' },
        ],
      };
      const b: PodStatus = {
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-02T00:00:00Z' }],
      };
      expect(isPodStatusByKubeletEqual(a, b)).to.equal(true);
      const c: PodStatus = { conditions: [{ type: 'Ready', status: 'True', reason: 'Other' }] };
      expect(isPodStatusByKubeletEqual(a, c)).to.equal(false);
      // A kubelet condition the old status lacks is a difference.
      expect(
        isPodStatusByKubeletEqual({}, { conditions: [{ type: 'Initialized', status: 'True' }] }),
      ).to.equal(false);
    });
  });

  describe('createPodStatusPatch', () => {
    const server: PodStatus = {
      phase: 'Running',
      message: 'old',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
        { type: 'Ready', status: 'False', reason: 'ContainersNotReady' },
        { type: 'example.com/gone', status: 'True' },
      ],
      containerStatuses: [
        { name: 'a', ready: false, restartCount: 0, image: '', state: { running: {} } },
        { name: 'b', ready: false, restartCount: 0, state: { waiting: {} } },
      ],
    };

    it('is null when only zero values and time spellings differ', () => {
      const same: PodStatus = structuredClone(server);
      delete same.conditions![0]!.lastProbeTime;
      same.conditions![0]!.lastTransitionTime = '2026-01-01T00:00:00.000Z';
      same.containerStatuses = [
        { name: 'a', ready: false, restartCount: 0, state: { running: {} } },
        { name: 'b', ready: false, restartCount: 0, state: { waiting: {} } },
      ];
      expect(createPodStatusPatch('u1', server, same)).to.equal(null);
    });

    it('merges conditions by type, replaces container statuses whole, nulls removed fields', () => {
      const next: PodStatus = {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:01:00Z' },
        ],
        containerStatuses: [
          { name: 'a', ready: true, restartCount: 0, state: { running: {} } },
          { name: 'b', ready: false, restartCount: 0, state: { waiting: {} } },
        ],
      };
      const patch = createPodStatusPatch('u1', server, next);
      expect(patch).to.deep.equal({
        metadata: { uid: 'u1' },
        status: {
          message: null,
          '$setElementOrder/conditions': [{ type: 'PodScheduled' }, { type: 'Ready' }],
          conditions: [
            { type: 'Ready', status: 'True', reason: null, lastTransitionTime: '2026-01-01T00:01:00Z' },
            { $patch: 'delete', type: 'example.com/gone' },
          ],
          containerStatuses: [
            { name: 'a', ready: true, state: { running: {} } },
            { name: 'b', state: { waiting: {} } },
          ],
        },
      });
      const applied = applyPodStatusPatch(server, patch!.status);
      expect(semanticEqual(applied, next)).to.equal(true);
    });

    it('takes the server to the new status, and is null exactly when nothing but order differs (random pairs)', () => {
      const rand = xorshift(0x5eed1e55);
      const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
      const times = ['2026-01-01T00:00:00Z', '2026-01-01T01:00:00+01:00', '2026-01-01T00:00:05Z', null];
      const types = ['PodScheduled', 'Initialized', 'Ready', 'ContainersReady', 'example.com/gate'];
      // Unique types, in a random order, each with random fields (zero values and time spellings included).
      const conditions = (): PodCondition[] =>
        types
          .filter(() => rand(3) !== 0)
          .sort(() => rand(3) - 1)
          .map((type) => ({
            type,
            status: pick(['True', 'False', 'Unknown'] as const),
            ...(rand(2) ? { reason: pick(['', 'ContainersNotReady', 'PodCompleted']) } : {}),
            ...(rand(2) ? { lastTransitionTime: pick(times) ?? '' } : {}),
            ...(rand(3) === 0 ? { lastProbeTime: null } : {}),
          }));
      const ips = () => ['10.1.0.5', '10.1.0.6', 'fd00::5'].filter(() => rand(2) === 0).map((ip) => ({ ip }));
      const status = (): PodStatus => {
        const s: PodStatus = {};
        if (rand(4)) s.phase = pick(['Pending', 'Running', 'Succeeded']);
        if (rand(3) === 0) s.message = pick(['', 'm1', 'm2']);
        if (rand(4)) s.conditions = conditions();
        if (rand(2)) s.podIPs = ips();
        if (rand(2)) s.hostIPs = ips();
        if (rand(2)) s.startTime = pick(times) ?? undefined;
        if (rand(3)) {
          s.containerStatuses = [
            {
              name: 'a',
              ready: rand(2) === 0,
              restartCount: rand(2),
              image: pick(['', 'img:1']),
              ...(rand(2) ? { started: rand(2) === 0 } : {}),
              state: pick([{ running: {} }, { waiting: { reason: 'ContainerCreating' } }, {}]),
            },
          ];
        }
        return s;
      };
      // A copy with a few fields changed, so that equal and nearly equal pairs are common.
      const near = (s: PodStatus): PodStatus => {
        const c = structuredClone(s);
        if (rand(3) === 0 && c.conditions?.length) {
          const i = rand(c.conditions.length);
          c.conditions[i] = { ...c.conditions[i]!, status: pick(['True', 'False'] as const) };
        }
        if (rand(4) === 0) c.conditions = rand(2) ? [...(c.conditions ?? [])].reverse() : conditions();
        if (rand(4) === 0) c.podIPs = ips();
        if (rand(5) === 0) c.phase = 'Running';
        if (rand(5) === 0) delete c.message;
        return c;
      };
      // Merge-keyed lists sorted by key: a list whose entries are unchanged but reordered makes no patch, as
      // apimachinery's two-way merge patch writes a list's new order only along with a change in it.
      const byKey = (s: PodStatus): PodStatus => ({
        ...s,
        ...(s.conditions
          ? { conditions: [...s.conditions].sort((a, b) => a.type.localeCompare(b.type)) }
          : {}),
        ...(s.podIPs ? { podIPs: [...s.podIPs].sort((a, b) => a.ip.localeCompare(b.ip)) } : {}),
        ...(s.hostIPs ? { hostIPs: [...s.hostIPs].sort((a, b) => a.ip.localeCompare(b.ip)) } : {}),
      });
      let nulls = 0;
      for (let i = 0; i < 4000; i++) {
        const server = status();
        const next = rand(4) ? near(server) : status();
        const patch = createPodStatusPatch('u1', server, next);
        const why = JSON.stringify({ server, next, patch });
        if (patch === null) {
          nulls++;
          expect(semanticEqual(byKey(server), byKey(next)), why).to.equal(true);
          continue;
        }
        const applied = applyPodStatusPatch(server, patch.status);
        expect(semanticEqual(byKey(applied), byKey(next)), why).to.equal(true);
        const order = patch.status['$setElementOrder/conditions'];
        if (order !== undefined) {
          expect(order, why).to.deep.equal((next.conditions ?? []).map((c) => ({ type: c.type })));
        }
      }
      expect(nulls, 'equal pairs are common enough to matter').to.be.greaterThan(200);
    });

    it('requires the UID and well-keyed conditions', () => {
      expect(() => createPodStatusPatch('', {}, { phase: 'Running' }))
        .to.throw()
        .that.satisfies(isInvalidArgument);
      const bad = { conditions: [{ status: 'True' }] } as unknown as PodStatus;
      expect(() => createPodStatusPatch('u1', {}, bad))
        .to.throw()
        .that.satisfies(isInvalidArgument);
    });
  });

  describe('checkContainerStateTransition', () => {
    const terminated = (name: string, exitCode: number) => ({
      name,
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode } },
    });
    const running = (name: string) => ({ name, ready: false, restartCount: 0, state: { running: {} } });

    it('guards init containers too, exempting sidecars and OnFailure failures', () => {
      const spec = (restartPolicy: 'Never' | 'OnFailure', sidecar = false) => ({
        restartPolicy,
        containers: [],
        initContainers: [{ name: 'i', ...(sidecar ? { restartPolicy: 'Always' as const } : {}) }],
      });
      const old = (code: number) => ({ initContainerStatuses: [terminated('i', code)] });
      const next = { initContainerStatuses: [running('i')] };
      expect(checkContainerStateTransition(old(0), next, spec('Never'))).to.match(/init container i/);
      expect(checkContainerStateTransition(old(0), next, spec('Never', true))).to.equal(undefined);
      expect(checkContainerStateTransition(old(1), next, spec('OnFailure'))).to.equal(undefined);
      expect(checkContainerStateTransition(old(0), next, spec('OnFailure'))).to.match(/illegal/);
    });

    it('rejects init statuses that do not line up with the spec, except under Always', () => {
      const old = { initContainerStatuses: [terminated('other', 0)] };
      const spec = { containers: [], initContainers: [{ name: 'i' }] };
      expect(checkContainerStateTransition(old, {}, { ...spec, restartPolicy: 'Never' })).to.match(
        /mismatch/,
      );
      expect(checkContainerStateTransition(old, {}, spec)).to.equal(undefined);
    });
  });

  describe('terminatedPodStatus', () => {
    it('counts a running, started sidecar as the last init container as initialized', () => {
      const p = pod(
        { initContainers: [{ name: 's', restartPolicy: 'Always' }], containers: [{ name: 'c' }] },
        {
          initContainerStatuses: [
            { name: 's', ready: true, restartCount: 0, started: true, state: { running: {} } },
          ],
          containerStatuses: [{ name: 'c', ready: false, restartCount: 0, state: { waiting: {} } }],
        },
      );
      expect(hasPodInitialized(p)).to.equal(true);
      const out = terminatedPodStatus(p, p.status!);
      expect(out.containerStatuses?.[0]?.state?.terminated?.exitCode).to.equal(137);
      expect(out.initContainerStatuses?.[0]?.state?.terminated?.reason).to.equal('ContainerStatusUnknown');
      expect(out.phase).to.equal('Failed');
      expect(p.status?.containerStatuses?.[0]?.state).to.deep.equal({ waiting: {} });
    });
  });

  describe('mergePodStatus', () => {
    it('keeps resource claims and foreign conditions from the server, times DisruptionTarget at the merge', () => {
      const old: PodStatus = {
        phase: 'Running',
        resourceClaimStatuses: [{ name: 'gpu' }],
        conditions: [{ type: 'example.com/x', status: 'True' }],
      };
      const next: PodStatus = {
        phase: 'Failed',
        resourceClaimStatuses: [],
        conditions: [
          {
            type: 'DisruptionTarget',
            status: 'True',
            reason: 'TerminationByKubelet',
            lastTransitionTime: '2020-01-01T00:00:00Z',
          },
        ],
      };
      const merged = mergePodStatus(old, next, false, NOW);
      expect(merged.resourceClaimStatuses).to.deep.equal([{ name: 'gpu' }]);
      expect(merged.conditions?.map((c) => c.type)).to.deep.equal(['example.com/x', 'DisruptionTarget']);
      expect(merged.conditions?.[1]?.lastTransitionTime).to.equal('2026-01-01T12:00:00Z');
      expect(next.conditions?.[0]?.lastTransitionTime).to.equal('2020-01-01T00:00:00Z');
    });

    it("keeps the scheduler's extendedResourceClaimStatus from the server, never the kubelet's copy", () => {
      const ext = { resourceClaimName: 'p-ext', requestMappings: [] };
      expect(
        mergePodStatus(
          { phase: 'Running', extendedResourceClaimStatus: ext },
          { phase: 'Running' },
          true,
          NOW,
        ).extendedResourceClaimStatus,
      ).to.deep.equal(ext);
      const merged = mergePodStatus(
        { phase: 'Running' },
        { phase: 'Running', extendedResourceClaimStatus: ext },
        true,
        NOW,
      );
      expect('extendedResourceClaimStatus' in merged).to.equal(false);
    });

    it('forces readiness off on a Succeeded pod with PodCompleted', () => {
      const merged = mergePodStatus(
        { phase: 'Succeeded' },
        { phase: 'Succeeded', conditions: [{ type: 'ContainersReady', status: 'True' }] },
        true,
        NOW,
      );
      expect(merged.conditions?.map((c) => [c.type, c.status, c.reason])).to.deep.equal([
        ['ContainersReady', 'False', 'PodCompleted'],
        ['Ready', 'False', 'PodCompleted'],
      ]);
    });

    it("stamps the forced readiness conditions with the status's observed generation", () => {
      const merged = mergePodStatus(
        { phase: 'Running' },
        {
          phase: 'Failed',
          observedGeneration: 4,
          conditions: [{ type: 'Ready', status: 'True', observedGeneration: 4 }],
        },
        false,
        NOW,
      );
      expect(merged.conditions?.map((c) => [c.type, c.status, c.observedGeneration])).to.deep.equal([
        ['Ready', 'False', 4],
        ['ContainersReady', 'False', 4],
      ]);
    });

    it('changes neither input on any path (both deep-frozen), and its result can be merged again', () => {
      const deepFreeze = <T>(v: T): T => {
        if (v && typeof v === 'object') {
          for (const x of Object.values(v)) deepFreeze(x);
          Object.freeze(v);
        }
        return v;
      };
      const server = (phase: PodStatus['phase']): PodStatus =>
        deepFreeze({
          phase,
          message: 'server',
          resourceClaimStatuses: [{ name: 'gpu' }],
          conditions: [
            { type: 'example.com/x', status: 'True' },
            { type: 'Ready', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' },
            { type: 'DisruptionTarget', status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' },
          ],
        });
      const cached = (phase: PodStatus['phase']): PodStatus =>
        deepFreeze({
          phase,
          containerStatuses: [{ name: 'c', ready: true, restartCount: 0, image: 'i', imageID: 'i' }],
          conditions: [
            { type: 'ContainersReady', status: 'True' },
            { type: 'Ready', status: 'True' },
            { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' },
            { type: 'DisruptionTarget', status: 'False', reason: 'second of the type' },
          ],
        });
      for (const from of ['Pending', 'Running', 'Succeeded', 'Failed'] as const) {
        for (const to of ['Running', 'Succeeded', 'Failed'] as const) {
          for (const couldRun of [false, true]) {
            const what = `${from} -> ${to}, could run ${couldRun}`;
            const merged = mergePodStatus(server(from), cached(to), couldRun, NOW);
            expect(merged.conditions?.length, what).to.be.greaterThan(0);
            const again = mergePodStatus(deepFreeze(merged), cached(to), couldRun, NOW + 1000);
            expect(again.phase, what).to.be.a('string');
          }
        }
      }
      const terminal = mergePodStatus(server('Running'), cached('Failed'), false, NOW);
      const disruption = terminal.conditions?.filter((c) => c.type === 'DisruptionTarget');
      expect(disruption, 'the first of the type, re-stamped against the server').to.deep.equal([
        {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          lastTransitionTime: '2025-01-01T00:00:00Z',
        },
      ]);
    });
  });
});

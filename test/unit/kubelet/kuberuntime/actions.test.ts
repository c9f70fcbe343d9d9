import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { computePodActions, type PodActions } from '../../../../src/kubelet/kuberuntime/actions.js';
import { KindError } from '../../../../src/util/errors.js';
import { pod, probes, record, running3, runtime, sandbox, sidecar } from './fixtures.js';

const kills = (a: PodActions) =>
  Object.fromEntries([...a.containersToKill].map(([id, info]) => [id, [info.message, info.reason]]));

function expectInvalid(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(KindError);
    expect((err as KindError).kind).to.equal('InvalidArgument');
    expect((err as Error).message).to.match(pattern);
    return;
  }
  expect.fail('expected an InvalidArgument error');
}

describe('computePodActions', () => {
  describe('running containers', () => {
    it('restarts a container whose definition changed even under restartPolicy Never', () => {
      const recs = running3();
      recs[1] = record('foo2', 'running', { changed: true });
      const a = computePodActions(pod({ restartPolicy: 'Never' }), runtime([sandbox()], recs), probes());
      expect(a.containersToStart).to.deep.equal([1]);
      expect(kills(a)).to.deep.equal({
        'id-foo2': ['Container foo2 definition changed, will be restarted', ''],
      });
      expect(a.killPod).to.equal(false);
    });

    it('words liveness and startup kills as the kubelet does, with their reasons', () => {
      const a = computePodActions(
        pod({}),
        runtime([sandbox()], running3()),
        probes({ 'id-foo1': 'failure' }, { 'id-foo3': 'failure' }),
      );
      expect(kills(a)).to.deep.equal({
        'id-foo1': ['Container foo1 failed liveness probe, will be restarted', 'LivenessProbe'],
        'id-foo3': ['Container foo3 failed startup probe, will be restarted', 'StartupProbe'],
      });
      expect(a.containersToStart).to.deep.equal([0, 2]);
      const info = a.containersToKill.get('id-foo3' as never);
      expect(info).to.include({ name: 'foo3', kind: 'regular', containerIndex: 2 });
    });

    it('kills without restarting under Never, and the message says nothing about a restart', () => {
      const a = computePodActions(
        pod({ restartPolicy: 'Never' }),
        runtime([sandbox()], running3()),
        probes({ 'id-foo2': 'failure' }),
      );
      expect(kills(a)).to.deep.equal({
        'id-foo2': ['Container foo2 failed liveness probe', 'LivenessProbe'],
      });
      expect(a.containersToStart).to.deep.equal([]);
    });

    it('prefers the definition change over a liveness failure, and ignores unknown/success results', () => {
      const recs = running3();
      recs[0] = record('foo1', 'running', { changed: true });
      const a = computePodActions(
        pod({}),
        runtime([sandbox()], recs),
        probes({ 'id-foo1': 'failure', 'id-foo2': 'unknown' }, { 'id-foo3': 'success' }),
      );
      expect(kills(a)).to.deep.equal({
        'id-foo1': ['Container foo1 definition changed, will be restarted', ''],
      });
      expect(a.containersToStart).to.deep.equal([0]);
    });

    it('decides on the newest record of a name when older ones exist', () => {
      const a = computePodActions(
        pod({ containers: ['foo1'] }),
        runtime(
          [sandbox()],
          [record('foo1', 'running', { id: 'new' as never }), record('foo1', 'exited', { exitCode: 1 })],
        ),
        probes(),
      );
      expect(a.containersToStart).to.deep.equal([]);
      expect(a.killPod).to.equal(false);
    });
  });

  describe('non-running containers', () => {
    it('kills an unknown container before restarting it, with the kubelet message', () => {
      const recs = running3();
      recs[2] = record('foo3', 'unknown');
      const a = computePodActions(pod({}), runtime([sandbox()], recs), probes());
      expect(kills(a)).to.deep.equal({
        'id-foo3': ['Container is in "unknown" state, try killing it before restart', 'Unknown'],
      });
      expect(a.containersToStart).to.deep.equal([2]);
    });

    it('neither restarts nor kills anything of a pod being deleted; running ones are kept', () => {
      const recs = running3();
      recs[0] = record('foo1', 'unknown');
      recs[1] = record('foo2', 'exited', { exitCode: 1 });
      const a = computePodActions(pod({ deleting: true }), runtime([sandbox()], recs), probes());
      expect(a.containersToStart).to.deep.equal([]);
      expect(a.containersToKill.size).to.equal(0);
      expect(a.killPod).to.equal(false);
    });

    it('never restarts or kills ephemeral containers that have a record', () => {
      const a = computePodActions(
        pod({ ephemeral: ['dbg1', 'dbg2', 'dbg3'] }),
        runtime(
          [sandbox()],
          [...running3(), record('dbg1', 'unknown'), record('dbg2', 'exited', { exitCode: 2 })],
        ),
        probes(),
      );
      expect(a.ephemeralContainersToStart).to.deep.equal([2]);
      expect(a.containersToKill.size).to.equal(0);
    });
  });

  describe('sandbox recreation', () => {
    it('counts a created record with exit code 0 as succeeded under OnFailure (kubelet containerSucceeded)', () => {
      const a = computePodActions(
        pod({ restartPolicy: 'OnFailure' }),
        runtime(
          [sandbox({ state: 'notready' })],
          [record('foo1', 'created'), record('foo2', 'exited', { exitCode: 1 })],
        ),
        probes(),
      );
      expect(a).to.deep.include({ killPod: true, createSandbox: true, attempt: 1, sandboxID: 'sb1' });
      expect(a.containersToStart).to.deep.equal([1, 2]);
    });

    it('does not skip succeeded containers when the policy is unset (Always)', () => {
      const recs = running3().map((r) => ({ ...r, state: 'exited' as const }));
      const a = computePodActions(
        pod({}),
        runtime([sandbox({ state: 'notready', attempt: 3 })], recs),
        probes(),
      );
      expect(a).to.deep.include({ createSandbox: true, attempt: 4 });
      expect(a.containersToStart).to.deep.equal([0, 1, 2]);
    });

    it('replaces a sandbox in the wrong network namespace without naming it for reuse', () => {
      const a = computePodActions(pod({ hostNetwork: true }), runtime([sandbox()], running3()), probes());
      expect(a).to.deep.include({ killPod: true, createSandbox: true, sandboxID: '', attempt: 1 });
    });

    it('creates a sandbox for a pod with init containers starting from the first, whatever their records', () => {
      const a = computePodActions(
        pod({ init: ['i1', 'i2'], restartPolicy: 'OnFailure' }),
        runtime([sandbox({ state: 'notready' })], [record('i2', 'exited', { exitCode: 1 })]),
        probes(),
      );
      expect(a.initContainersToStart).to.deep.equal([0]);
      expect(a.containersToStart).to.deep.equal([]);
      expect(a.ephemeralContainersToStart).to.deep.equal([]);
    });
  });

  describe('init containers and pod kill', () => {
    it('does not look at regular containers while initialization is in progress', () => {
      const a = computePodActions(
        pod({ init: ['i1'] }),
        runtime([sandbox()], [record('i1', 'running')]),
        probes(),
      );
      expect(a.containersToStart).to.deep.equal([]);
      expect(a.killPod).to.equal(false);
    });

    it('does not take exited regular containers as proof of initialization (node reboot)', () => {
      const recs = running3().map((r) => ({ ...r, state: 'exited' as const, exitCode: 1 }));
      const a = computePodActions(pod({ init: ['i1'] }), runtime([sandbox()], recs), probes());
      expect(a.initContainersToStart).to.deep.equal([0]);
      expect(a.containersToStart).to.deep.equal([]);
    });

    it('kills a finished pod and drops sidecar restarts, but keeps the sidecar kills', () => {
      const side = sidecar('side');
      const recs = [
        record('side', 'running', { changed: true, spec: side }),
        ...running3().map((r) => ({ ...r, state: 'exited' as const })),
      ];
      const a = computePodActions(
        pod({ init: [side], restartPolicy: 'Never' }),
        runtime([sandbox()], recs),
        probes(),
      );
      expect(a.killPod).to.equal(true);
      expect(a.initContainersToStart).to.deep.equal([]);
      expect(kills(a)).to.deep.equal({ 'id-side': ['Init container side definition changed', ''] });
    });
  });

  describe('edge inputs', () => {
    it('kills a pod without containers whose sandbox is fine, and creates a bare sandbox otherwise', () => {
      const empty = pod({ containers: [] });
      expect(computePodActions(empty, runtime([sandbox()], []), probes())).to.deep.include({
        killPod: true,
        createSandbox: false,
      });
      const fresh = computePodActions(empty, runtime([], []), probes());
      expect(fresh).to.deep.include({ killPod: true, createSandbox: true, attempt: 0, sandboxID: '' });
      expect(fresh.containersToStart).to.deep.equal([]);
    });

    it('treats a null restart policy as Always', () => {
      const p = pod({});
      (p.spec as { restartPolicy: unknown }).restartPolicy = null;
      const recs = running3();
      recs[0] = record('foo1', 'exited', { exitCode: 0 });
      expect(computePodActions(p, runtime([sandbox()], recs), probes()).containersToStart).to.deep.equal([0]);
    });

    it('does not modify its inputs and returns the same record for the same inputs', () => {
      const p = pod({ init: ['i1'], ephemeral: ['dbg'] });
      const rt = runtime([sandbox()], [record('i1', 'exited'), record('foo1', 'exited', { exitCode: 3 })]);
      const before = JSON.stringify([p, rt]);
      const a = computePodActions(p, rt, probes());
      const b = computePodActions(p, rt, probes());
      expect(JSON.stringify([p, rt])).to.equal(before);
      expect({ ...a, containersToKill: [...a.containersToKill] }).to.deep.equal({
        ...b,
        containersToKill: [...b.containersToKill],
      });
    });

    it('rejects an unknown restart policy', () => {
      const p = pod({});
      (p.spec as { restartPolicy: unknown }).restartPolicy = 'Sometimes';
      expectInvalid(() => computePodActions(p, runtime([sandbox()], []), probes()), /restartPolicy/);
    });

    it('rejects duplicate container names across the init, regular and ephemeral lists', () => {
      expectInvalid(
        () => computePodActions(pod({ init: ['foo1'] }), runtime([], []), probes()),
        /duplicate container name "foo1"/,
      );
      expectInvalid(
        () => computePodActions(pod({ ephemeral: ['foo2'] }), runtime([], []), probes()),
        /duplicate/,
      );
    });

    it('rejects a pod without spec or containers list, and nameless containers', () => {
      expectInvalid(() => computePodActions({ metadata: {} } as Pod, runtime([], []), probes()), /no spec/);
      expectInvalid(
        () => computePodActions({ metadata: {}, spec: {} } as Pod, runtime([], []), probes()),
        /containers is missing/,
      );
      expectInvalid(
        () => computePodActions(pod({ containers: [{ name: '' }] }), runtime([], []), probes()),
        /has no name/,
      );
    });

    it('rejects runtime records with unknown states and sandboxes with unknown modes', () => {
      const bad = record('foo1', 'running');
      (bad as { state: string }).state = 'paused';
      expectInvalid(
        () => computePodActions(pod({}), runtime([sandbox()], [bad]), probes()),
        /unknown state "paused"/,
      );
      const sb = sandbox();
      (sb as { netns: string }).netns = 'host';
      expectInvalid(() => computePodActions(pod({}), runtime([sb], []), probes()), /network namespace/);
      expectInvalid(
        () => computePodActions(pod({}), { ...runtime([], []), containers: undefined } as never, probes()),
        /container list/,
      );
    });

    it('rejects an unknown container restart policy, and unsupported gates', () => {
      const p = pod({ init: [{ name: 'i1', restartPolicy: 'Sometimes' as never }] });
      expectInvalid(() => computePodActions(p, runtime([], []), probes()), /unsupported restartPolicy/);
      expectInvalid(
        () =>
          computePodActions(pod({}), runtime([], []), probes(), {
            featureGates: { ContainerRestartRules: false },
          }),
        /ContainerRestartRules cannot be disabled/,
      );
      expectInvalid(
        () =>
          computePodActions(pod({}), runtime([], []), probes(), {
            featureGates: { LegacySidecarContainers: true },
          }),
        /LegacySidecarContainers/,
      );
    });
  });
});

import { expect } from 'chai';
import {
  decideProbe,
  initialWorkerState,
  probeTiming,
  recordProbeOutcome,
  type ProbeTarget,
  type ProbeWorkerState,
} from '../../../../src/kubelet/prober/doprobe.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';
import { makePod, podStatus, probe, running } from './fixtures.js';

const NOW = Date.parse('2026-01-01T00:01:00Z');

function target(probeType: ProbeTarget['probeType'], p = probe()): ProbeTarget {
  return { probeType, containerName: 'c', timing: probeTiming(p) };
}

describe('prober doProbe (pure)', () => {
  it('applies the API defaults and rejects a non-positive period', () => {
    expect(probeTiming({})).to.deep.equal({
      initialDelaySeconds: 0,
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(() => probeTiming({ periodSeconds: -1 }))
      .to.throw()
      .satisfy(isInvalidArgument);
    expect(() => probeTiming({ failureThreshold: Number.NaN }))
      .to.throw()
      .satisfy(isInvalidArgument);
  });

  it('holds a startup worker after a published success too, until a new container ID', () => {
    const t = target('startup');
    const pod = makePod([{ name: 'c', startupProbe: probe() }]);
    const d = decideProbe(t, initialWorkerState, {
      pod,
      status: podStatus([running('c', 'x://1')]),
      now: NOW,
    });
    expect(d.action).to.equal('runProbe');
    const r = recordProbeOutcome(t, d.state, 'success');
    expect(r.writes).to.deep.equal([{ op: 'set', containerID: 'x://1', result: 'success' }]);
    expect(r.state.phase).to.equal('onHold');
    const again = decideProbe(t, r.state, { pod, status: podStatus([running('c', 'x://1')]), now: NOW });
    expect(again).to.deep.include({ action: 'finish', keepGoing: true, writes: [] });
    const fresh = decideProbe(t, r.state, { pod, status: podStatus([running('c', 'x://2')]), now: NOW });
    expect(fresh.action).to.equal('runProbe');
    expect(fresh.writes).to.deep.equal([
      { op: 'remove', containerID: 'x://1' },
      { op: 'set', containerID: 'x://2', result: 'unknown' },
    ]);
  });

  it('adoptedBefore: no initial readiness/startup value for a container running since before', () => {
    const pod = makePod([
      { name: 'c', readinessProbe: probe(), startupProbe: probe(), livenessProbe: probe() },
    ]);
    const adoptedBefore = Date.parse('2026-01-01T00:00:30Z');
    const old = podStatus([running('c', 'x://1', { started: true, startedAt: '2026-01-01T00:00:00Z' })]);
    const fresh = podStatus([running('c', 'x://2', { started: true, startedAt: '2026-01-01T00:00:40Z' })]);
    const writes = (type: ProbeTarget['probeType'], status: typeof old) =>
      decideProbe(target(type), initialWorkerState, { pod, status, now: NOW, adoptedBefore }).writes;
    expect(writes('readiness', old)).to.deep.equal([]);
    expect(writes('startup', old)).to.deep.equal([]);
    // Liveness keeps its initial success; a container started later gets the initial values as always.
    expect(writes('liveness', old)).to.deep.equal([{ op: 'set', containerID: 'x://1', result: 'success' }]);
    expect(writes('readiness', fresh)).to.deep.equal([
      { op: 'set', containerID: 'x://2', result: 'failure' },
    ]);
    // Without adoptedBefore: the 1.33 behaviour.
    expect(
      decideProbe(target('readiness'), initialWorkerState, { pod, status: old, now: NOW }).writes,
    ).to.deep.equal([{ op: 'set', containerID: 'x://1', result: 'failure' }]);
  });

  it('keeps the run count across a container change (a kubelet quirk)', () => {
    const t = target('readiness', probe({ successThreshold: 3 }));
    const state: ProbeWorkerState = {
      phase: 'probing',
      containerID: 'x://1',
      lastResult: 'success',
      resultRun: 2,
    };
    const pod = makePod([{ name: 'c', readinessProbe: probe() }]);
    const d = decideProbe(t, state, {
      pod,
      status: podStatus([running('c', 'x://2', { started: true })]),
      now: NOW,
    });
    const r = recordProbeOutcome(t, d.state, 'success');
    expect(r.writes).to.deep.equal([{ op: 'set', containerID: 'x://2', result: 'success' }]);
  });

  it('counts warning as success and throws an error outcome away', () => {
    const t = target('liveness', probe({ failureThreshold: 1 }));
    const s: ProbeWorkerState = {
      phase: 'probing',
      containerID: 'x://1',
      lastResult: undefined,
      resultRun: 0,
    };
    expect(recordProbeOutcome(t, s, 'warning').writes).to.deep.equal([
      { op: 'set', containerID: 'x://1', result: 'success' },
    ]);
    expect(recordProbeOutcome(t, s, 'error')).to.deep.equal({ state: s, writes: [] });
  });

  it('finds a restartable init container among the init statuses', () => {
    const t = target('readiness');
    const pod = makePod([], [{ name: 'c', restartPolicy: 'Always', readinessProbe: probe() }]);
    const status = podStatus([], [running('c', 'x://9', { started: true })]);
    expect(decideProbe(t, initialWorkerState, { pod, status, now: NOW }).action).to.equal('runProbe');
  });

  it('ignores a status entry without a container ID', () => {
    const t = target('readiness');
    const pod = makePod([{ name: 'c', readinessProbe: probe() }]);
    const status = podStatus([{ ...running('c', ''), containerID: undefined }]);
    const d = decideProbe(t, initialWorkerState, { pod, status, now: NOW });
    expect(d).to.deep.include({ action: 'finish', keepGoing: true, writes: [] });
    expect(d.state).to.equal(initialWorkerState);
  });

  it('measures the initial delay in whole seconds from state.running.startedAt', () => {
    const t = target('liveness', probe({ initialDelaySeconds: 60 }));
    const pod = makePod([{ name: 'c', livenessProbe: probe() }]);
    const at = (s: string) => podStatus([running('c', 'x://1', { started: true, startedAt: s })]);
    expect(
      decideProbe(t, initialWorkerState, { pod, status: at('2026-01-01T00:00:01Z'), now: NOW }).action,
    ).to.equal('finish');
    expect(
      decideProbe(t, initialWorkerState, { pod, status: at('2026-01-01T00:00:00Z'), now: NOW }).action,
    ).to.equal('runProbe');
  });

  it('stops on a terminated container only under restartPolicy Never (unset behaves as Always)', () => {
    const t = target('readiness');
    const term = podStatus([
      {
        name: 'c',
        containerID: 'x://1',
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode: 1 } },
      },
    ]);
    const unset = makePod([{ name: 'c', readinessProbe: probe() }]);
    const never = makePod([{ name: 'c', readinessProbe: probe() }], [], { restartPolicy: 'Never' });
    expect(decideProbe(t, initialWorkerState, { pod: unset, status: term, now: NOW })).to.deep.include({
      keepGoing: true,
    });
    expect(decideProbe(t, initialWorkerState, { pod: never, status: term, now: NOW })).to.deep.include({
      keepGoing: false,
    });
  });
});

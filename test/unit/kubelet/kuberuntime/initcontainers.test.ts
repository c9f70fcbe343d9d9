import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import type { KubeContainerStatus } from '../../../../src/kubelet/container/types.js';
import { computeInitContainerActions } from '../../../../src/kubelet/kuberuntime/initcontainers.js';
import type { PodActions } from '../../../../src/kubelet/kuberuntime/podactions.js';
import type { ProbeResult } from '../../../../src/kubelet/prober/types.js';
import { pod, probes, record, sidecar } from './fixtures.js';

function run(
  p: Pod,
  records: KubeContainerStatus[],
  liveness: Record<string, ProbeResult> = {},
  startup: Record<string, ProbeResult> = {},
) {
  const changes: PodActions = {
    killPod: false,
    createSandbox: false,
    sandboxID: '',
    attempt: 0,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
    containersToReset: [],
  };
  const initialized = computeInitContainerActions(
    p,
    { containers: records },
    probes(liveness, startup),
    changes,
  );
  const kills = Object.fromEntries(
    [...changes.containersToKill].map(([id, k]) => [id, [k.message, k.reason]]),
  );
  return { initialized, start: changes.initContainersToStart, killPod: changes.killPod, kills };
}

describe('computeInitContainerActions', () => {
  it('is initialized at once without init containers', () => {
    expect(run(pod({}), [])).to.deep.equal({ initialized: true, start: [], killPod: false, kills: {} });
  });

  it('starts the next regular init container after one succeeded, and waits for a running one', () => {
    const p = pod({ init: ['i1', 'i2', 'i3'] });
    expect(run(p, [record('i1', 'exited')]).start).to.deep.equal([1]);
    expect(run(p, [record('i2', 'running'), record('i1', 'exited')]).start).to.deep.equal([]);
    expect(run(p, [record('i3', 'exited'), record('i2', 'exited')])).to.include({ initialized: true });
  });

  it('kills the pod when a regular init container is unknown under Never, dropping other starts', () => {
    const p = pod({ init: [sidecar('s1'), 'i2'], restartPolicy: 'Never' });
    const r = run(p, [record('i2', 'unknown'), record('s1', 'exited')]);
    expect(r).to.deep.equal({ initialized: false, start: [], killPod: true, kills: {} });
  });

  it('kills an unknown regular init container before restarting it when restarts are allowed', () => {
    const r = run(pod({ init: ['i1'], restartPolicy: 'OnFailure' }), [record('i1', 'unknown')]);
    expect(r.start).to.deep.equal([0]);
    expect(r.kills).to.deep.equal({
      'id-i1': ['Init container is in "unknown" state, try killing it before restart', 'Unknown'],
    });
  });

  it('restarts a sidecar whose definition changed, and still starts the next init container', () => {
    const s1 = sidecar('s1');
    const r = run(pod({ init: [s1, 'i2'] }), [record('s1', 'running', { changed: true, spec: s1 })]);
    expect(r.start).to.deep.equal([0, 1]);
    expect(r.kills).to.deep.equal({ 'id-s1': ['Init container s1 definition changed', ''] });
  });

  it('waits on a sidecar whose startup probe has no result yet or reports unknown', () => {
    const s1 = sidecar('s1', { startup: true });
    const p = pod({ init: [s1, 'i2'] });
    const recs = [record('s1', 'running', { spec: s1 })];
    expect(run(p, recs).start).to.deep.equal([]);
    expect(run(p, recs, {}, { 'id-s1': 'unknown' }).start).to.deep.equal([]);
    expect(run(p, recs, {}, { 'id-s1': 'success' }).start).to.deep.equal([1]);
  });

  it('restarts a sidecar failing its startup or liveness probe, with the kubelet wording', () => {
    const s1 = sidecar('s1', { startup: true, liveness: true });
    const p = pod({ init: [s1] });
    const recs = [record('s1', 'running', { spec: s1 })];
    expect(run(p, recs, {}, { 'id-s1': 'failure' }).kills).to.deep.equal({
      'id-s1': ['Init container s1 failed startup probe', 'StartupProbe'],
    });
    const live = run(p, recs, { 'id-s1': 'failure' }, { 'id-s1': 'success' });
    expect(live.kills).to.deep.equal({
      'id-s1': ['Init container s1 failed liveness probe', 'LivenessProbe'],
    });
    // Initialization is reached even though the sidecar is being restarted.
    expect(live).to.include({ initialized: true });
    expect(live.start).to.deep.equal([0]);
  });

  it('never restarts a sidecar for its readiness: readiness is no input, only liveness and startup are', () => {
    // As upstream's "restartable init container readiness probe, failure": a webserver sidecar whose readiness
    // probe always fails, next to a regular container. Its liveness and startup caches know nothing of it.
    const web = { ...sidecar('web', { liveness: true }), readinessProbe: { httpGet: { port: 81 } } };
    const p = pod({ init: [web], containers: ['main'] });
    const recs = [record('main', 'running'), record('web', 'running', { spec: web })];
    expect(run(p, recs)).to.deep.equal({ initialized: true, start: [], killPod: false, kills: {} });
    expect(run(p, recs, { 'id-web': 'success' })).to.deep.equal({
      initialized: true,
      start: [],
      killPod: false,
      kills: {},
    });
  });

  it('brings back a sidecar whose record vanished after initialization, but not regular init containers', () => {
    const p = pod({ init: ['i1', sidecar('s2'), 'i3'] });
    const r = run(p, [record('foo1', 'running')]);
    expect(r).to.deep.equal({ initialized: true, start: [1], killPod: false, kills: {} });
  });

  it('restarts a created regular init container that failed to start', () => {
    expect(
      run(pod({ init: ['i1', 'i2'] }), [record('i2', 'created'), record('i1', 'exited')]).start,
    ).to.deep.equal([1]);
  });
});

// Kubelet wiring under a FakeClock, on the simulated runtime, with an in-memory pod source and API: the
// constructor's checks, adoption after a restart (nothing recreated), orphan cleanup, PLEG health, and a
// stop that leaves the runtime alone.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import type { VolumeMount } from '../../../src/api/volumes.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet, meaningfulChange } from '../../../src/kubelet/shell/kubelet.js';
import type { KubeletDeps } from '../../../src/kubelet/shell/kubelet.js';
import { KindError } from '../../../src/util/errors.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

/** The pod's status is Failed with this reason and message, and this Event was recorded. */
function expectFailed(
  k: Kubelet,
  eventMessages: string[],
  uid: string,
  want: { reason: string; message: string; event: string },
): void {
  expect(k.statusManager.getPodStatus(asPodUID(uid))).to.include({
    phase: 'Failed',
    reason: want.reason,
    message: want.message,
  });
  expect(eventMessages).to.include(want.event);
}

describe('Kubelet', () => {
  it('rejects missing or inconsistent dependencies before anything runs', () => {
    const { deps } = setup();
    const ok = deps();
    const bad: [string, Partial<KubeletDeps>][] = [
      ['nodeName is required', { nodeName: '' }],
      ['is not an IP', { nodeIP: 'nope' }],
      ['runtimeKind cri but runtime is sim', { runtimeKind: 'cri' }],
      ['podInformer is required', { podInformer: undefined as never }],
      [
        "settings.podNetwork must be 'host' or 'cni'",
        { settings: { ...ok.settings, podNetwork: 'x' as never } },
      ],
      [
        'settings.plegRelistPeriodMs must be a positive number',
        { settings: { ...ok.settings, plegRelistPeriodMs: 0 } },
      ],
    ];
    for (const [msg, over] of bad) {
      expect(() => new Kubelet({ ...ok, ...over }), msg).to.throw(KindError, msg);
    }
  });

  it('treats only spec, metadata and deletion changes as worth a sync', () => {
    const a = mkPod('a');
    const statusOnly = {
      ...a,
      status: { phase: 'Running' as const },
      metadata: { ...a.metadata, resourceVersion: '2' },
    };
    expect(meaningfulChange(a, statusOnly)).to.equal(false);
    expect(meaningfulChange(a, { ...a, metadata: { ...a.metadata, deletionTimestamp: 'x' } })).to.equal(true);
    expect(meaningfulChange(a, { ...a, metadata: { ...a.metadata, labels: { x: 'y' } } })).to.equal(true);
    expect(meaningfulChange(a, { ...a, spec: { ...a.spec, activeDeadlineSeconds: 5 } })).to.equal(true);
  });

  it('runs pods, is healthy after relisting, and stops without touching the runtime', async () => {
    const { clock, runtime, creates, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    const k = new Kubelet(deps());
    expect(k.health()).to.deep.equal(['PLEG is not healthy: pleg has yet to be successful']);
    await start(k, clock);
    await advance(clock, 3_000);
    expect(creates).to.deep.equal(['p-a/app']);
    expect(k.health()).to.deep.equal([]);
    expect(api.patches).to.include('p-a');
    await k.stop(0);
    const running = (await runtime.listContainers()).filter((c) => c.state === 'running');
    expect(running.length).to.equal(1);
    // Nothing happens after stop, however much time passes.
    const patches = api.patches.length;
    await advance(clock, 70_000, 1_000);
    expect(api.patches.length).to.equal(patches);
    expect(creates.length).to.equal(1);
  });

  it('adopts running containers after a restart and kills pods the API no longer has', async () => {
    const { clock, runtime, creates, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    api.pods.set('p-b', mkPod('b'));
    const first = new Kubelet(deps());
    await start(first, clock);
    await advance(clock, 3_000);
    expect([...creates].sort()).to.deep.equal(['p-a/app', 'p-b/app']);
    await first.stop(0);

    api.pods.delete('p-b'); // deleted while no kubelet ran
    const second = new Kubelet(deps());
    await start(second, clock);
    await advance(clock, 6_000);
    expect([...creates].sort()).to.deep.equal(['p-a/app', 'p-b/app']);
    const left = await runtime.listContainers();
    expect(left.map((c) => c.labels['io.kubernetes.pod.name'])).to.deep.equal(['p-a']);
    expect((await runtime.listPodSandbox()).map((s) => s.metadata.name)).to.deep.equal(['p-a']);
    await second.stop(0);
  });

  it('removes the older dead instances of a crashing container when it dies, before any GC period', async () => {
    const { clock, runtime, creates, api, deps } = setup();
    api.pods.set(
      'p-c',
      mkPod('c', { containers: [{ name: 'app', image: 'img:1', command: ['sh', '-c', 'exit 1'] }] }),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    // Runs at 0 s, after a 10 s and a 20 s back-off: three instances, well inside the 60 s GC period.
    await advance(clock, 40_000, 200);
    expect(creates.filter((c) => c === 'p-c/app').length).to.be.at.least(3);
    const apps = async () => (await runtime.listContainers()).filter((c) => c.metadata.name === 'app');
    // The newest instance may have died within the last relist period: give the PLEG up to 3 s to see it (the
    // next back-off is 40 s, so no new instance starts meanwhile).
    for (let waited = 0; waited < 3_000; waited += 100) {
      if ((await apps()).filter((c) => c.state === 'exited').length <= 1) break;
      await advance(clock, 100);
    }
    const left = await apps();
    const exited = left.filter((c) => c.state === 'exited');
    // The newest dead instance stays (restart count, lastState, logs --previous); older ones are gone.
    expect(exited.length, JSON.stringify(left.map((c) => [c.metadata.attempt, c.state]))).to.equal(1);
    expect(Math.max(...left.map((c) => c.metadata.attempt ?? 0))).to.be.at.least(2);
    await k.stop(0);
  });

  it('lists the runtime before the pods are known: the node is healthy while the pod list is still out', async () => {
    const { clock, creates, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    let synced!: () => void;
    const sync = new Promise<void>((resolve) => (synced = resolve));
    const base = deps();
    const k = new Kubelet({ ...base, podInformer: { ...base.podInformer, waitForSync: () => sync } });
    const seen: string[] = [];
    void k.runtimeListed.then(() => seen.push('runtime listed'));
    void k.ready.then(() => seen.push('ready'));
    k.start();
    await advance(clock, 3_000);
    // Three seconds without a pod list: the PLEG has kept relisting, so the node's health is the runtime's.
    expect(seen).to.deep.equal(['runtime listed']);
    expect(k.health()).to.deep.equal([]);
    expect(creates).to.deep.equal([]);
    await advance(clock, 200_000, 1_000);
    expect(k.health(), 'the PLEG still relists after its threshold').to.deep.equal([]);
    synced();
    await advance(clock, 3_000);
    expect(seen).to.deep.equal(['runtime listed', 'ready']);
    expect(creates).to.deep.equal(['p-a/app']);
    await k.stop(0);
  });

  it('waits for a runtime that does not answer at start, then starts', async () => {
    const { clock, runtime, creates, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    const list = runtime.listPodSandbox.bind(runtime);
    let down = true;
    runtime.listPodSandbox = (f) =>
      down ? Promise.reject(new KindError('Unavailable', 'runtime unavailable')) : list(f);
    const k = new Kubelet(deps());
    k.start();
    let ready = false;
    void k.ready.then(() => (ready = true));
    await advance(clock, 5_000);
    expect(ready).to.equal(false);
    expect(creates).to.deep.equal([]);
    down = false;
    await advance(clock, 11_000);
    expect(ready).to.equal(true);
    expect(creates).to.deep.equal(['p-a/app']);
    await k.stop(0);
  });

  it('a stop ends the wait for a runtime that never answers', async () => {
    const { clock, runtime, deps } = setup();
    runtime.listPodSandbox = () => Promise.reject(new KindError('Unavailable', 'runtime unavailable'));
    const k = new Kubelet(deps());
    k.start();
    await advance(clock, 2_000);
    await k.stop(0);
    for (const p of [k.runtimeListed, k.ready]) {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as KindError).kind).to.equal('Unavailable');
    }
    expect(clock.pendingTimers(), 'timers left after stop').to.equal(0);
  });

  it('rejects ready when stopped before it started', async () => {
    const { deps } = setup();
    const k = new Kubelet({
      ...deps(),
      podInformer: { waitForSync: () => new Promise(() => undefined), byIndex: () => [] },
    });
    k.start();
    await k.stop(0);
    let err: unknown;
    try {
      await k.ready;
    } catch (e) {
      err = e;
    }
    expect((err as KindError).kind).to.equal('Unavailable');
  });

  it('follows readiness gates others set: a status-only update whose gate disagrees with Ready is synced', async () => {
    const { clock, api, deps } = setup();
    const gate = 'k8s.io/test-condition1';
    api.pods.set('p-g', mkPod('g', { readinessGates: [{ conditionType: gate }] }));
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 3_000);
    const ready = () =>
      k.statusManager.getPodStatus(asPodUID('g'))?.conditions?.find((c) => c.type === 'Ready');
    expect(ready()).to.include({ status: 'False', reason: 'ReadinessGatesNotReady' });

    // `kubectl patch --subresource=status` sets the gate: the informer delivers a status-only update.
    const old = api.pods.get('p-g')!;
    const status = k.statusManager.getPodStatus(asPodUID('g'))!;
    const patched: Pod = {
      ...old,
      metadata: { ...old.metadata, resourceVersion: '3' },
      status: { ...status, conditions: [...(status.conditions ?? []), { type: gate, status: 'True' }] },
    };
    api.pods.set('p-g', patched);
    k.handlePodUpdate(patched, old);
    // Well before any resync: the update itself is acted on.
    await advance(clock, 500);
    expect(ready()).to.include({ status: 'True' });
    await k.stop(0);
  });

  it('kills a pod at its active deadline: Failed with DeadlineExceeded, a Normal event, containers stopped', async () => {
    const { clock, runtime, api, deps, eventMessages } = setup();
    api.pods.set('p-d', mkPod('d', { activeDeadlineSeconds: 5 }));
    const k = new Kubelet(deps());
    await start(k, clock);
    const startedAt = clock.now();
    await advance(clock, 4_000);
    expect(k.statusManager.getPodPhase(asPodUID('d'))).to.equal('Running');
    // The deadline is 5 s after the start time (whole seconds); allow the 1 s of the kubelet's sync loop.
    await advance(clock, 2_500);
    expect(clock.now() - startedAt).to.be.below(7_000);
    expectFailed(k, eventMessages, 'd', {
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
      event: 'Normal DeadlineExceeded: Pod was active on the node longer than the specified deadline',
    });
    expect((await runtime.listContainers()).map((c) => c.state)).to.deep.equal(['exited']);
    expect(k.podWorkers.state(asPodUID('d'))).to.equal('terminated');
    await k.stop(0);
  });

  it('admits the pods it finds at start oldest first, whatever order the informer lists them in', async () => {
    const { clock, api, deps, eventMessages, creates } = setup();
    const big = (uid: string, created: string): Pod => {
      const p = mkPod(uid, {
        containers: [{ name: 'app', image: 'img:1', resources: { requests: { cpu: '3' } } }],
      });
      p.metadata.creationTimestamp = created;
      return p;
    };
    // Listed newest first; the node has 4 CPUs, room for one of the two.
    api.pods.set('p-new', big('new', '2026-01-01T00:00:10Z'));
    api.pods.set('p-old', big('old', '2026-01-01T00:00:09Z'));
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 1_000);
    expect(creates).to.deep.equal(['p-old/app']);
    expect(k.statusManager.getPodStatus(asPodUID('new'))).to.include({ phase: 'Failed', reason: 'OutOfcpu' });
    expect(eventMessages.filter((m) => m.startsWith('Warning OutOfcpu'))).to.have.length(1);
    await k.stop(0);
  });

  it('rejects a pod with a sysctl the node does not allow, and admits it once the settings allow it', async () => {
    const sysctlPod = (uid: string) =>
      mkPod(uid, { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] } });
    const { clock, api, deps, eventMessages, creates } = setup();
    api.pods.set('p-s', sysctlPod('s'));
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 1_000);
    expectFailed(k, eventMessages, 's', {
      reason: 'SysctlForbidden',
      message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
      event: 'Warning SysctlForbidden: forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
    expect(creates).to.deep.equal([]);
    await k.stop(0);

    const allowed = setup();
    allowed.api.pods.set('p-t', sysctlPod('t'));
    const base = allowed.deps();
    const k2 = new Kubelet({
      ...base,
      settings: { ...base.settings, allowedUnsafeSysctls: ['kernel.msg*'] },
    });
    await start(k2, allowed.clock);
    await advance(allowed.clock, 1_000);
    expect(allowed.creates).to.deep.equal(['p-t/app']);
    await k2.stop(0);

    expect(
      () => new Kubelet({ ...base, settings: { ...base.settings, allowedUnsafeSysctls: ['foo'] } }),
    ).to.throw(KindError, 'settings.allowedUnsafeSysctls: the sysctls "foo" are not known to be namespaced');
  });

  it('NodeDeclaredFeatures: refuses a pod needing an undeclared feature, warns of such an update and syncs it', async () => {
    const { clock, api, deps, eventMessages, creates } = setup();
    api.pods.set(
      'p-all',
      mkPod('all', {
        containers: [
          {
            name: 'app',
            image: 'img:1',
            volumeMounts: [{ name: 'v', mountPath: '/v', bindMountOptions: ['noexec'] } as VolumeMount],
          },
        ],
      }),
    );
    // A Memory emptyDir's size (InPlacePodVerticalScalingMemoryBackedVolumes, a feature the node does not declare).
    const withMemoryVolume = (size: string): Pod => {
      const p = mkPod('i', {
        containers: [{ name: 'app', image: 'img:1' }],
        volumes: [{ name: 'm', emptyDir: { medium: 'Memory', sizeLimit: size } }],
      });
      p.metadata.resourceVersion = size;
      return p;
    };
    const before = withMemoryVolume('64Mi');
    api.pods.set('p-i', before);
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 1_000);
    const message = 'Pod requires node features that are not available: VolumeBindMountOptions';
    expectFailed(k, eventMessages, 'all', {
      reason: 'PodFeatureUnsupported',
      message: `Pod was rejected: ${message}`,
      event: `Warning PodFeatureUnsupported: ${message}`,
    });
    expect(creates).to.not.include('p-all/app');

    // An admitted pod's Memory emptyDir resized: a warning, and the update still reaches its worker.
    const after = withMemoryVolume('128Mi');
    api.pods.set('p-i', after);
    k.handlePodUpdate(after, before);
    await advance(clock, 200);
    expect(eventMessages).to.include(
      'Warning FailedNodeDeclaredFeaturesCheck: Pod requires node features that are not available: InPlacePodVerticalScalingMemoryBackedVolumes',
    );
    expect(k.podManager.getPodByUID(asPodUID('i'))?.metadata.resourceVersion).to.equal('128Mi');
    // A rejected pod's update is not checked (it holds no allocation).
    const count = eventMessages.length;
    const all = api.pods.get('p-all')!;
    const allAfter: Pod = { ...all, metadata: { ...all.metadata, labels: { x: 'y' } } };
    k.handlePodUpdate(allAfter, all);
    await advance(clock, 200);
    expect(
      eventMessages.slice(count).filter((m) => m.includes('FailedNodeDeclaredFeaturesCheck')),
    ).to.deep.equal([]);
    await k.stop(0);
  });

  it('never restarts a sidecar for failing its readiness probe (only liveness and startup restart)', async () => {
    const { clock, api, deps, creates, eventMessages } = setup();
    api.pods.set(
      'p-r',
      mkPod('r', {
        initContainers: [
          {
            name: 'web',
            image: 'img:1',
            args: ['test-webserver', '--port', '80'],
            ports: [{ containerPort: 80 }],
            restartPolicy: 'Always',
            readinessProbe: { httpGet: { path: '/', port: 81 }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
        containers: [{ name: 'main', image: 'img:1', args: ['pause'] }],
      }),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 70_000, 250);
    const status = k.statusManager.getPodStatus(asPodUID('r'))!;
    expect(creates).to.deep.equal(['p-r/web', 'p-r/main']);
    expect(status.initContainerStatuses?.map((c) => [c.name, c.ready, c.restartCount])).to.deep.equal([
      ['web', false, 0],
    ]);
    expect(status.containerStatuses?.map((c) => c.restartCount)).to.deep.equal([0]);
    expect(status.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'False' });
    // The probe did run and fail, over and over.
    expect(
      eventMessages.filter((e) => e.startsWith('Warning Unhealthy: Readiness probe failed')).length,
    ).to.be.above(10);
    await k.stop(0);
  });
});

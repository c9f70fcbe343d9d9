// KubeletPodSyncer (src/kubelet/shell/kubelet_sync.ts) with fakes around it: admission, the order of status and
// runtime calls in syncPod / syncTerminatingPod / syncTerminatedPod, and the node's view of pod IPs.
import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../src/api/core.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type KubeContainerStatus as RuntimeRecord,
  type RuntimePodStatus,
} from '../../../src/kubelet/container/types.js';
import { ActiveDeadlineHandler } from '../../../src/kubelet/activedeadline.js';
import { AllocationManager } from '../../../src/kubelet/allocation/manager.js';
import { PodResizeConditions } from '../../../src/kubelet/status/resizeconditions.js';
import {
  changedRuntime,
  KubeletPodSyncer,
  type KubeletPodSyncerDeps,
} from '../../../src/kubelet/shell/kubelet_sync.js';
import { PodSyncError, type PodSyncResult } from '../../../src/kubelet/kuberuntime/shell/manager.js';
import type { KillPodOptions, WorkerState } from '../../../src/kubelet/podworkers.js';
import { ResultsManager } from '../../../src/kubelet/prober/results.js';
import { ReasonCache } from '../../../src/kubelet/reasoncache.js';
import { FakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import type { MountPodResult } from '../../../src/kubelet/volumemanager/volumemanager.js';
import { SyncCancel } from '../../../src/kubelet/util/synccancel.js';

const NODE_IP = '192.168.1.10';
const ctx = () => new SyncCancel();

function mkPod(
  uid: string,
  cpu?: string,
  extra: { status?: PodStatus; deleted?: boolean; hostNetwork?: boolean } = {},
): Pod {
  return {
    metadata: {
      uid,
      name: `p-${uid}`,
      namespace: 'ns',
      ...(extra.deleted ? { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 5 } : {}),
    },
    spec: {
      nodeName: 'n1',
      containers: [{ name: 'app', image: 'img', ...(cpu ? { resources: { requests: { cpu } } } : {}) }],
      ...(extra.hostNetwork ? { hostNetwork: true } : {}),
    },
    status: extra.status ?? { phase: 'Pending' },
  };
}

const rec = (state: RuntimeRecord['state'], extra: Partial<RuntimeRecord> = {}): RuntimeRecord => ({
  id: asContainerID(`c-${state}`),
  name: 'app',
  state,
  runtimeType: 'sim',
  restartCount: 0,
  hash: 'h',
  startedAt: Date.UTC(2026, 0, 1),
  ...(state === 'exited' ? { exitCode: 0, reason: 'Completed', finishedAt: Date.UTC(2026, 0, 1, 0, 1) } : {}),
  ...extra,
});

function rt(uid: string, containers: RuntimeRecord[], sandboxReady = true): RuntimePodStatus {
  return {
    uid: asPodUID(uid),
    name: `p-${uid}`,
    namespace: 'ns',
    sandboxes:
      containers.length || sandboxReady
        ? [
            {
              id: asSandboxID('sb'),
              state: sandboxReady ? 'ready' : 'notready',
              attempt: 0,
              ip: '10.88.0.5',
              netns: 'pod',
            },
          ]
        : [],
    containers,
    ips: sandboxReady ? ['10.88.0.5'] : [],
  };
}

class Fakes {
  calls: string[] = [];
  statuses = new Map<string, PodStatus>();
  events: string[] = [];
  states = new Map<string, WorkerState>();
  pods = new Map<string, Pod>();
  runtimeViews: RuntimePodStatus[] = [];
  lastView: RuntimePodStatus | undefined;
  syncError: PodSyncError | undefined;
  started: number[] = [];
  clock = new FakeClock();
  mountResult: MountPodResult = { ok: true, volumes: new Map() };
  current: KubeletPodSyncer | undefined;
  syncedPods: Pod[] = [];
  allocation: AllocationManager | undefined;
  syncResult: PodSyncResult | undefined;

  /** A syncer over these fakes; its admitted pods are what the allocation manager measures against. */
  syncer(over: Partial<KubeletPodSyncerDeps> = {}): KubeletPodSyncer {
    this.current = new KubeletPodSyncer(this.deps(over));
    return this.current;
  }

  /** The next runtime view (the PLEG cache's entry, or what a relist of the pod finds); the last one repeats. */
  view(): RuntimePodStatus {
    this.lastView = this.runtimeViews.length > 1 ? this.runtimeViews.shift()! : this.runtimeViews[0]!;
    return this.lastView;
  }

  deps(over: Partial<KubeletPodSyncerDeps> = {}): KubeletPodSyncerDeps {
    const ok = (): PodSyncResult => ({ results: [] });
    const acted = (action: string): PodSyncResult =>
      ({ results: [{ action, target: 'app' }] }) as unknown as PodSyncResult;
    const resizeConditions = new PodResizeConditions(this.clock);
    const node = {
      name: 'n1',
      labels: {},
      taints: [],
      allocatable: new Map([
        ['cpu', 1000],
        ['pods', 10],
      ]),
    };
    return {
      nodeIPs: [NODE_IP],
      podNetwork: 'cni',
      clock: this.clock,
      logger: silentLogger,
      record: (pod, type, reason, message) => this.events.push(`${type} ${reason} ${message}`),
      node: () => node,
      podManager: { getPodByUID: (uid) => this.pods.get(uid) },
      volumes: {
        mountPod: async () => {
          this.calls.push('mountPod');
          return this.mountResult;
        },
        unmountPod: async () => void this.calls.push('unmountPod'),
      },
      statusManager: {
        peekPodStatus: (uid) => this.statuses.get(uid),
        getPodPhase: (uid) => this.statuses.get(uid)?.phase,
        setPodStatus: (pod, status) => {
          this.calls.push(`setPodStatus ${status.phase}`);
          this.statuses.set(pod.metadata.uid!, structuredClone(status));
        },
        terminatePod: () => this.calls.push('terminatePod'),
      },
      prober: {
        addPod: () => this.calls.push('prober.addPod'),
        updatePod: () => undefined,
        stopLivenessAndStartup: () => this.calls.push('prober.stopLivenessAndStartup'),
        removePod: () => this.calls.push('prober.removePod'),
        updatePodStatus: (_pod, s) => {
          for (const c of s.containerStatuses ?? []) {
            c.started = !!c.state?.running;
            if (c.started) c.ready = true;
          }
        },
      },
      runtime: {
        syncPod: async (_ctx, pod) => {
          this.calls.push('runtime.syncPod');
          this.syncedPods.push(pod);
          if (this.syncResult) return this.syncResult;
          return this.syncError ? { results: [], error: this.syncError } : acted('StartContainer');
        },
        killPod: async (_c, _p, _r, grace) => {
          this.calls.push(`runtime.killPod grace=${grace}`);
          return acted('KillContainer');
        },
        removePod: async () => {
          this.calls.push('runtime.removePod');
          return ok();
        },
      },
      relist: async () => {
        this.calls.push('relist');
        return this.view();
      },
      probes: { liveness: new ResultsManager('liveness'), startup: new ResultsManager('startup') },
      reasonCache: new ReasonCache(),
      workerState: (uid) => this.states.get(uid) ?? 'syncing',
      onPodStarted: (ms) => this.started.push(ms),
      resizeConditions,
      allocation: (this.allocation = new AllocationManager({
        conditions: resizeConditions,
        node: () => node,
        getPodByUID: (uid) => this.pods.get(uid),
        activePods: () => this.current?.activePods() ?? [],
        record: (_pod, type, reason, message) => this.events.push(`${type} ${reason} ${message}`),
        triggerPodSync: (pod) => this.calls.push(`triggerPodSync ${pod.metadata.uid}`),
        logger: silentLogger,
      })),
      ...over,
    };
  }
}

describe('KubeletPodSyncer', () => {
  describe('in-place resize', () => {
    const applied = (milli: number): RuntimeRecord['resources'] => ({ cpuRequestMilli: milli });
    const withGeneration = (p: Pod, generation: number): Pod => ({
      ...p,
      metadata: { ...p.metadata, generation },
    });
    /** Fakes and a syncer that has created pod a (generation 1) running with 300m applied. */
    async function runningAt300m() {
      const f = new Fakes();
      const s = f.syncer();
      const a = withGeneration(mkPod('a', '300m'), 1);
      f.pods.set('a', a);
      f.runtimeViews = [rt('a', [rec('running', { resources: applied(300) })])];
      await s.syncPod(ctx(), 'create', a, f.view());
      return { f, s };
    }

    it('syncs the allocated pod, reports applied and allocated resources, and completes the resize', async () => {
      const { f, s } = await runningAt300m();
      const first = f.statuses.get('a')!.containerStatuses![0]!;
      expect([first.resources, first.allocatedResources]).to.deep.equal([
        { requests: { cpu: '300m' } },
        { cpu: '300m' },
      ]);

      // Too big to fit next to nothing else: Infeasible; the sync still runs the old allocation.
      const huge = withGeneration(mkPod('a', '2'), 2);
      f.pods.set('a', huge);
      const allocation = f.allocation!;
      allocation.handlePodUpdate(huge);
      await s.syncPod(ctx(), 'update', huge, f.view());
      expect(f.syncedPods.at(-1)!.spec.containers[0]!.resources?.requests?.cpu).to.equal('300m');
      const infeasible = f.statuses.get('a')!.conditions!.find((c) => c.type === 'PodResizePending')!;
      expect([infeasible.reason, infeasible.observedGeneration]).to.deep.equal(['Infeasible', 2]);
      expect(f.events.at(-1)).to.match(/^Warning ResizeInfeasible Pod resize Infeasible: /);

      // A resize that fits: allocated at once, actuated by the runtime sync, completed when the runtime agrees.
      const fits = withGeneration(mkPod('a', '800m'), 3);
      f.pods.set('a', fits);
      allocation.handlePodUpdate(fits);
      expect(f.events.at(-1)).to.match(/^Normal ResizeStarted Pod resize started: .*"generation":3/);
      f.runtimeViews = [
        rt('a', [rec('running', { resources: applied(300) })]),
        rt('a', [rec('running', { resources: applied(800) })]),
      ];
      await s.syncPod(ctx(), 'update', fits, f.view());
      expect(f.syncedPods.at(-1)!.spec.containers[0]!.resources?.requests?.cpu).to.equal('800m');
      const st = f.statuses.get('a')!;
      expect(st.conditions!.filter((c) => c.type.startsWith('PodResize'))).to.deep.equal([]);
      expect(st.containerStatuses![0]!.resources).to.deep.equal({ requests: { cpu: '800m' } });
      expect(f.events.at(-1)).to.match(/^Normal ResizeCompleted Pod resize completed: .*"generation":3/);
    });

    it('keeps PodResizeInProgress with reason Error and records ResizeError when the runtime refuses', async () => {
      const { f, s } = await runningAt300m();
      const bigger = withGeneration(mkPod('a', '500m'), 2);
      f.pods.set('a', bigger);
      f.allocation!.handlePodUpdate(bigger);
      f.syncResult = {
        results: [
          {
            action: 'ResizePodInPlace',
            target: 'ns/p-a',
            error: 'ResizePodInPlaceError',
            message: 'cgroup busy',
          },
        ],
        error: new PodSyncError('Unknown', 'failed to "ResizePodInPlace"', []),
      };
      let err: unknown;
      try {
        await s.syncPod(ctx(), 'update', bigger, f.view());
      } catch (e) {
        err = e;
      }
      expect(err, 'the pod worker retries').to.be.instanceOf(PodSyncError);
      const c = f.statuses.get('a')!.conditions!.find((x) => x.type === 'PodResizeInProgress')!;
      expect([c.reason, c.message, c.observedGeneration]).to.deep.equal(['Error', 'cgroup busy', 2]);
      expect(f.events.at(-1)).to.match(
        /^Warning ResizeError Pod resize error: .*"generation":2,"error":"cgroup busy"/,
      );
      expect(s.resizeSyncDue(bigger)).to.equal(1000);
    });
  });

  it('admits pods in order and rejects one that does not fit: Event, Failed status, never the runtime', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('running')])];
    expect(await s.syncPod(ctx(), 'create', mkPod('a', '800m'), f.view())).to.deep.equal({
      isTerminal: false,
    });
    f.calls = [];
    const b = mkPod('b', '500m');
    expect(await s.syncPod(ctx(), 'create', b, f.view())).to.deep.equal({ isTerminal: true });
    expect(f.events).to.deep.equal([
      "Warning OutOfcpu Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000",
    ]);
    expect(f.statuses.get('b')).to.deep.equal({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message:
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 800, capacity: 1000",
      qosClass: 'Burstable',
    });
    expect(s.isRejected('b')).to.equal(true);
    // Terminating and terminated: nothing on the runtime; the status is finished as it is.
    await s.syncTerminatingPod(ctx(), b, f.view(), 30);
    await s.syncTerminatedPod(ctx(), b, f.view());
    expect(f.calls).to.deep.equal(['setPodStatus Failed', 'prober.removePod', 'terminatePod']);
    // A later sync of the same UID does not admit it again.
    expect(await s.syncPod(ctx(), 'update', b, f.view())).to.deep.equal({ isTerminal: true });
    expect(f.events.length).to.equal(1);
  });

  it('reads the Node afresh when node affinity alone refuses a pod, and admits it if the fresh labels match', async () => {
    const f = new Fakes();
    const reads: string[] = [];
    const labelled = (labels: Record<string, string>) => async () => {
      reads.push(JSON.stringify(labels));
      return {
        name: 'n1',
        labels,
        taints: [],
        allocatable: new Map([
          ['cpu', 1000],
          ['pods', 10],
        ]),
      };
    };
    const selecting = (uid: string, cpu: string) => {
      const p = mkPod(uid, cpu);
      p.spec.nodeSelector = { color: 'blue' };
      return p;
    };
    const s = f.syncer({ freshNode: labelled({ color: 'blue' }) });
    f.runtimeViews = [rt('a', [rec('running')])];
    expect(await s.syncPod(ctx(), 'create', selecting('a', '100m'), f.view())).to.deep.equal({
      isTerminal: false,
    });
    expect(reads).to.deep.equal(['{"color":"blue"}']);
    // Resources refuse it: no second read (only a node-affinity refusal may be stale labels).
    expect(await s.syncPod(ctx(), 'create', selecting('b', '950m'), f.view())).to.deep.equal({
      isTerminal: true,
    });
    expect(reads).to.have.length(1);
    // The fresh Node does not match either: refused with the kubelet's NodeAffinity words.
    const t = f.syncer({ freshNode: labelled({ color: 'red' }) });
    expect(await t.syncPod(ctx(), 'create', selecting('c', '100m'), f.view())).to.deep.equal({
      isTerminal: true,
    });
    expect(f.statuses.get('c')).to.include({
      phase: 'Failed',
      reason: 'NodeAffinity',
      message:
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
  });

  it('records the rejected generation in the status of a pod admission refuses', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('running')])];
    await s.syncPod(ctx(), 'create', mkPod('a', '800m'), f.view());
    const b = mkPod('b', '500m');
    b.metadata.generation = 2;
    expect(await s.syncPod(ctx(), 'create', b, f.view())).to.deep.equal({ isTerminal: true });
    expect(f.statuses.get('b')).to.include({ phase: 'Failed', reason: 'OutOfcpu', observedGeneration: 2 });
  });

  it('does not count pods that finished (per the API or the status manager) or stopped syncing', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('x', [rec('running')])];
    for (const uid of ['a', 'b', 'c']) {
      f.pods.set(uid, mkPod(uid, '600m'));
      await s.syncPod(ctx(), 'create', mkPod(uid, '600m', { status: { phase: 'Running' } }), f.view());
      if (uid === 'a') {
        // finished per the status manager
        f.statuses.set('a', { phase: 'Succeeded' });
      }
      if (uid === 'b') f.states.set('b', 'terminated');
    }
    // c was admitted (a and b no longer count); d does not fit next to c.
    expect(s.isRejected('c')).to.equal(false);
    await s.syncPod(ctx(), 'create', mkPod('d', '600m'), f.view());
    expect(s.isRejected('d')).to.equal(true);
    // A pod the API already reports finished is not admitted at all and takes no room.
    const f2 = new Fakes();
    const s2 = f2.syncer();
    f2.runtimeViews = [rt('z', [rec('exited')], false)];
    const done = mkPod('done', '900m', { status: { phase: 'Succeeded' } });
    f2.pods.set('done', done);
    await s2.syncPod(ctx(), 'create', done, f2.view());
    f2.runtimeViews = [rt('e', [rec('running')])];
    await s2.syncPod(ctx(), 'create', mkPod('e', '900m'), f2.view());
    expect(s2.isRejected('e')).to.equal(false);
  });

  it('syncPod: status before the actions, runtime sync, status again after; errors surface after the status', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [], false), rt('a', [rec('running')])];
    f.clock.advance(0);
    const p = mkPod('a');
    const pending = s.syncPod(ctx(), 'create', p, f.view());
    expect(await pending).to.deep.equal({ isTerminal: false });
    expect(f.calls).to.deep.equal([
      'setPodStatus Pending',
      'prober.addPod',
      'mountPod',
      'runtime.syncPod',
      'relist',
      'setPodStatus Running',
    ]);
    const st = f.statuses.get('a')!;
    expect(st.podIP).to.equal('10.88.0.5');
    expect(st.hostIP).to.equal(NODE_IP);
    expect(st.containerStatuses![0]!.containerID).to.equal('sim://c-running');
    expect(f.started).to.deep.equal([0]);

    f.syncError = new PodSyncError(
      'Unknown',
      'failed to "StartContainer" for "app" with CrashLoopBackOff',
      [],
    );
    f.calls = [];
    let err: unknown;
    try {
      await s.syncPod(ctx(), 'sync', p, f.view());
    } catch (e) {
      err = e;
    }
    expect(err).to.equal(f.syncError);
    expect(f.calls.at(-1)).to.equal('setPodStatus Running');
    expect(f.started.length).to.equal(1);
  });

  it('reports a pod terminal without acting when its containers finished', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('exited')])];
    const p = mkPod('a');
    p.spec.restartPolicy = 'Never';
    expect(await s.syncPod(ctx(), 'sync', p, f.view())).to.deep.equal({ isTerminal: true });
    expect(f.calls).to.deep.equal(['setPodStatus Succeeded']);
  });

  it('leaves the status of a pod the API reports finished alone when the runtime holds nothing of it', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [{ ...rt('a', []), sandboxes: [], ips: [] }];
    const p = mkPod('a', undefined, { status: { phase: 'Failed', reason: 'OutOfcpu' } });
    expect(await s.syncPod(ctx(), 'create', p, f.view())).to.deep.equal({ isTerminal: true });
    await s.syncTerminatingPod(ctx(), p, f.view(), 1);
    await s.syncTerminatedPod(ctx(), p, f.view());
    expect(f.calls).to.deep.equal(['prober.removePod', 'terminatePod']);
  });

  it('gives host-network pods (and every pod with podNetwork host) the node IP as pod IP', async () => {
    for (const [podNetwork, hostNetwork] of [
      ['cni', true],
      ['host', false],
    ] as const) {
      const f = new Fakes();
      const s = f.syncer({ podNetwork });
      f.runtimeViews = [{ ...rt('a', [rec('running')]), ips: ['10.0.0.2'] }];
      await s.syncPod(ctx(), 'create', mkPod('a', undefined, { hostNetwork }), f.view());
      const st = f.statuses.get('a')!;
      expect(st.podIP, podNetwork).to.equal(NODE_IP);
      expect(st.podIPs, podNetwork).to.deep.equal([{ ip: NODE_IP }]);
    }
  });

  it('terminating: stops liveness/startup probes, kills with the grace period, final status while exit codes are known', async () => {
    const f = new Fakes();
    const s = f.syncer();
    const p = mkPod('a', undefined, { deleted: true });
    f.statuses.set('a', { phase: 'Running', podIP: '10.88.0.5', podIPs: [{ ip: '10.88.0.5' }] });
    f.runtimeViews = [
      rt('a', [rec('running')]),
      { ...rt('a', [rec('exited', { exitCode: 137, reason: 'Error' })], false) },
    ];
    const kill: KillPodOptions = { reason: 'Evicted', message: 'The node was low on resource: memory.' };
    await s.syncTerminatingPod(ctx(), p, f.view(), 5, kill);
    expect(f.calls).to.deep.equal([
      'setPodStatus Running',
      'prober.stopLivenessAndStartup',
      'runtime.killPod grace=5',
      'prober.removePod',
      'relist',
      'setPodStatus Failed',
    ]);
    const st = f.statuses.get('a')!;
    expect(st).to.include({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    // The sandbox is gone, but the pod keeps its IP.
    expect(st.podIP).to.equal('10.88.0.5');
    expect(st.containerStatuses![0]!.state!.terminated).to.include({ exitCode: 137 });
  });

  it('terminating fails (to be retried) when a container still runs after the kill', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('running')])];
    let err: unknown;
    try {
      await s.syncTerminatingPod(ctx(), mkPod('a'), f.view(), 1);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/detected running containers after a successful KillPod: app/);
  });

  it("reads others' conditions from the pod manager's newest pod, not the worker's copy (readiness gates)", async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('running')])];
    const gate = 'k8s.io/test-condition1';
    const stale = mkPod('a', undefined, { status: { phase: 'Running' } });
    stale.spec.readinessGates = [{ conditionType: gate }];
    f.pods.set('a', { ...stale, status: { phase: 'Running', conditions: [{ type: gate, status: 'True' }] } });
    await s.syncPod(ctx(), 'sync', stale, f.view());
    const conditions = f.statuses.get('a')!.conditions!;
    expect(conditions.find((c) => c.type === 'Ready')).to.deep.equal({ type: 'Ready', status: 'True' });
    expect(conditions.find((c) => c.type === gate)).to.deep.equal({ type: gate, status: 'True' });
  });

  it('fails a pod past its active deadline through the eviction handlers, then keeps that reason to the end', async () => {
    const f = new Fakes();
    const events: string[] = [];
    // The status manager stamps startTime (the fake here does not): the handler asks it.
    const start = new Date(f.clock.now()).toISOString();
    const handler = new ActiveDeadlineHandler({
      clock: f.clock,
      startTime: () => start,
      record: (_p, type, reason, message) => events.push(`${type} ${reason} ${message}`),
    });
    const s = f.syncer({ evictionHandlers: [handler] });
    const p = mkPod('a');
    p.spec.activeDeadlineSeconds = 5;
    f.runtimeViews = [rt('a', [rec('running')])];
    expect(await s.syncPod(ctx(), 'sync', p, f.view())).to.deep.equal({ isTerminal: false });
    expect(events).to.deep.equal([]);

    f.clock.advance(5_000);
    f.calls = [];
    expect(await s.syncPod(ctx(), 'sync', p, f.view())).to.deep.equal({ isTerminal: true });
    expect(f.calls).to.deep.equal(['setPodStatus Failed']);
    const reason = 'DeadlineExceeded';
    const message = 'Pod was active on the node longer than the specified deadline';
    expect(f.statuses.get('a')).to.include({ phase: 'Failed', reason, message });
    expect(events).to.deep.equal([`Normal ${reason} ${message}`]);

    // The pod worker terminates it: killed, and the final status keeps the deadline as its reason.
    f.runtimeViews = [
      rt('a', [rec('running')]),
      rt('a', [rec('exited', { exitCode: 137, reason: 'Error' })], false),
    ];
    await s.syncTerminatingPod(ctx(), p, f.view(), 1);
    expect(f.calls).to.include('runtime.killPod grace=1');
    expect(f.statuses.get('a')).to.include({ phase: 'Failed', reason, message });
  });

  it('terminated: removes the runtime objects of a deleted pod only, then finishes the status', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [rec('exited')], false)];
    const kept = mkPod('a');
    f.pods.set('a', kept);
    await s.syncTerminatedPod(ctx(), kept, f.view());
    expect(f.calls).to.deep.equal([
      'prober.removePod',
      'setPodStatus Succeeded',
      'unmountPod',
      'terminatePod',
    ]);
    f.calls = [];
    await s.syncTerminatedPod(ctx(), mkPod('a', undefined, { deleted: true }), f.view());
    expect(f.calls).to.include('runtime.removePod');
    expect(f.calls.at(-1)).to.equal('terminatePod');
  });

  it("a runtime-only pod: inspected, killed with its labels' grace periods, inspected again, removed", async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('o', [rec('running')]), rt('o', [rec('exited')], false)];
    await s.syncTerminatingRuntimePod(ctx(), { uid: asPodUID('o'), name: 'gone', namespace: 'ns' });
    expect(f.calls).to.deep.equal([
      'relist',
      'runtime.killPod grace=undefined',
      'relist',
      'runtime.removePod',
    ]);
    expect(f.statuses.size, 'no API object: no status').to.equal(0);
  });

  it('keeps the status it started from when the runtime had nothing to do, and only then', async () => {
    const f = new Fakes();
    const s = f.syncer();
    const noop = { results: [{ action: 'ConfigPodSandbox', target: 'sb' }] } as unknown as PodSyncResult;
    f.runtimeViews = [rt('a', [rec('running')])];
    f.syncResult = noop;
    expect(await s.syncPod(ctx(), 'update', mkPod('a'), f.view())).to.deep.equal({ isTerminal: false });
    expect(f.calls).to.deep.equal(['setPodStatus Running', 'prober.addPod', 'mountPod', 'runtime.syncPod']);
    expect(f.started.length, 'the start is still observed').to.equal(1);
    // A start failure before create is not a change of the runtime, but its reason must show in this sync.
    f.calls = [];
    f.syncResult = {
      results: [{ action: 'StartContainer', target: 'app', error: 'CrashLoopBackOff' }],
    } as unknown as PodSyncResult;
    await s.syncPod(ctx(), 'update', mkPod('a'), f.view());
    expect(f.calls.filter((c) => c.startsWith('setPodStatus')).length).to.equal(2);
  });

  it('a settled pod synced again with the same inputs skips status and runtime, still mounts; any changed input brings the whole sync back', async () => {
    const f = new Fakes();
    const liveness = new ResultsManager('liveness');
    const startup = new ResultsManager('startup');
    const s = f.syncer({ probes: { liveness, startup } });
    f.syncResult = { results: [{ action: 'ConfigPodSandbox', target: 'sb' }] } as unknown as PodSyncResult;
    let view = rt('a', [rec('running')]);
    f.runtimeViews = [view];
    const p = mkPod('a');
    f.pods.set('a', p);
    const whole = ['setPodStatus Running', 'prober.addPod', 'mountPod', 'runtime.syncPod'];
    const settled = ['prober.addPod', 'mountPod'];
    const sync = async (pod: Pod = p): Promise<string[]> => {
      f.calls = [];
      expect(await s.syncPod(ctx(), 'sync', pod, view)).to.deep.equal({ isTerminal: false });
      return f.calls;
    };
    expect(await sync()).to.deep.equal(whole);
    expect(s.settledPods).to.equal(1);
    expect(await sync(), 'nothing changed').to.deep.equal(settled);
    expect(await sync(), 'still nothing').to.deep.equal(settled);

    view = rt('a', [rec('running')]);
    expect(await sync(), 'the runtime inspected anew').to.deep.equal(whole);
    expect(await sync()).to.deep.equal(settled);

    liveness.set('sim://c-running', 'failure', asPodUID('a'));
    expect(await sync(), 'a liveness result').to.deep.equal(whole);
    expect(await sync()).to.deep.equal(settled);
    startup.set('sim://c-running', 'success', asPodUID('a'));
    expect(await sync(), 'a startup result').to.deep.equal(whole);
    liveness.set('sim://c-running', 'failure', asPodUID('a'));
    expect(await sync(), 'the same liveness result again').to.deep.equal(settled);
    liveness.remove('sim://c-running');
    expect(await sync(), 'a liveness result removed').to.deep.equal(whole);

    f.pods.set('a', { ...p, status: { phase: 'Running', conditions: [{ type: 'x', status: 'True' }] } });
    expect(await sync(), "the pod manager's newest pod").to.deep.equal(whole);
    expect(await sync()).to.deep.equal(settled);
    const updated = { ...p };
    expect(await sync(updated), 'the pod handed to the worker').to.deep.equal(whole);
    expect(await sync(updated)).to.deep.equal(settled);

    // A pod from the API is known by its version: another object of it (a relist's) is the same input.
    const v7 = { ...p, metadata: { ...p.metadata, resourceVersion: '7' } };
    expect(await sync(v7), 'a pod with a resourceVersion').to.deep.equal(whole);
    expect(await sync({ ...v7 }), 'the same version, another object').to.deep.equal(settled);
    const v8 = { ...p, metadata: { ...p.metadata, resourceVersion: '8' } };
    expect(await sync(v8), 'a newer version').to.deep.equal(whole);
    f.pods.set('a', v8);
    expect(await sync(v8), 'the newer version in the pod manager too').to.deep.equal(whole);
    f.pods.set('a', { ...v8 });
    expect(await sync(v8), "the pod manager's object of the same version").to.deep.equal(settled);

    // A sync that acted is never taken as settled.
    f.syncResult = undefined;
    view = rt('a', [rec('running')]);
    expect(await sync(updated)).to.deep.equal([...whole, 'relist', 'setPodStatus Running']);
    f.syncResult = { results: [] };
    expect(await sync(updated), 'after a sync that acted').to.deep.equal(whole);
    expect(await sync(updated)).to.deep.equal(settled);

    // A failed mount fails the settled sync too, and the next one works everything out again.
    f.mountResult = { ok: false, message: 'configmap "c" not found', report: true } as MountPodResult;
    let err: unknown;
    try {
      await sync(updated);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.include('Unable to attach or mount volumes');
    f.mountResult = { ok: true, volumes: new Map() };
    expect(await sync(updated)).to.deep.equal(whole);
    s.retain(new Set());
    expect(s.settledPods).to.equal(0);
    expect(await sync(updated), 'forgotten by housekeeping').to.deep.equal(whole);
  });

  it('a volume attach limit rejects the pod the kubelet way: Failed with the reason, nothing started, never again', async () => {
    const f = new Fakes();
    const s = f.syncer();
    f.runtimeViews = [rt('a', [])];
    f.mountResult = {
      ok: false,
      report: true,
      reject: 'VolumeAttachmentLimitExceeded',
      message: 'Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[data]',
    } as MountPodResult;
    expect(await s.syncPod(ctx(), 'create', mkPod('a'), f.view())).to.deep.equal({ isTerminal: true });
    expect(f.calls).to.not.include('runtime.syncPod');
    const st = f.statuses.get('a')!;
    expect(st.phase).to.equal('Failed');
    expect(st.reason).to.equal('VolumeAttachmentLimitExceeded');
    expect(st.message).to.equal(
      'Pod was rejected: Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[data]',
    );
    expect(f.events.at(-1)).to.match(/^Warning VolumeAttachmentLimitExceeded Node has reached/);
    expect(s.isRejected('a')).to.equal(true);
    f.calls = [];
    expect(await s.syncPod(ctx(), 'update', mkPod('a'), f.view())).to.deep.equal({ isTerminal: true });
    expect(f.calls).to.deep.equal([]);
  });

  it('never takes a pod with an active deadline, or one whose probe results cannot be versioned, as settled', async () => {
    const f = new Fakes();
    f.syncResult = { results: [] };
    const view = rt('a', [rec('running')]);
    const timed = mkPod('a');
    timed.spec.activeDeadlineSeconds = 60;
    const s = f.syncer();
    await s.syncPod(ctx(), 'sync', timed, view);
    f.calls = [];
    await s.syncPod(ctx(), 'sync', timed, view);
    expect(f.calls).to.include('runtime.syncPod');
    expect(s.settledPods).to.equal(0);

    const plain = mkPod('b');
    const bView = rt('b', [rec('running')]);
    const unversioned = f.syncer({
      probes: { liveness: { get: () => undefined }, startup: { get: () => undefined } },
    });
    await unversioned.syncPod(ctx(), 'sync', plain, bView);
    f.calls = [];
    await unversioned.syncPod(ctx(), 'sync', plain, bView);
    expect(f.calls).to.include('runtime.syncPod');
  });

  it('inspects the pod again only when the runtime changed (not for the sandbox config or a back-off)', async () => {
    const r = (action: string, error?: string) => ({ action, target: 'app', ...(error ? { error } : {}) });
    const res = (...results: ReturnType<typeof r>[]) => ({ results }) as unknown as PodSyncResult;
    expect(changedRuntime(res())).to.equal(false);
    expect(changedRuntime(res(r('ConfigPodSandbox'), r('StartContainer', 'CrashLoopBackOff')))).to.equal(
      false,
    );
    expect(changedRuntime(res(r('ConfigPodSandbox'), r('StartContainer', 'ImagePullBackOff')))).to.equal(
      false,
    );
    expect(changedRuntime(res(r('ConfigPodSandbox'), r('StartContainer')))).to.equal(true);
    expect(changedRuntime(res(r('StartContainer', 'RunContainerError')))).to.equal(true);
    expect(changedRuntime(res(r('KillContainer')))).to.equal(true);
  });
});

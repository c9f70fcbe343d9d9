// RuntimeCleanup (kubelet: the container GC and the per-pod dead-container deletor) on a SimRuntime under a
// FakeClock: when a container dies its older exited instances go at once (all of the pod's dead containers
// when its content may be removed), one removal at a time and each once, up to the deletor's buffer; the
// periodic GC comes due by the clock, runs one at a time and coalesces requests made while it runs; nothing
// starts once the kubelet is inactive, and nothing here ever stops a container.
import { expect } from 'chai';
import { asContainerID, asPodUID, type RuntimePodStatus } from '../../../src/kubelet/container/types.js';
import type {
  GarbageCollectOptions,
  GarbageCollectResult,
} from '../../../src/kubelet/kuberuntime/shell/gc.js';
import { CONTAINER_DELETOR_BUFFER, RuntimeCleanup } from '../../../src/kubelet/shell/kubelet_cleanup.js';
import { ContainerNameLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import { SimRuntime } from '../../../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';

const IMAGE = 'docker.io/library/busybox:latest';
const UID = 'pod-uid-1';

const flush = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

interface Deferred {
  promise: Promise<GarbageCollectResult>;
  resolve: (r: GarbageCollectResult) => void;
  reject: (err: Error) => void;
}

function deferred(): Deferred {
  let resolve!: Deferred['resolve'];
  let reject!: Deferred['reject'];
  const promise = new Promise<GarbageCollectResult>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const emptyGC: GarbageCollectResult = { removedContainers: [], removedSandboxes: [], errors: [] };

function setup() {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const sim = new SimRuntime({ clock, images: [IMAGE], idSeed: 'cleanup' });
  const removed: string[] = [];
  const stopped: string[] = [];
  const stopContainer = sim.stopContainer.bind(sim);
  sim.stopContainer = (id, timeout) => {
    stopped.push(id);
    return stopContainer(id, timeout);
  };
  /** GC runs: each waits for the test to settle it (or settles at once when `autoGC`). */
  const gcRuns: { opts: GarbageCollectOptions; done: Deferred }[] = [];
  let autoGC = true;
  let failRemoval: string | undefined;
  const removable = new Set<string>();
  const inflight: Promise<unknown>[] = [];
  const logs: { level: string; msg: string; meta?: Record<string, unknown> }[] = [];
  /** What each housekeeping pass over pod leftovers found to clean up. */
  const leftoverPasses: string[][] = [];
  let active = true;
  const cleanup = new RuntimeCleanup({
    clock,
    log: {
      info: (msg, meta) => void logs.push({ level: 'info', msg, ...(meta ? { meta } : {}) }),
      warn: (msg, meta) => void logs.push({ level: 'warn', msg, ...(meta ? { meta } : {}) }),
    },
    runtime: {
      removeContainer: async (id: string) => {
        removed.push(id);
        if (id === failRemoval) throw new Error('device or resource busy');
        await sim.removeContainer(id);
      },
      garbageCollect: (opts: GarbageCollectOptions) => {
        const done = deferred();
        gcRuns.push({ opts, done });
        if (autoGC) done.resolve(emptyGC);
        return done.promise;
      },
      removeOrphanedPodLeftovers: async (removable, inRuntime) => {
        const asked = ['pod-a', 'pod-b', UID].filter((uid) => !inRuntime(uid) && removable(uid));
        leftoverPasses.push(asked);
        return asked.map((uid) => `failed to clean up pod ${uid}`);
      },
    },
    podWorkers: { shouldPodContentBeRemoved: (uid: string) => removable.has(uid) },
    active: () => active,
    track: (p) => void inflight.push(p),
  });

  const sandbox: PodSandboxConfig = {
    metadata: { name: 'web', uid: UID, namespace: 'default', attempt: 0 },
    labels: { [PodUIDLabel]: UID },
    annotations: {},
  };
  let sandboxID = '';
  /** Runs one instance of container `name` that exits at once (`false`: exit 1). */
  async function deadInstance(name: string, attempt: number): Promise<string> {
    sandboxID ||= await sim.runPodSandbox(sandbox);
    const config: ContainerConfig = {
      metadata: { name, attempt },
      image: IMAGE,
      command: ['false'],
      labels: { [PodUIDLabel]: UID, [ContainerNameLabel]: name },
      annotations: {},
    };
    const id = await sim.createContainer(sandboxID, config, sandbox);
    await sim.startContainer(id);
    clock.advance(1_000); // distinct creation times, newest last
    await flush();
    return id;
  }
  /** The pod's runtime status as the PLEG cache holds it, from the simulated runtime. */
  async function podStatus(): Promise<RuntimePodStatus> {
    const containers = await sim.listContainers({ labelSelector: { [PodUIDLabel]: UID } });
    return {
      uid: asPodUID(UID),
      name: 'web',
      namespace: 'default',
      sandboxes: [],
      ips: [],
      containers: [...containers]
        .sort((a, b) => Number(b.createdAt - a.createdAt))
        .map((c) => ({
          id: asContainerID(c.id),
          name: c.metadata.name,
          state: c.state,
          createdAt: Number(c.createdAt / 1_000_000n),
          restartCount: c.metadata.attempt ?? 0,
          hash: '',
        })),
    };
  }
  const left = async (): Promise<string[]> =>
    (await sim.listContainers({ labelSelector: { [PodUIDLabel]: UID } })).map((c) => c.id);
  return {
    clock,
    sim,
    cleanup,
    removed,
    stopped,
    gcRuns,
    removable,
    logs,
    leftoverPasses,
    deadInstance,
    podStatus,
    left,
    settle: async () => {
      await flush();
      await Promise.all(inflight);
    },
    setAutoGC: (v: boolean) => (autoGC = v),
    failRemovalOf: (id: string) => (failRemoval = id),
    deactivate: () => (active = false),
  };
}

describe('RuntimeCleanup', () => {
  describe('dead-container deletor', () => {
    it('removes the older exited instances of the container that died, keeping the newest', async () => {
      const s = setup();
      const app0 = await s.deadInstance('app', 0);
      const other = await s.deadInstance('sidecar', 0);
      const app1 = await s.deadInstance('app', 1);
      const app2 = await s.deadInstance('app', 2);
      s.cleanup.cleanUpContainersInPod(UID, app2, await s.podStatus());
      await s.settle();
      expect(s.removed).to.deep.equal([app1, app0]);
      expect(await s.left()).to.have.members([app2, other]);
      expect(s.stopped, 'never stops a container').to.deep.equal([]);
    });

    it('removes every dead container of a pod whose content may go', async () => {
      const s = setup();
      const a = await s.deadInstance('app', 0);
      const b = await s.deadInstance('sidecar', 0);
      s.removable.add(UID);
      s.cleanup.cleanUpContainersInPod(UID, a, await s.podStatus());
      await s.settle();
      expect(s.removed).to.have.members([a, b]);
      expect(await s.left()).to.deep.equal([]);
    });

    it('queues each dead container once, however often PLEG reports it, and survives a failed removal', async () => {
      const s = setup();
      const app0 = await s.deadInstance('app', 0);
      const app1 = await s.deadInstance('app', 1);
      const app2 = await s.deadInstance('app', 2);
      s.failRemovalOf(app1);
      const status = await s.podStatus();
      s.cleanup.cleanUpContainersInPod(UID, app2, status);
      s.cleanup.cleanUpContainersInPod(UID, app2, status);
      await s.settle();
      expect(s.removed).to.deep.equal([app1, app0]);
      expect(s.logs.find((l) => l.msg === 'failed to remove a dead container')?.meta).to.deep.include({
        containerID: app1,
      });
      // A failed removal is forgotten: a later report queues it again.
      s.cleanup.cleanUpContainersInPod(UID, app2, await s.podStatus());
      await s.settle();
      expect(s.removed).to.deep.equal([app1, app0, app1]);
    });

    it(`holds at most ${CONTAINER_DELETOR_BUFFER} removals and leaves the rest to the GC`, async () => {
      const s = setup();
      const count = CONTAINER_DELETOR_BUFFER + 5;
      const ids = [];
      for (let i = 0; i < count; i++) ids.push(await s.deadInstance('app', i));
      s.removable.add(UID);
      s.cleanup.cleanUpContainersInPod(UID, ids.at(-1)!, await s.podStatus());
      await s.settle();
      expect(s.removed).to.have.length(CONTAINER_DELETOR_BUFFER);
      expect(s.logs.filter((l) => l.level === 'warn').map((l) => l.msg)).to.include(
        'dead container deletor is full; the container GC will remove the rest',
      );
      expect(await s.left()).to.have.length(5);
    });

    it('does nothing once the kubelet is inactive', async () => {
      const s = setup();
      await s.deadInstance('app', 0);
      const app1 = await s.deadInstance('app', 1);
      s.deactivate();
      s.cleanup.cleanUpContainersInPod(UID, app1, await s.podStatus());
      s.cleanup.requestGC();
      await s.settle();
      expect(s.removed).to.deep.equal([]);
      expect(s.gcRuns).to.deep.equal([]);
    });
  });

  describe('container GC', () => {
    it('comes due by the clock, counted from construction and then from each run', async () => {
      const s = setup();
      expect(s.cleanup.gcDue(60_000)).to.equal(false);
      s.clock.advance(59_999);
      expect(s.cleanup.gcDue(60_000)).to.equal(false);
      s.clock.advance(1);
      expect(s.cleanup.gcDue(60_000)).to.equal(true);
      s.cleanup.requestGC();
      await s.settle();
      expect(s.gcRuns).to.have.length(1);
      expect(s.cleanup.gcDue(60_000), 'a run resets the period').to.equal(false);
      s.clock.advance(60_000);
      expect(s.cleanup.gcDue(60_000)).to.equal(true);
    });

    it("asks the pod workers whether a pod's content may go", async () => {
      const s = setup();
      s.removable.add('gone-uid');
      s.cleanup.requestGC();
      await s.settle();
      const opts = s.gcRuns[0]!.opts;
      expect(opts.shouldPodContentBeRemoved('gone-uid')).to.equal(true);
      expect(opts.shouldPodContentBeRemoved(UID)).to.equal(false);
    });

    it('runs one at a time: requests during a run coalesce into one more run', async () => {
      const s = setup();
      s.setAutoGC(false);
      s.cleanup.requestGC();
      await flush();
      s.cleanup.requestGC();
      s.cleanup.requestGC();
      s.cleanup.requestGC();
      await flush();
      expect(s.gcRuns).to.have.length(1);
      s.gcRuns[0]!.done.resolve({ ...emptyGC, errors: ['remove container x: busy'] });
      await flush();
      expect(s.gcRuns, 'exactly one more run').to.have.length(2);
      s.gcRuns[1]!.done.resolve(emptyGC);
      await s.settle();
      expect(s.gcRuns).to.have.length(2);
      expect(s.logs.find((l) => l.msg === 'container GC')?.meta).to.deep.equal({
        err: 'remove container x: busy',
      });
      // Idle again: the next request starts a run at once.
      s.cleanup.requestGC();
      await flush();
      expect(s.gcRuns).to.have.length(3);
      s.gcRuns[2]!.done.resolve(emptyGC);
      await s.settle();
    });

    it('logs a failed run and stays usable', async () => {
      const s = setup();
      s.setAutoGC(false);
      s.cleanup.requestGC();
      await flush();
      s.gcRuns[0]!.done.reject(new Error('runtime unavailable'));
      await s.settle();
      expect(s.logs.find((l) => l.msg === 'container GC failed')?.meta).to.deep.equal({
        err: 'runtime unavailable',
      });
      s.cleanup.requestGC();
      await flush();
      expect(s.gcRuns).to.have.length(2);
      s.gcRuns[1]!.done.resolve(emptyGC);
      await s.settle();
    });
  });

  describe('pod leftovers at housekeeping', () => {
    it("asks about pods the listing does not hold, by the pod workers' word, and logs each failure", async () => {
      const s = setup();
      s.removable.add('pod-a').add(UID);
      await s.cleanup.removeOrphanedPodLeftovers([{ uid: UID }, { uid: 'pod-c' }]);
      // pod-b may not go yet, UID is still in the runtime: only pod-a.
      expect(s.leftoverPasses).to.deep.equal([['pod-a']]);
      expect(s.logs.filter((l) => l.msg === 'pod cleanup').map((l) => l.meta)).to.deep.equal([
        { err: 'failed to clean up pod pod-a' },
      ]);
      s.deactivate();
      await s.cleanup.removeOrphanedPodLeftovers([]);
      expect(s.leftoverPasses, 'nothing once inactive').to.have.length(1);
    });
  });
});

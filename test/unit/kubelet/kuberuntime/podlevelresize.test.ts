// In-place resize of pod-level resources (src/kubelet/kuberuntime/podlevelresize.ts, resizepod.ts): which pod
// cgroup writes a resize needs and on which side of the container updates, when it counts as in progress, and
// the order in which doPodResizeAction writes the pod cgroup and updates the containers. Fakes, no I/O.
import { expect } from 'chai';
import type { Pod, ResourceRequirements } from '../../../../src/api/core.js';
import type { PodResourceConfig } from '../../../../src/kubelet/cm/resourceconfig.js';
import type { PodCgroupAccess } from '../../../../src/kubelet/cm/shell/podcgroup.js';
import { asContainerID } from '../../../../src/kubelet/container/types.js';
import {
  computePodLevelResourcesResizeAction,
  isPodLevelResourcesResizeInProgress,
  podCgroupResizeSteps,
} from '../../../../src/kubelet/kuberuntime/podlevelresize.js';
import type { ContainerToUpdate } from '../../../../src/kubelet/kuberuntime/resize.js';
import {
  doPodResizeAction,
  type PodCgroupResize,
} from '../../../../src/kubelet/kuberuntime/shell/resizepod.js';
import { SyncResultBuilder } from '../../../../src/kubelet/kuberuntime/shell/syncresult.js';
import type { ContainerStats, LinuxContainerResources } from '../../../../src/runtime/types.js';
import { silentLogger } from '../../../../src/util/logger.js';
import { container, Harness, makePod, summary } from './manager-fixtures.js';

const MiB = 1024 * 1024;

function plr(resources: ResourceRequirements | undefined): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
    spec: {
      containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '100m' } } }],
      ...(resources ? { resources } : {}),
    },
  };
}

const guaranteed = (cpu: string, memory: string): ResourceRequirements => ({
  requests: { cpu, memory },
  limits: { cpu, memory },
});

/** Guaranteed pod cgroup config for `milli` cpu and `mib` MiB. */
const cfg = (milli: number, mib: number): PodResourceConfig => ({
  cpuShares: Math.floor((milli * 1024) / 1000),
  cpuQuota: milli * 100,
  cpuPeriod: 100_000,
  memoryLimitBytes: mib * MiB,
});

describe('pod-level resize: the pod cgroup writes', () => {
  const cases: {
    name: string;
    current: Partial<PodResourceConfig>;
    desired: PodResourceConfig;
    before: Partial<PodResourceConfig>[];
    after: Partial<PodResourceConfig>[];
  }[] = [
    { name: 'nothing changed', current: cfg(1000, 128), desired: cfg(1000, 128), before: [], after: [] },
    {
      name: 'everything grows: memory, then the cpu limit, then the shares, all before the containers',
      current: cfg(1000, 128),
      desired: cfg(2000, 256),
      before: [
        { memoryLimitBytes: 256 * MiB },
        { cpuQuota: 200_000, cpuPeriod: 100_000 },
        { cpuShares: 2048 },
      ],
      after: [],
    },
    {
      name: 'everything shrinks: after the containers, memory, then the shares, then the cpu limit',
      current: cfg(2000, 256),
      desired: cfg(1000, 128),
      before: [],
      after: [
        { memoryLimitBytes: 128 * MiB },
        { cpuShares: 1024 },
        { cpuQuota: 100_000, cpuPeriod: 100_000 },
      ],
    },
    {
      name: 'memory grows, cpu shrinks',
      current: cfg(2000, 128),
      desired: cfg(1000, 256),
      before: [{ memoryLimitBytes: 256 * MiB }],
      after: [{ cpuShares: 1024 }, { cpuQuota: 100_000, cpuPeriod: 100_000 }],
    },
    {
      name: 'a limit where there was none is a decrease',
      current: { cpuShares: 1024, cpuQuota: 0, cpuPeriod: 100_000, memoryLimitBytes: 0 },
      desired: cfg(1000, 128),
      before: [],
      after: [{ memoryLimitBytes: 128 * MiB }, { cpuQuota: 100_000, cpuPeriod: 100_000 }],
    },
    {
      name: 'a limit no longer asked for is left as it is',
      current: cfg(1000, 128),
      desired: { cpuShares: 2048 },
      before: [{ cpuShares: 2048 }],
      after: [],
    },
    {
      name: 'nothing known (nothing recorded, nothing read back): every field, before the containers',
      current: {},
      desired: cfg(500, 64),
      before: [{ memoryLimitBytes: 64 * MiB }, { cpuQuota: 50_000, cpuPeriod: 100_000 }, { cpuShares: 512 }],
      after: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(podCgroupResizeSteps(c.current, c.desired)).to.deep.equal({ before: c.before, after: c.after });
    });
  }

  it('only pods with pod-level resources have a pod cgroup to resize', () => {
    expect(computePodLevelResourcesResizeAction(plr(undefined), {})).to.equal(undefined);
    expect(computePodLevelResourcesResizeAction(plr(guaranteed('1', '128Mi')), cfg(1000, 128))).to.equal(
      undefined,
    );
    const r = computePodLevelResourcesResizeAction(plr(guaranteed('2', '128Mi')), cfg(1000, 128))!;
    expect(r.desired).to.deep.equal(cfg(2000, 128));
    expect(r.before).to.deep.equal([{ cpuQuota: 200_000, cpuPeriod: 100_000 }, { cpuShares: 2048 }]);
  });

  it('is in progress while the pod cgroup differs from the allocation, and not when nothing is recorded', () => {
    const pod = plr(guaranteed('2', '256Mi'));
    expect(isPodLevelResourcesResizeInProgress(pod, cfg(1000, 128))).to.equal(true);
    expect(isPodLevelResourcesResizeInProgress(pod, cfg(2000, 256))).to.equal(false);
    expect(isPodLevelResourcesResizeInProgress(pod, undefined)).to.equal(false);
    expect(isPodLevelResourcesResizeInProgress(plr(undefined), cfg(1000, 128))).to.equal(false);
  });
});

describe('pod-level resize: doPodResizeAction', () => {
  function fixture(opts: { failWrite?: string; podUsage?: number; containerUsage?: number } = {}) {
    const log: string[] = [];
    const actuated = new Map<string, Partial<PodResourceConfig>>([['u1', cfg(1000, 128)]]);
    const podCgroups: PodCgroupAccess = {
      read: async () =>
        opts.podUsage === undefined ? undefined : { config: {}, memoryUsageBytes: opts.podUsage },
      set: async (rel, c) => {
        const what = Object.keys(c).sort().join('+');
        if (opts.failWrite && what.includes(opts.failWrite)) throw new Error('EINVAL');
        log.push(`pod ${rel} ${what}`);
      },
    };
    const runtime = {
      containerStats: async (): Promise<ContainerStats> => ({
        memory: { timestamp: 0n, usageBytes: opts.containerUsage ?? 10 * MiB },
      }),
      updateContainerResources: async (id: string, _r: LinuxContainerResources) => void log.push(`ctr ${id}`),
    };
    const ctx = {
      runtime,
      logger: silentLogger,
      podCgroups,
      actuatedPodCgroups: actuated,
    } as unknown as Parameters<typeof doPodResizeAction>[0];
    return { log, actuated, ctx };
  }
  const upd: ContainerToUpdate = {
    id: asContainerID('c1'),
    name: 'app',
    resources: { memoryLimitInBytes: 64 * MiB },
    currentMemoryLimitBytes: 64 * MiB,
  };
  /** The log lines of these writes to pod u1's cgroup, in order. */
  const podWrites = (...fields: string[]): string[] => fields.map((x) => `pod kubepods/podu1 ${x}`);
  const resize = (to: PodResourceConfig): PodCgroupResize => ({
    uid: 'u1',
    cgroup: 'kubepods/podu1',
    resize: { desired: to, current: cfg(1000, 128), ...podCgroupResizeSteps(cfg(1000, 128), to) },
    runningContainers: [asContainerID('c1')],
  });

  it('grows the pod cgroup before the containers and records each write', async () => {
    const f = fixture();
    const b = new SyncResultBuilder();
    await doPodResizeAction(f.ctx, 'ns/p', [upd], b, resize(cfg(2000, 256)));
    expect(f.log).to.deep.equal([
      ...podWrites('memoryLimitBytes', 'cpuPeriod+cpuQuota', 'cpuShares'),
      'ctr c1',
    ]);
    expect(f.actuated.get('u1')).to.deep.equal(cfg(2000, 256));
    expect(b.results[0]).to.include({ action: 'ResizePodInPlace' });
    expect(b.results[0]!.error).to.equal(undefined);
  });

  it('shrinks the pod cgroup after the containers', async () => {
    const f = fixture({ podUsage: 20 * MiB });
    await doPodResizeAction(f.ctx, 'ns/p', [upd], new SyncResultBuilder(), resize(cfg(500, 64)));
    expect(f.log).to.deep.equal([
      'ctr c1',
      ...podWrites('memoryLimitBytes', 'cpuShares', 'cpuPeriod+cpuQuota'),
    ]);
    expect(f.actuated.get('u1')).to.deep.equal(cfg(500, 64));
  });

  it('resizes the pod cgroup alone when no container needs an update', async () => {
    const f = fixture();
    await doPodResizeAction(f.ctx, 'ns/p', [], new SyncResultBuilder(), resize(cfg(1500, 128)));
    expect(f.log).to.deep.equal(podWrites('cpuPeriod+cpuQuota', 'cpuShares'));
  });

  it('refuses a pod memory limit below what the pod uses, writing nothing', async () => {
    const f = fixture({ podUsage: 100 * MiB });
    const b = new SyncResultBuilder();
    await doPodResizeAction(f.ctx, 'ns/p', [upd], b, resize(cfg(1000, 64)));
    expect(f.log).to.deep.equal([]);
    expect(b.results[0]).to.include({
      error: 'ResizePodInPlaceError',
      message: `cannot decrease memory limits: attempting to set pod memory limit (${64 * MiB}) below current usage (${100 * MiB})`,
    });
    expect(f.actuated.get('u1')).to.deep.equal(cfg(1000, 128));
  });

  it("without a pod cgroup to read (sim), the pod's usage is its running containers'", async () => {
    const f = fixture({ containerUsage: 80 * MiB });
    const b = new SyncResultBuilder();
    await doPodResizeAction(f.ctx, 'ns/p', [], b, resize(cfg(1000, 64)));
    expect(b.results[0]!.message).to.match(/pod memory limit \(67108864\) below current usage \(83886080\)/);
  });

  it('stops at a write the kernel refuses: what was written before stays recorded, the rest is retried', async () => {
    const f = fixture({ failWrite: 'cpuShares' });
    const b = new SyncResultBuilder();
    await doPodResizeAction(f.ctx, 'ns/p', [upd], b, resize(cfg(2000, 256)));
    expect(f.log).to.deep.equal(podWrites('memoryLimitBytes', 'cpuPeriod+cpuQuota'));
    expect(b.results[0]).to.include({ error: 'ResizePodInPlaceError' });
    expect(b.results[0]!.message).to.match(/^failed to set pod cgroup config: EINVAL/);
    expect(f.actuated.get('u1')).to.deep.equal({ ...cfg(2000, 256), cpuShares: 1024 });
  });
});

describe('pod-level resize: the runtime manager on the simulated runtime', () => {
  const sized = (cpu: string, memory: string): ResourceRequirements => ({
    requests: { cpu, memory },
    limits: { cpu, memory },
  });
  /** What a sync did, the sandbox config it reports every time left out. */
  const acts = (r: Awaited<ReturnType<Harness['sync']>>): string[] =>
    summary(r).filter((x) => !x.startsWith('ConfigPodSandbox'));
  const withPodLevel = (pod: Pod, resources: ResourceRequirements): Pod => ({
    ...pod,
    spec: { ...pod.spec, resources },
  });

  it('records the pod cgroup at creation, resizes it in place with the container that inherits its limits', async () => {
    const h = new Harness();
    const pod = withPodLevel(
      makePod({ containers: [container('app', ['sleep', '3600'])] }),
      sized('500m', '128Mi'),
    );
    await h.sync(pod);
    expect(h.manager.podCgroupConfig(pod)).to.deep.equal(cfg(500, 128));
    expect(h.manager.isPodLevelResourcesResizeInProgress(pod)).to.equal(false);
    const app = (await h.status(pod)).containers.find((c) => c.name === 'app')!;

    const resized = withPodLevel(pod, sized('1', '256Mi'));
    expect(h.manager.isPodLevelResourcesResizeInProgress(resized)).to.equal(true);
    const r = await h.sync(resized);
    expect(acts(r).map((x) => x.split(' ')[0])).to.deep.equal(['ResizePodInPlace']);
    expect(acts(r)[0]).to.not.match(/Error/);
    expect(h.manager.podCgroupConfig(resized)).to.deep.equal(cfg(1000, 256));
    expect(h.manager.isPodLevelResourcesResizeInProgress(resized)).to.equal(false);
    // The container has no limits of its own: the pod's are its, in place (same container, no restart).
    const after = (await h.status(pod)).containers.find((c) => c.name === 'app')!;
    expect(after.id).to.equal(app.id);
    expect(after.resources).to.include({ cpuLimitMilli: 1000, memoryLimitBytes: 256 * MiB });
    // Nothing left to do.
    expect(acts(await h.sync(resized))).to.deep.equal([]);
  });

  it('after an operator restart nothing is recorded: the first sync writes the pod cgroup again (sim: the record)', async () => {
    const h = new Harness();
    const pod = withPodLevel(
      makePod({ containers: [container('app', ['sleep', '3600'])] }),
      sized('500m', '128Mi'),
    );
    await h.sync(pod);
    h.restart();
    expect(h.manager.isPodLevelResourcesResizeInProgress(pod)).to.equal(false);
    expect(h.manager.podCgroupConfig(pod)).to.equal(undefined);
    const r = await h.sync(pod);
    expect(acts(r).map((x) => x.split(' ')[0])).to.deep.equal(['ResizePodInPlace']);
    expect(h.manager.podCgroupConfig(pod)).to.deep.equal(cfg(500, 128));
    expect(acts(await h.sync(pod))).to.deep.equal([]);
  });

  it('a pod without pod-level resources reports the config its allocation gives, and has nothing to resize', async () => {
    const h = new Harness();
    const pod = makePod({
      containers: [container('app', ['sleep', '3600'], { resources: sized('250m', '64Mi') })],
    });
    await h.sync(pod);
    expect(h.manager.podCgroupConfig(pod)).to.deep.equal(cfg(250, 64));
    expect(acts(await h.sync(pod))).to.deep.equal([]);
  });
});

import { expect } from 'chai';
import { summaryJSON } from '../../../../src/kubelet/stats/json.js';
import { SummaryBuilder, type SummaryInput } from '../../../../src/kubelet/stats/summary.js';
import type {
  Container,
  ContainerStats,
  PodSandbox,
  PodSandboxStats,
} from '../../../../src/runtime/types.js';

const T = Date.UTC(2026, 10, 25, 12, 0, 0);
const ns = (ms: number): bigint => BigInt(ms) * 1_000_000n;

function sandbox(id: string, uid: string, createdMs: number): PodSandbox {
  return {
    id,
    metadata: { name: `pod-${uid}`, namespace: 'default', uid, attempt: 0 },
    state: 'ready',
    createdAt: ns(createdMs),
    labels: {},
    annotations: {},
  };
}

function container(id: string, sandboxId: string, name: string, createdMs: number): Container {
  return {
    id,
    podSandboxId: sandboxId,
    metadata: { name, attempt: 0 },
    image: 'img',
    imageRef: 'sha256:x',
    state: 'running',
    createdAt: ns(createdMs),
    labels: {},
    annotations: {},
  };
}

function cstats(id: string, name: string, atMs: number, cpuNs: number, ws: number): ContainerStats {
  return {
    attributes: { id, metadata: { name, attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: ns(atMs), usageCoreNanoSeconds: cpuNs },
    memory: { timestamp: ns(atMs), workingSetBytes: ws, usageBytes: ws + 10 },
    writableLayer: { timestamp: ns(atMs), usedBytes: 4096, inodesUsed: 3 },
  };
}

function sstats(s: PodSandbox, containers: ContainerStats[]): PodSandboxStats {
  return {
    attributes: { id: s.id, metadata: s.metadata, labels: {}, annotations: {} },
    containers,
  };
}

function input(nowMs: number, over: Partial<SummaryInput>): SummaryInput {
  return {
    nodeName: 'n1',
    nodeStartTimeMs: T - 3_600_000,
    nowMs,
    memoryCapacityBytes: 1 << 30,
    sandboxes: [],
    containers: [],
    sandboxStats: [],
    kubelet: { cpu: { timeMs: nowMs, coreNanoSeconds: 1e9 }, memoryBytes: 1000 },
    ...over,
  };
}

describe('stats/summary', () => {
  it('sums containers into a pod whose sandbox is not measured, and pods plus the operator into the node', () => {
    const b = new SummaryBuilder();
    const s1 = sandbox('s1', 'u1', T - 10_000);
    const c1 = container('c1', 's1', 'app', T - 9_000);
    const c2 = container('c2', 's1', 'side', T - 8_000);
    const first = b.build(
      input(T, {
        sandboxes: [s1],
        containers: [c1, c2],
        sandboxStats: [sstats(s1, [cstats('c1', 'app', T, 2e9, 100), cstats('c2', 'side', T, 1e9, 50)])],
      }),
    );
    const pod = first.pods[0]!;
    expect(pod.podRef).to.deep.equal({ name: 'pod-u1', namespace: 'default', uid: 'u1' });
    expect(pod.startTime).to.equal(T - 10_000);
    expect(pod.containers.map((c) => [c.name, c.startTime])).to.deep.equal([
      ['app', T - 9_000],
      ['side', T - 8_000],
    ]);
    expect(pod.cpu).to.deep.equal({ time: T, usageCoreNanoSeconds: 3e9 });
    expect(pod.memory).to.deep.include({ workingSetBytes: 150, usageBytes: 170 });
    expect(first.node.cpu?.usageCoreNanoSeconds).to.equal(4e9);
    expect(first.node.memory).to.deep.include({ workingSetBytes: 1150, availableBytes: (1 << 30) - 1150 });
    expect(first.node.systemContainers?.map((c) => c.name)).to.deep.equal(['kubelet', 'pods']);

    // 10 s later: app used one more core-second; side restarted (new ID c3, its counter from 0).
    const c3 = container('c3', 's1', 'side', T + 5_000);
    const second = b.build(
      input(T + 10_000, {
        sandboxes: [s1],
        containers: [c1, c3],
        sandboxStats: [
          sstats(s1, [
            cstats('c1', 'app', T + 10_000, 3e9, 100),
            cstats('c3', 'side', T + 10_000, 0.5e9, 60),
          ]),
        ],
        kubelet: { cpu: { timeMs: T + 10_000, coreNanoSeconds: 2e9 }, memoryBytes: 1000 },
      }),
    );
    const p2 = second.pods[0]!;
    // The pod's counter keeps side's first run (1e9): 3 + 1 + 0.5 core-seconds.
    expect(p2.cpu?.usageCoreNanoSeconds).to.equal(4.5e9);
    expect(p2.cpu?.usageNanoCores).to.equal(150_000_000);
    expect(p2.containers.find((c) => c.name === 'app')?.cpu?.usageNanoCores).to.equal(100_000_000);
    expect(p2.containers.find((c) => c.name === 'side')?.cpu?.usageNanoCores, 'first sample of c3').to.equal(
      undefined,
    );
    expect(second.node.cpu?.usageCoreNanoSeconds).to.equal(6.5e9);
    expect(second.node.cpu?.usageNanoCores).to.equal(250_000_000);

    // The pod is deleted: the node's counter does not fall.
    const third = b.build(
      input(T + 20_000, {
        kubelet: { cpu: { timeMs: T + 20_000, coreNanoSeconds: 2e9 }, memoryBytes: 1000 },
      }),
    );
    expect(third.pods).to.deep.equal([]);
    expect(third.node.cpu?.usageCoreNanoSeconds).to.equal(6.5e9);
  });

  it("without pods: the node's memory and filesystems as a full build has them, no CPU, and no CPU state moved", () => {
    const s1 = sandbox('s1', 'u1', T - 10_000);
    const c1 = container('c1', 's1', 'app', T - 9_000);
    const at = (ms: number, cpuNs: number, over: Partial<SummaryInput> = {}): SummaryInput =>
      input(ms, {
        sandboxes: [s1],
        containers: [c1],
        sandboxStats: [sstats(s1, [cstats('c1', 'app', ms, cpuNs, 100)])],
        kubelet: { cpu: { timeMs: ms, coreNanoSeconds: cpuNs }, memoryBytes: 1000 },
        fs: {
          node: { time: ms, availableBytes: 5, capacityBytes: 10, usedBytes: 5 },
          volumes: () => undefined,
          logs: () => undefined,
        },
        ...over,
      });
    const full = new SummaryBuilder().build(at(T, 1e9));
    const lean = new SummaryBuilder().build(at(T, 1e9, { withPods: false }));
    expect(lean.pods).to.deep.equal([]);
    expect(lean.node.cpu).to.equal(undefined);
    expect(lean.node.memory).to.deep.equal(full.node.memory);
    expect(lean.node.fs).to.deep.equal(full.node.fs);
    const memories = (x: typeof full) => x.node.systemContainers?.map((c) => [c.name, c.memory]);
    expect(memories(lean)).to.deep.equal(memories(full));
    expect(lean.node.systemContainers?.some((c) => c.cpu)).to.equal(false);

    // Node-only builds between two full ones: the rates span from the first full build.
    const b = new SummaryBuilder();
    b.build(at(T, 1e9));
    b.build(at(T + 5_000, 2e9, { withPods: false }));
    const next = b.build(at(T + 10_000, 3e9));
    expect(next.pods[0]!.containers[0]!.cpu?.usageNanoCores).to.equal(200_000_000);
    expect(next.pods[0]!.cpu?.usageNanoCores).to.equal(200_000_000);
    expect(next.node.cpu?.usageNanoCores).to.equal(400_000_000);
  });

  it("takes the sandbox's own figures when the runtime measures it, and the newest ready sandbox and container", () => {
    const b = new SummaryBuilder();
    const old = sandbox('s-old', 'u1', T - 20_000);
    const cur = sandbox('s-new', 'u1', T - 5_000);
    const a1 = container('a1', 's-new', 'app', T - 4_000);
    const a2 = container('a2', 's-new', 'app', T - 2_000);
    const whole: PodSandboxStats = {
      ...sstats(cur, [
        cstats('a1', 'app', T, 1, 1),
        cstats('a2', 'app', T, 7e8, 70),
        cstats('gone', 'x', T, 1, 1),
      ]),
      cpu: { timestamp: ns(T), usageCoreNanoSeconds: 9e8, usageNanoCores: 12 },
      memory: { timestamp: ns(T), workingSetBytes: 99 },
      network: {
        timestamp: ns(T),
        defaultInterface: { name: 'eth0', rxBytes: 5, txBytes: 6 },
        interfaces: [],
      },
      process: { timestamp: ns(T), processCount: 2 },
    };
    const s = b.build(
      input(T, {
        sandboxes: [old, cur],
        containers: [a1, a2],
        sandboxStats: [sstats(old, []), whole],
      }),
    );
    expect(s.pods).to.have.length(1);
    const pod = s.pods[0]!;
    expect(pod.startTime).to.equal(T - 5_000);
    expect(pod.containers.map((c) => [c.name, c.startTime])).to.deep.equal([['app', T - 2_000]]);
    expect(pod.cpu).to.deep.equal({ time: T, usageCoreNanoSeconds: 9e8, usageNanoCores: 12 });
    expect(pod.memory).to.deep.equal({ time: T, workingSetBytes: 99 });
    expect(pod.network).to.deep.include({ name: 'eth0', rxBytes: 5, txBytes: 6 });
    expect(pod.process_stats).to.deep.equal({ process_count: 2 });
  });

  it('lists persistent (CSI) volumes with their claim after the ephemeral ones, outside ephemeral-storage', () => {
    const b = new SummaryBuilder();
    const s1 = sandbox('s1', 'u1', T - 10_000);
    const c1 = container('c1', 's1', 'app', T - 9_000);
    const pvc = {
      time: T,
      name: 'claim',
      capacityBytes: 5e6,
      usedBytes: 3e6,
      pvcRef: { name: 'data', namespace: 'ns' },
    };
    const s = b.build(
      input(T, {
        sandboxes: [s1],
        containers: [c1],
        sandboxStats: [sstats(s1, [cstats('c1', 'app', T, 1, 1)])],
        fs: {
          node: { time: T, capacityBytes: 1e9 },
          volumes: () => [{ time: T, name: 'scratch', usedBytes: 1000, inodesUsed: 4 }],
          persistentVolumes: (uid) => (uid === 'u1' ? [pvc] : undefined),
          logs: () => undefined,
        },
      }),
    );
    const pod = s.pods[0]!;
    expect(pod.volume?.map((v) => v.name)).to.deep.equal(['scratch', 'claim']);
    expect(pod.volume?.[1]).to.deep.equal(pvc);
    expect(pod['ephemeral-storage']).to.deep.include({ usedBytes: 4096 + 1000 });
  });

  it('adds filesystems when asked: rootfs, logs and volumes into ephemeral-storage', () => {
    const b = new SummaryBuilder();
    const s1 = sandbox('s1', 'u1', T - 10_000);
    const c1 = container('c1', 's1', 'app', T - 9_000);
    const fsIn: SummaryInput['fs'] = {
      node: { time: T, capacityBytes: 1e9, availableBytes: 6e8 },
      containerFs: { time: T, capacityBytes: 1e9, availableBytes: 6e8 },
      volumes: (uid) =>
        uid === 'u1' ? [{ time: T, name: 'data', usedBytes: 1000, inodesUsed: 4 }] : undefined,
      logs: (pod, c) => (c === 'app' ? { time: T, usedBytes: 200, inodesUsed: 2 } : undefined),
    };
    const s = b.build(
      input(T, {
        sandboxes: [s1],
        containers: [c1],
        sandboxStats: [sstats(s1, [cstats('c1', 'app', T, 1, 1)])],
        fs: fsIn,
      }),
    );
    const pod = s.pods[0]!;
    expect(pod.containers[0]!.rootfs).to.deep.equal({
      time: T,
      capacityBytes: 1e9,
      availableBytes: 6e8,
      usedBytes: 4096,
      inodesUsed: 3,
    });
    expect(pod.containers[0]!.logs?.usedBytes).to.equal(200);
    expect(pod.volume?.map((v) => v.name)).to.deep.equal(['data']);
    expect(pod['ephemeral-storage']).to.deep.include({ usedBytes: 4096 + 200 + 1000, inodesUsed: 9 });
    expect(s.node.fs?.capacityBytes).to.equal(1e9);
    expect(s.node.runtime?.containerFs?.availableBytes).to.equal(6e8);

    const json = JSON.parse(summaryJSON(s)) as { node: { startTime: string }; pods: { startTime: string }[] };
    expect(json.node.startTime).to.equal('2026-11-25T11:00:00Z');
    expect(json.pods[0]!.startTime).to.equal('2026-11-25T11:59:50Z');
  });
});

import { expect } from 'chai';
import type { Container, Pod } from '../../../../../src/api/core.js';
import type { CheckpointStore } from '../../../../../src/kubelet/cm/cpumanager/manager.js';
import { ResourceManagers } from '../../../../../src/kubelet/cm/resourcemanagers.js';
import { CPUManagerState, marshalCheckpoint } from '../../../../../src/kubelet/cm/cpumanager/state.js';
import { CPUSet } from '../../../../../src/kubelet/cm/cpumanager/cpuset.js';
import { topologyFromSysfs, type CPUTopology } from '../../../../../src/kubelet/cm/cpumanager/topology.js';
import { dualSocketHT, singleSocketHT } from './topologies.js';

class MemStore implements CheckpointStore {
  readonly path = '/var/lib/kubelet/cpu_manager_state';
  constructor(public text?: string) {}
  read(): string | undefined {
    return this.text;
  }
  write(t: string): void {
    this.text = t;
  }
}

let seq = 0;
function ctr(name: string, cpu?: string, extra: Partial<Container> = {}): Container {
  return {
    name,
    image: 'busybox',
    ...(cpu ? { resources: { requests: { cpu, memory: '64Mi' }, limits: { cpu, memory: '64Mi' } } } : {}),
    ...extra,
  };
}
function pod(containers: Container[], initContainers: Container[] = []): Pod {
  const uid = `uid-${++seq}`;
  return {
    metadata: { name: `p${seq}`, namespace: 'default', uid },
    spec: { containers, ...(initContainers.length ? { initContainers } : {}) },
  } as Pod;
}

interface Setup {
  topo?: CPUTopology;
  policy?: string;
  options?: Record<string, string>;
  reservedSystemCPUs?: string;
  kubeReservedCPU?: string;
  topologyPolicy?: string;
  scope?: string;
  store?: MemStore;
}
function managers(s: Setup = {}): ResourceManagers {
  return new ResourceManagers(
    {
      cpuManager: {
        policy: s.policy ?? 'static',
        options: s.options ?? {},
        ...(s.reservedSystemCPUs !== undefined ? { reservedSystemCPUs: s.reservedSystemCPUs } : {}),
        ...(s.reservedSystemCPUs === undefined ? { kubeReservedCPU: s.kubeReservedCPU ?? '1' } : {}),
      },
      topologyManager: { policy: s.topologyPolicy ?? 'none', scope: s.scope ?? 'container', options: {} },
      reconcilePeriodMs: 10_000,
    },
    s.topo ?? dualSocketHT,
    s.store ?? new MemStore(),
  );
}

describe('cpumanager static policy through the resource managers', () => {
  const admitted: Pod[] = [];
  const admit = (m: ResourceManagers, p: Pod): ReturnType<ResourceManagers['admit']> => {
    const r = m.admit(p, admitted);
    if (r.admit) admitted.push(p);
    return r;
  };
  beforeEach(() => (admitted.length = 0));

  it('reserves CPU 0 (by topology) and pins a Guaranteed container to a whole free core', () => {
    const m = managers();
    const p = pod([ctr('app', '2')]);
    expect(admit(m, p)).to.deep.equal({ admit: true });
    const uid = p.metadata.uid!;
    expect(m.cpuManager.cpusetFor(uid, 'app')).to.equal('2,8');
    expect(m.cpuManager.hasExclusiveCPUs(uid, 'app')).to.equal(true);
    expect(m.cpuManager.sharedPool().toString()).to.equal('0-1,3-7,9-11');
  });

  it('gives Burstable and non-integer containers the shared pool', () => {
    const m = managers();
    const g = pod([ctr('app', '2')]);
    admit(m, g);
    const burstable = pod([ctr('b', undefined, { resources: { requests: { cpu: '1' } } })]);
    const fractional = pod([ctr('f', '1500m')]);
    for (const p of [burstable, fractional]) {
      expect(admit(m, p)).to.deep.equal({ admit: true });
      const name = p.spec.containers[0]!.name;
      expect(m.cpuManager.hasExclusiveCPUs(p.metadata.uid!, name)).to.equal(false);
      expect(m.cpuManager.cpusetFor(p.metadata.uid!, name)).to.equal('0-1,3-7,9-11');
    }
  });

  it('uses reservedSystemCPUs as given and keeps them in the shared pool', () => {
    const m = managers({ topo: singleSocketHT, reservedSystemCPUs: '0' });
    const p = pod([ctr('app', '1')]);
    admit(m, p);
    // CPU 4 is the lone thread left of core 0: taken before a free core is broken.
    expect(m.cpuManager.cpusetFor(p.metadata.uid!, 'app')).to.equal('4');
    expect(m.cpuManager.sharedPool().toString()).to.equal('0-3,5-7');
    expect(m.cpuManager.allocatableCPUs().toString()).to.equal('1-7');
  });

  it('strict-cpu-reservation keeps the reserved CPUs out of the shared pool', () => {
    const m = managers({
      topo: singleSocketHT,
      reservedSystemCPUs: '0,4',
      options: { 'strict-cpu-reservation': 'true' },
    });
    expect(m.cpuManager.sharedPool().toString()).to.equal('1-3,5-7');
  });

  it('full-pcpus-only refuses an odd request with SMTAlignmentError', () => {
    const m = managers({ options: { 'full-pcpus-only': 'true' } });
    const r = admit(m, pod([ctr('app', '1')]));
    expect(r).to.deep.equal({
      admit: false,
      reason: 'SMTAlignmentError',
      message: 'SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2',
    });
  });

  it('full-pcpus-only refuses when not enough whole cores are free', () => {
    // Reserved CPU 0 takes its sibling 6 out of the physical CPUs: 10 are left.
    const m = managers({ options: { 'full-pcpus-only': 'true' } });
    const r = admit(m, pod([ctr('app', '12')]));
    expect(r).to.deep.include({ admit: false, reason: 'SMTAlignmentError' });
    expect((r as { message: string }).message).to.equal(
      'SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 10, requested CPUs = 12, CPUs per core = 2',
    );
  });

  it('refuses more CPUs than are free as the kubelet does (UnexpectedAdmissionError)', () => {
    const m = managers();
    const r = admit(m, pod([ctr('app', '12')]));
    expect(r).to.deep.equal({
      admit: false,
      reason: 'UnexpectedAdmissionError',
      message:
        'Allocate failed due to not enough cpus available to satisfy request: requested=12, available=11, which is unexpected',
    });
  });

  it('lets app containers reuse the CPUs of an init container', () => {
    const m = managers();
    const p = pod([ctr('app', '2')], [ctr('init', '2')]);
    admit(m, p);
    const uid = p.metadata.uid!;
    expect(m.cpuManager.cpusetFor(uid, 'init')).to.equal('2,8');
    expect(m.cpuManager.cpusetFor(uid, 'app')).to.equal('2,8');
  });

  it('does not let app containers reuse the CPUs of a sidecar', () => {
    const m = managers();
    const p = pod([ctr('app', '2')], [ctr('sidecar', '2', { restartPolicy: 'Always' })]);
    admit(m, p);
    const uid = p.metadata.uid!;
    expect(m.cpuManager.cpusetFor(uid, 'sidecar')).to.equal('2,8');
    expect(m.cpuManager.cpusetFor(uid, 'app')).to.equal('4,10');
  });

  it('gives pods with pod-level resources nothing exclusive (PodLevelResourceManagers off)', () => {
    const m = managers();
    const p = pod([ctr('app', '2')]);
    p.spec.resources = { requests: { cpu: '2', memory: '64Mi' }, limits: { cpu: '2', memory: '64Mi' } };
    expect(admit(m, p)).to.deep.equal({ admit: true });
    expect(m.cpuManager.hasExclusiveCPUs(p.metadata.uid!, 'app')).to.equal(false);
  });

  it('frees the CPUs of a pod that is no longer active, and the reconcile loop then updates the others', () => {
    const m = managers();
    const a = pod([ctr('app', '2')]);
    const b = pod([ctr('web')]);
    admit(m, a);
    admit(m, b);
    const running = [
      { podUID: a.metadata.uid!, name: 'app', id: 'c-a' },
      { podUID: b.metadata.uid!, name: 'web', id: 'c-b' },
    ];
    const first = m.cpuManager.reconcile(running);
    expect(first).to.deep.equal([
      { id: 'c-a', cpuset: '2,8' },
      { id: 'c-b', cpuset: '0-1,3-7,9-11' },
    ]);
    for (const u of first) m.cpuManager.updated(u.id, u.cpuset);
    expect(m.cpuManager.reconcile(running)).to.deep.equal([]);
    m.retain([b]);
    expect(m.cpuManager.sharedPool().toString()).to.equal('0-11');
    expect(m.cpuManager.reconcile(running.slice(1))).to.deep.equal([{ id: 'c-b', cpuset: '0-11' }]);
  });

  it('keeps its state in the checkpoint across a restart', () => {
    const store = new MemStore();
    const m = managers({ store });
    const p = pod([ctr('app', '2')]);
    admit(m, p);
    const again = managers({ store });
    expect(again.cpuManager.cpusetFor(p.metadata.uid!, 'app')).to.equal('2,8');
    expect(JSON.parse(store.text!)).to.deep.include({
      policyName: 'static',
      defaultCpuSet: '0-1,3-7,9-11',
      entries: { [p.metadata.uid!]: { app: '2,8' } },
    });
  });

  it('refuses to start on a checkpoint of another policy, as the kubelet does', () => {
    const store = new MemStore(marshalCheckpoint('none', new CPUManagerState()));
    expect(() => managers({ store })).to.throw(
      'could not restore state from checkpoint: configured policy "static" differs from state checkpoint policy "none", please drain this node and delete the CPU manager checkpoint file "/var/lib/kubelet/cpu_manager_state" before restarting Kubelet',
    );
  });

  it('refuses a corrupted checkpoint and one that does not cover the machine', () => {
    expect(() => managers({ store: new MemStore('{"policyName":"static","checksum":1}') })).to.throw(
      /checksum mismatch/,
    );
    const s = new CPUManagerState();
    s.defaultCPUSet = CPUSet.parse('0-5');
    expect(() => managers({ store: new MemStore(marshalCheckpoint('static', s)) })).to.throw(
      `current set of available CPUs "0-11" doesn't match with CPUs in state "0-5"`,
    );
  });

  const startErrors: [string, Setup, string][] = [
    ['an unknown policy', { policy: 'dynamic' }, 'unknown policy: "dynamic"'],
    [
      'no reserved CPU',
      { kubeReservedCPU: '0' },
      'the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
    ],
    [
      'an alpha option',
      { options: { 'align-by-socket': 'true' } },
      'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
    ],
    [
      'an unknown option',
      { options: { 'pin-everything': 'true' } },
      'unknown CPU Manager Policy option: "pin-everything"',
    ],
    [
      'a bad option value',
      { options: { 'full-pcpus-only': 'yes' } },
      'bad value for option "full-pcpus-only"',
    ],
    [
      'two options that exclude each other',
      { options: { 'prefer-align-cpus-by-uncorecache': 'true', 'distribute-cpus-across-numa': 'true' } },
      'static policy options prefer-align-cpus-by-uncorecache and distribute-cpus-across-numa can not be used at the same time',
    ],
    [
      'options with the none policy',
      { policy: 'none', options: { 'full-pcpus-only': 'true' } },
      'None policy: received unsupported options=map[full-pcpus-only:true]',
    ],
    ['a reserved CPU the machine lacks', { reservedSystemCPUs: '40' }, 'unknown CPU ID: 40'],
    ['an unknown topology policy', { topologyPolicy: 'strict' }, 'unknown policy: "strict"'],
    ['an unknown topology scope', { topologyPolicy: 'restricted', scope: 'node' }, 'unknown scope: "node"'],
  ];
  for (const [what, setup, msg] of startErrors) {
    it(`does not start with ${what}`, () => {
      expect(() => managers(setup)).to.throw(msg);
    });
  }

  it('accepts the beta option distribute-cpus-across-numa (CPUManagerPolicyBetaOptions on)', () => {
    const m = managers({ options: { 'distribute-cpus-across-numa': 'true' } });
    const p = pod([ctr('app', '8')]);
    expect(admit(m, p)).to.deep.equal({ admit: true });
    // More than one NUMA node holds: four CPUs from each (NUMA 0 is the even CPUs).
    const cpus = CPUSet.parse(m.cpuManager.cpusetFor(p.metadata.uid!, 'app')!);
    expect(cpus.list().filter((c) => c % 2 === 0)).to.have.length(4);
    expect(cpus.size).to.equal(8);
  });

  it('under the none policy pins nothing and sets no cpuset', () => {
    const m = managers({ policy: 'none' });
    const p = pod([ctr('app', '2')]);
    expect(admit(m, p)).to.deep.equal({ admit: true });
    expect(m.cpuManager.cpusetFor(p.metadata.uid!, 'app')).to.equal(undefined);
    expect(m.cpuManager.allocatableCPUs().isEmpty()).to.equal(true);
  });
});

describe('topology manager with the CPU manager as hint provider', () => {
  const admitOnce = (m: ResourceManagers, p: Pod): ReturnType<ResourceManagers['admit']> => m.admit(p, [p]);

  it('single-numa-node admits a pod that fits one NUMA node and pins it there', () => {
    const m = managers({ topologyPolicy: 'single-numa-node' });
    const p = pod([ctr('app', '4')]);
    expect(admitOnce(m, p)).to.deep.equal({ admit: true });
    const cpus = CPUSet.parse(m.cpuManager.cpusetFor(p.metadata.uid!, 'app')!);
    expect(new Set(cpus.list().map((c) => c % 2)).size).to.equal(1);
  });

  it('single-numa-node refuses a container larger than a NUMA node with TopologyAffinityError', () => {
    const m = managers({ topologyPolicy: 'single-numa-node' });
    expect(admitOnce(m, pod([ctr('app', '8')]))).to.deep.equal({
      admit: false,
      reason: 'TopologyAffinityError',
      message: 'Resources cannot be allocated with Topology locality',
    });
  });

  it('restricted refuses a container that only fits across NUMA nodes; best-effort admits it', () => {
    // NUMA 0 has 5 free CPUs (CPU 0 reserved), NUMA 1 has 6. After 3 + 3, 2 and 3 are left: 4 CPUs fit only
    // on both, a hint that is not preferred because one NUMA node could hold 4.
    for (const [policy, admitted] of [
      ['restricted', false],
      ['best-effort', true],
    ] as const) {
      const m = managers({ topologyPolicy: policy });
      const pods: Pod[] = [];
      for (const n of ['3', '3']) {
        const p = pod([ctr('a', n)]);
        pods.push(p);
        expect(m.admit(p, pods)).to.deep.equal({ admit: true });
      }
      const third = pod([ctr('c', '4')]);
      pods.push(third);
      const r = m.admit(third, pods);
      expect(r.admit, policy).to.equal(admitted);
      if (!r.admit) expect(r.reason).to.equal('TopologyAffinityError');
    }
  });

  it('pod scope places the whole pod on one NUMA node', () => {
    const m = managers({ topologyPolicy: 'single-numa-node', scope: 'pod' });
    const p = pod([ctr('a', '2'), ctr('b', '2')]);
    expect(admitOnce(m, p)).to.deep.equal({ admit: true });
    const uid = p.metadata.uid!;
    const all = CPUSet.parse(m.cpuManager.cpusetFor(uid, 'a')!).union(
      CPUSet.parse(m.cpuManager.cpusetFor(uid, 'b')!),
    );
    expect(new Set(all.list().map((c) => c % 2)).size).to.equal(1);
    const big = pod([ctr('a', '4'), ctr('b', '4')]);
    expect(admitOnce(m, big)).to.deep.include({ admit: false, reason: 'TopologyAffinityError' });
  });

  it('refuses more NUMA nodes than max-allowable-numa-nodes allows', () => {
    const many = topologyFromSysfs({
      online: '0-9',
      cpus: new Map([...Array(10).keys()].map((c) => [c, { packageID: 0, coreID: c }])),
      numaNodes: new Map([...Array(10).keys()].map((n) => [n, { cpulist: String(n) }])),
    });
    expect(() => managers({ topo: many, topologyPolicy: 'best-effort' })).to.throw(
      'unsupported on machines with more than 8 NUMA Nodes',
    );
    expect(() => managers({ topo: many, topologyPolicy: 'none' })).not.to.throw();
  });
});

describe('cpumanager topology from sysfs', () => {
  it('builds cores from the lowest thread and NUMA nodes from cpulists', () => {
    const t = topologyFromSysfs({
      online: '0-3',
      cpus: new Map([
        [0, { packageID: 0, coreID: 0, l3ID: 0 }],
        [1, { packageID: 0, coreID: 1, l3ID: 0 }],
        [2, { packageID: 0, coreID: 0, l3ID: 0 }],
        [3, { packageID: 0, coreID: 1, l3ID: 0 }],
      ]),
      numaNodes: new Map([[0, { cpulist: '0-3', distance: '10' }]]),
    });
    expect(t.describe()).to.equal('4 CPUs, 2 cores, 1 sockets, 1 NUMA nodes, 1 uncore caches');
    expect(t.details.cpusInCores(1).toString()).to.equal('1,3');
    expect(t.numaDistances.get(0)).to.deep.equal([10]);
  });
  it('puts every CPU on NUMA node 0 when the kernel has no NUMA nodes', () => {
    const t = topologyFromSysfs({
      online: '0-1',
      cpus: new Map([
        [0, { packageID: 0, coreID: 0 }],
        [1, { packageID: 0, coreID: 1 }],
      ]),
      numaNodes: new Map(),
    });
    expect(t.details.numaNodes().toString()).to.equal('0');
    expect(t.numUncoreCache).to.equal(1);
  });
});

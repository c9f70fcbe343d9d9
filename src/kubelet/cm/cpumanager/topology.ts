/**
 * The machine's CPU topology as the kubelet's CPU manager sees it (pkg/kubelet/cm/cpumanager/topology): every
 * logical CPU with its core, socket, NUMA node and uncore (L3) cache. A cri node reads it from the host's
 * sysfs (`topologyFromSysfs`, fed by the shell); a sim node declares one, or gets one socket of single-thread
 * cores sized from its cpu capacity (`declaredTopology`). Pure.
 */
import { CPUSet } from './cpuset.js';

export interface CPUInfo {
  numaNodeID: number;
  socketID: number;
  /** Unique across the machine: the lowest CPU id of the core's threads (the kubelet's getUniqueCoreID). */
  coreID: number;
  uncoreCacheID: number;
}

/** A view of some CPUs of a machine (CPUDetails): the queries the allocator and the hints make. */
export class CPUDetails {
  constructor(readonly byCPU: ReadonlyMap<number, CPUInfo>) {}

  get(cpu: number): CPUInfo | undefined {
    return this.byCPU.get(cpu);
  }

  keepOnly(cpus: CPUSet): CPUDetails {
    return new CPUDetails(new Map([...this.byCPU].filter(([c]) => cpus.has(c))));
  }

  private ids(field: keyof CPUInfo, where?: (i: CPUInfo) => boolean): CPUSet {
    const out: number[] = [];
    for (const info of this.byCPU.values()) if (!where || where(info)) out.push(info[field]);
    return CPUSet.of(...out);
  }

  private cpusWhere(where: (i: CPUInfo) => boolean): CPUSet {
    return CPUSet.of(...[...this.byCPU].filter(([, i]) => where(i)).map(([c]) => c));
  }

  cpus(): CPUSet {
    return CPUSet.of(...this.byCPU.keys());
  }
  numaNodes(): CPUSet {
    return this.ids('numaNodeID');
  }
  sockets(): CPUSet {
    return this.ids('socketID');
  }
  cores(): CPUSet {
    return this.ids('coreID');
  }
  uncoreCaches(): CPUSet {
    return this.ids('uncoreCacheID');
  }
  numaNodesInSockets(...ids: number[]): CPUSet {
    return this.ids('numaNodeID', (i) => ids.includes(i.socketID));
  }
  socketsInNUMANodes(...ids: number[]): CPUSet {
    return this.ids('socketID', (i) => ids.includes(i.numaNodeID));
  }
  coresInNUMANodes(...ids: number[]): CPUSet {
    return this.ids('coreID', (i) => ids.includes(i.numaNodeID));
  }
  coresInSockets(...ids: number[]): CPUSet {
    return this.ids('coreID', (i) => ids.includes(i.socketID));
  }
  uncoreInNUMANodes(...ids: number[]): CPUSet {
    return this.ids('uncoreCacheID', (i) => ids.includes(i.numaNodeID));
  }
  cpusInNUMANodes(...ids: number[]): CPUSet {
    return this.cpusWhere((i) => ids.includes(i.numaNodeID));
  }
  cpusInSockets(...ids: number[]): CPUSet {
    return this.cpusWhere((i) => ids.includes(i.socketID));
  }
  cpusInCores(...ids: number[]): CPUSet {
    return this.cpusWhere((i) => ids.includes(i.coreID));
  }
  cpusInUncoreCaches(...ids: number[]): CPUSet {
    return this.cpusWhere((i) => ids.includes(i.uncoreCacheID));
  }
  /** The first `n` cores (by id) of the uncore caches `ids`, or all of them when there are fewer. */
  coresNeededInUncoreCache(n: number, ...ids: number[]): CPUSet {
    const cores = this.ids('coreID', (i) => ids.includes(i.uncoreCacheID));
    return cores.size <= n ? cores : CPUSet.of(...cores.list().slice(0, n));
  }
  areNUMANodesInSameSocket(numaNodes: readonly number[]): boolean {
    const all = this.numaNodes();
    if (!numaNodes.every((n) => all.has(n))) return false;
    return this.socketsInNUMANodes(...numaNodes).size <= 1;
  }
}

export class CPUTopology {
  readonly numCPUs: number;
  readonly numCores: number;
  readonly numSockets: number;
  readonly numNUMANodes: number;
  readonly numUncoreCache: number;

  constructor(
    readonly details: CPUDetails,
    /** NUMA node id -> distances to every node by id order (sysfs `distance`), for prefer-closest-numa-nodes. */
    readonly numaDistances: ReadonlyMap<number, readonly number[]> = new Map(),
  ) {
    this.numCPUs = details.byCPU.size;
    this.numCores = details.cores().size;
    this.numSockets = details.sockets().size;
    this.numNUMANodes = details.numaNodes().size;
    this.numUncoreCache = details.uncoreCaches().size;
  }

  cpusPerCore(): number {
    return this.numCores === 0 ? 0 : Math.floor(this.numCPUs / this.numCores);
  }
  cpusPerSocket(): number {
    return this.numSockets === 0 ? 0 : Math.floor(this.numCPUs / this.numSockets);
  }
  cpusPerUncore(): number {
    return this.numUncoreCache === 0 ? 0 : Math.floor(this.numCPUs / this.numUncoreCache);
  }
  /** Whether every CPU of `cpus` shares one uncore cache (the kubelet's Alignment.UncoreCache). */
  alignedAtUncoreCache(cpus: CPUSet): boolean {
    return this.details.keepOnly(cpus).uncoreCaches().size === 1;
  }
  /** A short description for log lines. */
  describe(): string {
    return (
      `${this.numCPUs} CPUs, ${this.numCores} cores, ${this.numSockets} sockets, ` +
      `${this.numNUMANodes} NUMA nodes, ${this.numUncoreCache} uncore caches`
    );
  }
}

/** A topology built from explicit per-CPU facts; core ids are made unique as the kubelet does. */
export function topologyFromCPUs(
  cpus: ReadonlyArray<{ cpu: number; socket: number; numaNode: number; core: number; uncoreCache?: number }>,
  numaDistances?: ReadonlyMap<number, readonly number[]>,
): CPUTopology {
  // A core is (socket, core id) in sysfs; the kubelet names it by its lowest thread.
  const lowest = new Map<string, number>();
  for (const c of cpus) {
    const k = `${c.socket}/${c.core}`;
    lowest.set(k, Math.min(lowest.get(k) ?? Infinity, c.cpu));
  }
  const m = new Map<number, CPUInfo>();
  for (const c of cpus) {
    if (m.has(c.cpu)) throw new Error(`CPU ${c.cpu} is listed twice`);
    m.set(c.cpu, {
      numaNodeID: c.numaNode,
      socketID: c.socket,
      coreID: lowest.get(`${c.socket}/${c.core}`)!,
      // Without an L3 cache id the kubelet takes the socket as the uncore cache.
      uncoreCacheID: c.uncoreCache ?? c.socket,
    });
  }
  if (m.size === 0) throw new Error('could not detect number of cpus');
  return new CPUTopology(new CPUDetails(m), numaDistances);
}

/** A sim node's declared topology (VirtualNode spec.kubelet.cpuTopology). */
export interface DeclaredCPUTopology {
  sockets: number;
  numaNodesPerSocket: number;
  coresPerNUMANode: number;
  threadsPerCore: number;
  /** L3 caches per NUMA node (default 1); the cores of a NUMA node split evenly between them. */
  uncoreCachesPerNUMANode?: number;
}

/**
 * CPUs numbered as Linux numbers them on common servers: first threads of all cores (socket by socket, NUMA
 * node by NUMA node), then the second threads in the same order. NUMA distances 10 local, 20 in the socket,
 * 32 across sockets.
 */
export function declaredTopology(d: DeclaredCPUTopology): CPUTopology {
  const uncorePerNuma = d.uncoreCachesPerNUMANode ?? 1;
  for (const [k, v] of Object.entries({ ...d, uncoreCachesPerNUMANode: uncorePerNuma })) {
    if (!Number.isInteger(v) || v < 1)
      throw new Error(`cpuTopology.${k} must be a positive integer, got ${v}`);
  }
  if (d.coresPerNUMANode % uncorePerNuma !== 0)
    throw new Error(
      `cpuTopology: ${d.coresPerNUMANode} cores per NUMA node do not split into ${uncorePerNuma} uncore caches`,
    );
  const numas = d.sockets * d.numaNodesPerSocket;
  const cores = numas * d.coresPerNUMANode;
  const coresPerUncore = d.coresPerNUMANode / uncorePerNuma;
  const cpus: Parameters<typeof topologyFromCPUs>[0][number][] = [];
  for (let t = 0; t < d.threadsPerCore; t++) {
    for (let core = 0; core < cores; core++) {
      const numaNode = Math.floor(core / d.coresPerNUMANode);
      cpus.push({
        cpu: t * cores + core,
        socket: Math.floor(numaNode / d.numaNodesPerSocket),
        numaNode,
        core,
        uncoreCache: Math.floor(core / coresPerUncore),
      });
    }
  }
  const distances = new Map<number, number[]>();
  for (let a = 0; a < numas; a++) {
    const row: number[] = [];
    for (let b = 0; b < numas; b++) {
      const sameSocket = Math.floor(a / d.numaNodesPerSocket) === Math.floor(b / d.numaNodesPerSocket);
      row.push(a === b ? 10 : sameSocket ? 20 : 32);
    }
    distances.set(a, row);
  }
  return topologyFromCPUs(cpus, distances);
}

/** A sim node without a declared topology: one socket, one NUMA node, one single-thread core per cpu. */
export function topologyFromCapacity(cpuCapacityMilli: number): CPUTopology {
  const n = Math.max(1, Math.floor(cpuCapacityMilli / 1000));
  return declaredTopology({ sockets: 1, numaNodesPerSocket: 1, coresPerNUMANode: n, threadsPerCore: 1 });
}

/**
 * What the shell reads from sysfs: `/sys/devices/system/cpu/online`, per online CPU its `topology/
 * physical_package_id`, `topology/core_id` and `cache/index3/id` (absent when unreadable), and per NUMA node
 * `/sys/devices/system/node/nodeN/cpulist` and `distance` (none on a kernel without NUMA).
 */
export interface SysfsCPUFacts {
  online: string;
  cpus: ReadonlyMap<number, { packageID: number; coreID: number; l3ID?: number }>;
  numaNodes: ReadonlyMap<number, { cpulist: string; distance?: string }>;
}

/** The topology cadvisor and the kubelet build from those files. */
export function topologyFromSysfs(f: SysfsCPUFacts): CPUTopology {
  const online = CPUSet.parse(f.online);
  const numaOf = new Map<number, number>();
  for (const [node, n] of f.numaNodes) for (const c of CPUSet.parse(n.cpulist).list()) numaOf.set(c, node);
  const cpus = online.list().map((cpu) => {
    const t = f.cpus.get(cpu);
    if (!t) throw new Error(`no topology read for online CPU ${cpu}`);
    return {
      cpu,
      socket: t.packageID,
      core: t.coreID,
      // A kernel without NUMA nodes: the machine is one node 0.
      numaNode: numaOf.get(cpu) ?? 0,
      ...(t.l3ID !== undefined ? { uncoreCache: t.l3ID } : {}),
    };
  });
  const distances = new Map<number, number[]>();
  for (const [node, n] of f.numaNodes) {
    if (n.distance !== undefined) distances.set(node, n.distance.trim().split(/\s+/).map(Number));
  }
  return topologyFromCPUs(cpus, distances);
}

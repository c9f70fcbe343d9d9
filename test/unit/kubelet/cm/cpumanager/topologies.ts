/**
 * Machines the CPU and topology manager tests run on, in the shapes of the kubelet's own test topologies
 * (built here from their layout rules rather than listed CPU by CPU).
 */
import {
  declaredTopology,
  topologyFromCPUs,
  type CPUTopology,
} from '../../../../../src/kubelet/cm/cpumanager/topology.js';

const range = (n: number): number[] => [...Array(n).keys()];

/** 1 socket, 4 cores, 2 threads: CPUs c and c+4 share core c. */
export const singleSocketHT: CPUTopology = topologyFromCPUs(
  range(8).map((cpu) => ({ cpu, socket: 0, numaNode: 0, core: cpu % 4, uncoreCache: 0 })),
);

/** 2 sockets (one NUMA node each) of 3 cores, 2 threads, interleaved: core c holds CPUs c and c+6, socket c%2. */
export const dualSocketHT: CPUTopology = topologyFromCPUs(
  range(12).map((cpu) => ({ cpu, socket: cpu % 2, numaNode: cpu % 2, core: cpu % 6, uncoreCache: 0 })),
);

/** 2 sockets, 2 NUMA nodes each, 10 cores per NUMA node, 2 threads: CPUs 0-39 first threads, 40-79 second. */
export const dualSocketMultiNumaPerSocketHT: CPUTopology = declaredTopology({
  sockets: 2,
  numaNodesPerSocket: 2,
  coresPerNUMANode: 10,
  threadsPerCore: 2,
});

/** 2 sockets in one NUMA node, no SMT, 4 uncore caches of 4 CPUs. */
export const uncoreDualSocketNoSMT: CPUTopology = topologyFromCPUs(
  range(16).map((cpu) => ({
    cpu,
    socket: Math.floor(cpu / 8),
    numaNode: 0,
    core: cpu,
    uncoreCache: Math.floor(cpu / 4),
  })),
);

/** 1 socket, 8 cores, 2 threads (c and c+8), 2 uncore caches of 4 cores. */
export const uncoreSingleSocketSMT: CPUTopology = topologyFromCPUs(
  range(16).map((cpu) => ({
    cpu,
    socket: 0,
    numaNode: 0,
    core: cpu % 8,
    uncoreCache: Math.floor((cpu % 8) / 4),
  })),
);

/**
 * The CPU manager's static policy (pkg/kubelet/cm/cpumanager/policy_static.go): containers of Guaranteed pods
 * with an integer cpu request get that many CPUs of their own, taken from the shared pool by topology
 * (cpu_assignment.ts) and aligned to the topology manager's NUMA affinity; everything else runs on the shared
 * pool, which always keeps the reserved CPUs. Init containers' CPUs are reused by the app containers after
 * them. Pods with pod-level resources get nothing exclusive (PodLevelResourceManagers is off by default in
 * v1.37). Pure: decisions over a CPUManagerState.
 */
import type { Container, Pod } from '../../../api/core.js';
import { isRestartableInitContainer } from '../../../api/core.js';
import { isPodLevelResourcesSet } from '../../../api/resources.js';
import { quantityMilliValue } from '../../../util/quantity.js';
import { getPodQOS } from '../../qos.js';
import { iterateMasks, type NUMAMask } from '../topologymanager/bitmask.js';
import type { ProviderHints, TopologyHint } from '../topologymanager/policy.js';
import { takeByTopologyNUMADistributed, takeByTopologyNUMAPacked } from './cpu_assignment.js';
import { CPUSet } from './cpuset.js';
import {
  newStaticPolicyOptions,
  validateStaticPolicyOptions,
  type CPUManagerGates,
  type StaticPolicyOptions,
} from './policy_options.js';
import type { CPUManagerState } from './state.js';
import type { CPUTopology } from './topology.js';

/** An admission refusal with the kubelet's reason (its admission.Error's Type()). */
export class AdmissionError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** SMTAlignmentError: full-pcpus-only refuses a request that would split a core. */
export function smtAlignmentError(
  requested: number,
  cpusPerCore: number,
  availablePhysical?: number,
): AdmissionError {
  return new AdmissionError(
    'SMTAlignmentError',
    availablePhysical === undefined
      ? `SMT Alignment Error: requested ${requested} cpus not multiple cpus per core = ${cpusPerCore}`
      : `SMT Alignment Error: not enough free physical CPUs: available physical CPUs = ${availablePhysical}, requested CPUs = ${requested}, CPUs per core = ${cpusPerCore}`,
  );
}

export interface StaticPolicyConfig {
  topology: CPUTopology;
  /** ceil(kubeReserved.cpu + systemReserved.cpu), or the size of reservedSystemCPUs. */
  numReservedCPUs: number;
  /** reservedSystemCPUs, when set (empty: chosen by topology). */
  reservedCPUs: CPUSet;
  options: Readonly<Record<string, string>>;
  gates?: CPUManagerGates;
  /** The topology manager's policy name (align-by-socket is refused with single-numa-node). */
  topologyPolicy: string;
  /** The topology manager's chosen affinity for a container (its Store.GetAffinity). */
  affinity: (podUID: string, container: string) => TopologyHint | undefined;
}

function cpuRequestMilli(c: Pick<Container, 'resources'>): number | undefined {
  const q = c.resources?.requests?.['cpu'];
  return q === undefined ? undefined : quantityMilliValue(q);
}

export class StaticPolicy {
  readonly name = 'static';
  readonly topology: CPUTopology;
  readonly options: StaticPolicyOptions;
  readonly reservedCPUs: CPUSet;
  readonly reservedPhysicalCPUs: CPUSet;
  readonly cpuGroupSize: number;
  private readonly affinity: StaticPolicyConfig['affinity'];
  /** CPUs of a pod's finished init containers, for its next containers (only the pod being admitted). */
  private readonly cpusToReuse = new Map<string, CPUSet>();

  /** NewStaticPolicy: throws the kubelet's errors for bad options and a reservation it cannot make. */
  constructor(c: StaticPolicyConfig) {
    this.options = newStaticPolicyOptions(c.options, c.gates);
    validateStaticPolicyOptions(this.options, c.topology, c.topologyPolicy);
    this.topology = c.topology;
    this.affinity = c.affinity;
    this.cpuGroupSize = c.topology.cpusPerCore();
    const all = c.topology.details.cpus();
    let reserved: CPUSet;
    if (c.reservedCPUs.size > 0) reserved = c.reservedCPUs;
    else {
      try {
        reserved = this.takeByTopology(all, c.numReservedCPUs);
      } catch {
        reserved = CPUSet.empty();
      }
    }
    if (reserved.size !== c.numReservedCPUs)
      throw new Error(
        `[cpumanager] unable to reserve the required amount of CPUs (size of ${reserved.toString()} did not equal ${c.numReservedCPUs})`,
      );
    let physical = CPUSet.empty();
    for (const cpu of reserved.list()) {
      const info = c.topology.details.get(cpu);
      if (!info)
        throw new Error(
          `[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: ${cpu}`,
        );
      physical = physical.union(c.topology.details.cpusInCores(info.coreID));
    }
    this.reservedCPUs = reserved;
    this.reservedPhysicalCPUs = physical;
  }

  /** Start: a fresh state gets every CPU (minus the reserved ones with strict-cpu-reservation); a restored one is checked. */
  start(s: CPUManagerState): void {
    let all = this.topology.details.cpus();
    if (this.options.strictCPUReservation) all = all.difference(this.reservedCPUs);
    if (s.defaultCPUSet.isEmpty()) {
      if (s.assignments.size !== 0) throw new Error('default cpuset cannot be empty');
      s.defaultCPUSet = all;
      return;
    }
    const inDefault = this.reservedCPUs.intersection(s.defaultCPUSet);
    if (this.options.strictCPUReservation) {
      if (!inDefault.isEmpty())
        throw new Error(
          `some of strictly reserved cpus: "${inDefault.toString()}" are present in defaultCpuSet: "${s.defaultCPUSet.toString()}"`,
        );
    } else if (!inDefault.equals(this.reservedCPUs)) {
      throw new Error(
        `not all reserved cpus: "${this.reservedCPUs.toString()}" are present in defaultCpuSet: "${s.defaultCPUSet.toString()}"`,
      );
    }
    let known = s.defaultCPUSet;
    for (const [pod, m] of s.assignments) {
      for (const [container, cpus] of m) {
        if (!s.defaultCPUSet.intersection(cpus).isEmpty())
          throw new Error(
            `pod: ${pod}, container: ${container} cpuset: "${cpus.toString()}" overlaps with default cpuset "${s.defaultCPUSet.toString()}"`,
          );
        known = known.union(cpus);
      }
    }
    if (!known.equals(all))
      throw new Error(
        `current set of available CPUs "${all.toString()}" doesn't match with CPUs in state "${known.toString()}"`,
      );
  }

  /** CPUs that may ever be exclusive (podresources GetAllocatableResources). */
  allocatableCPUs(): CPUSet {
    return this.topology.details.cpus().difference(this.reservedCPUs);
  }

  availableCPUs(s: CPUManagerState): CPUSet {
    return s.defaultCPUSet.difference(this.reservedCPUs);
  }

  /** The container's exclusive CPU count: Guaranteed pod, integer request; 0 otherwise. */
  guaranteedCPUs(pod: Pod, container: Container): number {
    if (getPodQOS(pod) !== 'Guaranteed') return 0;
    const milli = cpuRequestMilli(container) ?? 0;
    if (milli % 1000 !== 0) return 0;
    return milli / 1000;
  }

  /** The pod's: the larger of the long-running containers' sum and the biggest init container's need. */
  podGuaranteedCPUs(pod: Pod): number {
    let byInit = 0;
    let byRestartableInit = 0;
    for (const c of pod.spec.initContainers ?? []) {
      if (cpuRequestMilli(c) === undefined) continue;
      const n = this.guaranteedCPUs(pod, c);
      if (isRestartableInitContainer(c)) byRestartableInit += n;
      else if (byRestartableInit + n > byInit) byInit = byRestartableInit + n;
    }
    let byApps = 0;
    for (const c of pod.spec.containers) {
      if (cpuRequestMilli(c) === undefined) continue;
      byApps += this.guaranteedCPUs(pod, c);
    }
    return Math.max(byInit, byApps + byRestartableInit);
  }

  private updateCPUsToReuse(pod: Pod, container: Container, cpus: CPUSet): void {
    const uid = pod.metadata.uid as string;
    for (const k of [...this.cpusToReuse.keys()]) if (k !== uid) this.cpusToReuse.delete(k);
    const current = this.cpusToReuse.get(uid) ?? CPUSet.empty();
    const init = (pod.spec.initContainers ?? []).find((c) => c.name === container.name);
    if (init && !isRestartableInitContainer(init)) {
      this.cpusToReuse.set(uid, current.union(cpus));
      return;
    }
    this.cpusToReuse.set(uid, current.difference(cpus));
  }

  private enforceSMTAlignment(s: CPUManagerState, n: number): void {
    if (!this.options.fullPhysicalCPUsOnly) return;
    if (n % this.cpuGroupSize !== 0) throw smtAlignmentError(n, this.cpuGroupSize);
    const availablePhysical = s.defaultCPUSet.difference(this.reservedPhysicalCPUs).size;
    if (n > availablePhysical) throw smtAlignmentError(n, this.cpuGroupSize, availablePhysical);
  }

  /** Allocate (AddOperation): exclusive CPUs for the container, or nothing. Throws on refusal. */
  allocate(s: CPUManagerState, pod: Pod, container: Container): void {
    const n = this.guaranteedCPUs(pod, container);
    if (n === 0) return;
    if (isPodLevelResourcesSet(pod.spec)) return;
    const uid = pod.metadata.uid as string;
    const existing = s.getCPUSet(uid, container.name);
    if (existing) {
      this.updateCPUsToReuse(pod, container, existing);
      return;
    }
    this.enforceSMTAlignment(s, n);
    const hint = this.affinity(uid, container.name);
    const cpus = this.allocateCPUs(s, n, hint?.affinity, this.cpusToReuse.get(uid) ?? CPUSet.empty());
    s.setCPUSet(uid, container.name, cpus);
    this.updateCPUsToReuse(pod, container, cpus);
  }

  private alignedCPUs(affinity: NUMAMask, allocatable: CPUSet): CPUSet {
    const d = this.topology.details;
    const numas = affinity.bits();
    if (this.options.alignBySocket) {
      return d
        .socketsInNUMANodes(...numas)
        .list()
        .reduce((acc, s) => acc.union(allocatable.intersection(d.cpusInSockets(s))), CPUSet.empty());
    }
    return numas.reduce(
      (acc, n) => acc.union(allocatable.intersection(d.cpusInNUMANodes(n))),
      CPUSet.empty(),
    );
  }

  private allocateCPUs(
    s: CPUManagerState,
    n: number,
    affinity: NUMAMask | undefined,
    reusable: CPUSet,
  ): CPUSet {
    const allocatable = this.availableCPUs(s).union(reusable);
    let result = CPUSet.empty();
    if (affinity) {
      const aligned = this.alignedCPUs(affinity, allocatable);
      result = this.takeByTopology(aligned, Math.min(n, aligned.size));
    }
    result = result.union(this.takeByTopology(allocatable.difference(result), n - result.size));
    s.defaultCPUSet = s.defaultCPUSet.difference(result);
    return result;
  }

  takeByTopology(available: CPUSet, n: number): CPUSet {
    const strategy = this.options.distributeCPUsAcrossCores ? 'spread' : 'packed';
    if (this.options.distributeCPUsAcrossNUMA) {
      const group = this.options.fullPhysicalCPUsOnly ? this.cpuGroupSize : 1;
      return takeByTopologyNUMADistributed(
        this.topology,
        available,
        n,
        group,
        strategy,
        this.options.alignBySocket,
      );
    }
    return takeByTopologyNUMAPacked(
      this.topology,
      available,
      n,
      strategy,
      this.options.preferAlignByUncoreCache,
    );
  }

  /** RemoveContainer: its CPUs back to the shared pool, except those a sibling still holds. */
  removeContainer(s: CPUManagerState, podUID: string, container: string): void {
    const cpus = s.getCPUSet(podUID, container);
    if (!cpus) return;
    s.delete(podUID, container);
    let inUse = CPUSet.empty();
    for (const [name, other] of s.assignments.get(podUID) ?? [])
      if (name !== container) inUse = inUse.union(other);
    s.defaultCPUSet = s.defaultCPUSet.union(cpus.difference(inUse));
  }

  /** GetTopologyHints (container scope). */
  topologyHints(s: CPUManagerState, pod: Pod, container: Container): ProviderHints {
    const requested = this.guaranteedCPUs(pod, container);
    if (requested === 0 || isPodLevelResourcesSet(pod.spec)) return undefined;
    const uid = pod.metadata.uid as string;
    const allocated = s.getCPUSet(uid, container.name);
    if (allocated) {
      if (allocated.size !== requested) return { cpu: [] };
      return { cpu: this.generateHints(allocated, CPUSet.empty(), requested) };
    }
    return {
      cpu: this.generateHints(this.availableCPUs(s), this.cpusToReuse.get(uid) ?? CPUSet.empty(), requested),
    };
  }

  /** GetPodTopologyHints (pod scope). */
  podTopologyHints(s: CPUManagerState, pod: Pod): ProviderHints {
    const requested = this.podGuaranteedCPUs(pod);
    if (requested === 0 || isPodLevelResourcesSet(pod.spec)) return undefined;
    const uid = pod.metadata.uid as string;
    let assigned = CPUSet.empty();
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const allocated = s.getCPUSet(uid, c.name);
      if (!allocated) continue;
      if (allocated.size !== this.guaranteedCPUs(pod, c)) return { cpu: [] };
      assigned = assigned.union(allocated);
    }
    if (assigned.size === requested) return { cpu: this.generateHints(assigned, CPUSet.empty(), requested) };
    const reusable = (this.cpusToReuse.get(uid) ?? CPUSet.empty()).union(assigned);
    return { cpu: this.generateHints(this.availableCPUs(s), reusable, requested) };
  }

  /** Every NUMA mask that could hold the request; the narrowest possible ones preferred. */
  generateHints(available: CPUSet, reusable: CPUSet, request: number): TopologyHint[] {
    const d = this.topology.details;
    let minAffinitySize = d.numaNodes().size;
    const hints: TopologyHint[] = [];
    iterateMasks(d.numaNodes().list(), (mask) => {
      if (d.cpusInNUMANodes(...mask.bits()).size >= request && mask.count() < minAffinitySize)
        minAffinitySize = mask.count();
      let matching = 0;
      for (const c of reusable.list()) {
        if (!mask.isSet(d.get(c)!.numaNodeID)) return;
        matching++;
      }
      for (const c of available.list()) if (mask.isSet(d.get(c)!.numaNodeID)) matching++;
      if (matching < request) return;
      hints.push({ affinity: mask, preferred: false });
    });
    for (const h of hints) {
      if (this.options.alignBySocket && this.isHintSocketAligned(h, minAffinitySize)) h.preferred = true;
      else if (h.affinity!.count() === minAffinitySize) h.preferred = true;
    }
    return hints;
  }

  private isHintSocketAligned(h: TopologyHint, minAffinitySize: number): boolean {
    const perSocket = Math.floor(this.topology.numNUMANodes / this.topology.numSockets);
    if (perSocket === 0) return false;
    const minSockets = Math.floor((minAffinitySize + perSocket - 1) / perSocket);
    return this.topology.details.socketsInNUMANodes(...h.affinity!.bits()).size === minSockets;
  }
}

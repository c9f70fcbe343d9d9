/**
 * The CPU manager (pkg/kubelet/cm/cpumanager/cpu_manager.go) around its policy: `none` pins nothing; `static`
 * (policy_static.ts) allocates at admission through the topology manager, keeps its state in the checkpoint
 * `cpu_manager_state`, frees the CPUs of containers whose pods are gone, and says which cpuset each container
 * should run on, which the reconcile loop (`reconcile`) pushes to running containers when the shared pool
 * changes. Pure: the checkpoint is read and written through a CheckpointStore.
 */
import type { Container, Pod } from '../../../api/core.js';
import { quantityMilliValue } from '../../../util/quantity.js';
import type { HintProvider } from '../topologymanager/manager.js';
import type { ProviderHints, TopologyHint } from '../topologymanager/policy.js';
import { CPUSet } from './cpuset.js';
import { StaticPolicy } from './policy_static.js';
import type { CPUManagerGates } from './policy_options.js';
import { CPU_MANAGER_STATE_FILE, CPUManagerState, marshalCheckpoint, unmarshalCheckpoint } from './state.js';
import type { CPUTopology } from './topology.js';

export interface CheckpointStore {
  /** The file's text; undefined when there is none. */
  read(): string | undefined;
  write(text: string): void;
  /** The file's path, for the kubelet's error message. */
  readonly path: string;
}

export interface CPUManagerConfig {
  /** kubelet cpuManagerPolicy: none (default) or static. */
  policy: string;
  /** kubelet cpuManagerPolicyOptions. */
  options: Readonly<Record<string, string>>;
  /** kubelet reservedSystemCPUs (a cpuset); overrides the cpu of kubeReserved and systemReserved. */
  reservedSystemCPUs?: string;
  /** kubeReserved.cpu and systemReserved.cpu (quantities). */
  kubeReservedCPU?: string;
  systemReservedCPU?: string;
  gates?: CPUManagerGates;
}

/** A running container the reconcile loop may update. */
export interface ReconcileContainer {
  podUID: string;
  name: string;
  id: string;
}

export class CPUManager implements HintProvider {
  readonly policyName: 'none' | 'static';
  private readonly policy: StaticPolicy | undefined;
  private readonly state: CPUManagerState;
  /** The cpuset last written to each running container (lastUpdateState), by container id. */
  private readonly lastUpdate = new Map<string, string>();

  /**
   * NewManager and Start: throws the kubelet's errors (unknown policy, bad options or reservation, a
   * checkpoint of another policy or one that does not match the machine); the kubelet then does not start.
   */
  constructor(
    config: CPUManagerConfig,
    readonly topology: CPUTopology,
    topologyPolicy: string,
    affinity: (podUID: string, container: string) => TopologyHint | undefined,
    private readonly store: CheckpointStore | undefined,
  ) {
    if (config.policy !== 'none' && config.policy !== 'static')
      throw new Error(`unknown policy: "${config.policy}"`);
    this.policyName = config.policy;
    if (config.policy === 'static') {
      let reserved = CPUSet.empty();
      let reservedMilli: number;
      if (config.reservedSystemCPUs) {
        reserved = CPUSet.parse(config.reservedSystemCPUs);
        reservedMilli = reserved.size * 1000;
      } else {
        reservedMilli =
          quantityMilliValue(config.kubeReservedCPU ?? '0') +
          quantityMilliValue(config.systemReservedCPU ?? '0');
      }
      if (reservedMilli === 0)
        throw new Error(
          'new static policy error: [cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
        );
      try {
        this.policy = new StaticPolicy({
          topology,
          numReservedCPUs: Math.ceil(reservedMilli / 1000),
          reservedCPUs: reserved,
          options: config.options,
          ...(config.gates ? { gates: config.gates } : {}),
          topologyPolicy,
          affinity,
        });
      } catch (err) {
        throw new Error(`new static policy error: ${(err as Error).message}`);
      }
    } else if (Object.keys(config.options).length > 0) {
      // NewNonePolicy: options belong to the static policy.
      const goMap = Object.entries(config.options)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}:${v}`)
        .join(' ');
      throw new Error(`new none policy error: None policy: received unsupported options=map[${goMap}]`);
    }
    this.state = this.restore();
    if (this.policy) {
      try {
        this.policy.start(this.state);
      } catch (err) {
        throw new Error(
          `invalid state, please drain node and remove policy state file: ${(err as Error).message}`,
        );
      }
      this.persist();
    }
  }

  private restore(): CPUManagerState {
    const text = this.store?.read();
    if (text === undefined) {
      const s = new CPUManagerState();
      if (this.store) this.store.write(marshalCheckpoint(this.policyName, s));
      return s;
    }
    try {
      return unmarshalCheckpoint(this.policyName, text);
    } catch (err) {
      throw new Error(
        `could not restore state from checkpoint: ${(err as Error).message}, please drain this node and delete the CPU manager checkpoint file "${this.store?.path ?? CPU_MANAGER_STATE_FILE}" before restarting Kubelet`,
      );
    }
  }

  private persist(): void {
    this.store?.write(marshalCheckpoint(this.policyName, this.state));
  }

  // ---- HintProvider ----

  getTopologyHints(pod: Pod, container: Container): ProviderHints {
    return this.policy?.topologyHints(this.state, pod, container);
  }

  getPodTopologyHints(pod: Pod): ProviderHints {
    return this.policy?.podTopologyHints(this.state, pod);
  }

  allocate(pod: Pod, container: Container): void {
    if (!this.policy) return;
    const before = marshalCheckpoint(this.policyName, this.state);
    this.policy.allocate(this.state, pod, container);
    if (marshalCheckpoint(this.policyName, this.state) !== before) this.persist();
  }

  // ---- what the runtime side reads ----

  /** GetCPUAffinity: the container's CPUs or the shared pool; undefined under the none policy. */
  cpusetFor(podUID: string, container: string): string | undefined {
    if (!this.policy) return undefined;
    const cpus = this.state.getCPUSetOrDefault(podUID, container);
    return cpus.isEmpty() ? undefined : cpus.toString();
  }

  /** GetExclusiveCPUs. */
  exclusiveCPUs(podUID: string, container: string): CPUSet {
    return (this.policy && this.state.getCPUSet(podUID, container)) || CPUSet.empty();
  }

  hasExclusiveCPUs(podUID: string, container: string): boolean {
    return !this.exclusiveCPUs(podUID, container).isEmpty();
  }

  podHasExclusiveCPUs(podUID: string): boolean {
    for (const cpus of this.state.assignments.get(podUID)?.values() ?? []) if (!cpus.isEmpty()) return true;
    return false;
  }

  /** GetAllocatableCPUs (podresources GetAllocatableResources): none under the none policy. */
  allocatableCPUs(): CPUSet {
    return this.policy?.allocatableCPUs() ?? CPUSet.empty();
  }

  /** The shared pool now (the checkpoint's defaultCpuSet). */
  sharedPool(): CPUSet {
    return this.state.defaultCPUSet;
  }

  /**
   * removeStaleState: the CPUs of containers that no active pod has any more go back to the shared pool
   * (the kubelet frees them here, not when a container stops, so a restarting container keeps its CPUs).
   */
  removeStaleState(activePods: readonly Pod[]): void {
    if (!this.policy) return;
    const active = new Map<string, Set<string>>();
    for (const p of activePods) {
      active.set(
        p.metadata.uid as string,
        new Set([...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name)),
      );
    }
    let changed = false;
    for (const [uid, m] of [...this.state.assignments]) {
      for (const name of [...m.keys()]) {
        if (active.get(uid)?.has(name)) continue;
        this.policy.removeContainer(this.state, uid, name);
        changed = true;
      }
    }
    if (changed) this.persist();
  }

  /**
   * reconcileState's decisions: the running containers whose cpuset differs from what was last written to
   * them, with the cpuset to write. The caller writes them and reports each success (`updated`).
   */
  reconcile(running: readonly ReconcileContainer[]): { id: string; cpuset: string }[] {
    if (!this.policy) return [];
    const ids = new Set(running.map((c) => c.id));
    for (const id of [...this.lastUpdate.keys()]) if (!ids.has(id)) this.lastUpdate.delete(id);
    const out: { id: string; cpuset: string }[] = [];
    for (const c of running) {
      const cpus = this.state.getCPUSetOrDefault(c.podUID, c.name);
      if (cpus.isEmpty()) continue;
      const s = cpus.toString();
      if (this.lastUpdate.get(c.id) !== s) out.push({ id: c.id, cpuset: s });
    }
    return out;
  }

  /** A container was created or updated with `cpuset` (AddContainer / a reconcile write). */
  updated(id: string, cpuset: string): void {
    this.lastUpdate.set(id, cpuset);
  }
}

/**
 * The container manager's resource managers for one node (pkg/kubelet/cm container_manager_linux.go): the
 * topology manager with the CPU manager as its hint provider (the device and memory managers would join
 * through `TopologyManager.addHintProvider`). The Kubelet admits pods through `admit`, gives containers their
 * cpuset and CFS quota through `cpuset`/`hasExclusiveCPUs`, and runs `reconcile` every
 * cpuManagerReconcilePeriod. Pure: built from the node's settings, its topology and a checkpoint store.
 */
import type { Pod } from '../../api/core.js';
import { CPUManager, type CheckpointStore, type CPUManagerConfig } from './cpumanager/manager.js';
import type { CPUTopology } from './cpumanager/topology.js';
import {
  TopologyManager,
  type ResourceAdmitResult,
  type TopologyManagerConfig,
} from './topologymanager/manager.js';

export interface ResourceManagersConfig {
  cpuManager: CPUManagerConfig;
  topologyManager: TopologyManagerConfig;
  /** kubelet cpuManagerReconcilePeriod (default 10 s). */
  reconcilePeriodMs: number;
}

export const DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_MS = 10_000;

export class ResourceManagers {
  readonly topologyManager: TopologyManager;
  readonly cpuManager: CPUManager;

  /** Throws the kubelet's start-up errors (the node does not start, as a kubelet would not). */
  constructor(
    readonly config: ResourceManagersConfig,
    topology: CPUTopology,
    store: CheckpointStore | undefined,
  ) {
    this.topologyManager = new TopologyManager(config.topologyManager, topology);
    this.cpuManager = new CPUManager(
      config.cpuManager,
      topology,
      this.topologyManager.policy,
      (uid, name) => this.topologyManager.getAffinity(uid, name),
      store,
    );
    this.topologyManager.addHintProvider(this.cpuManager);
  }

  /**
   * GetAllocateResourcesPodAdmitHandler: stale assignments freed first (the CPU manager's Allocate does so),
   * then the topology manager's admission.
   */
  admit(pod: Pod, activePods: readonly Pod[]): ResourceAdmitResult {
    this.cpuManager.removeStaleState(activePods);
    return this.topologyManager.admit(pod);
  }

  /** A pod is gone: its CPUs go back and its hints are forgotten. */
  retain(activePods: readonly Pod[]): void {
    this.cpuManager.removeStaleState(activePods);
    this.topologyManager.retain(new Set(activePods.map((p) => p.metadata.uid as string)));
  }
}

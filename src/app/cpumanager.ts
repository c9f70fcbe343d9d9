/**
 * A VirtualNode's topology and CPU managers (the kubelet's container manager builds them in NewContainerManager):
 * from spec.kubelet's cpuManager*, reservedSystemCPUs, kube/systemReserved and topologyManager* settings, on
 * the host's CPU topology (cri) or the declared or capacity-sized one (sim), with the checkpoint in the node's
 * root directory. Their start-up errors are thrown: the node does not start, as a kubelet would not.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { VirtualNodeSpec } from '../api/virtualnode.js';
import { fileCheckpointStore, readHostCPUTopology } from '../kubelet/cm/cpumanager/shell/host.js';
import { CPU_MANAGER_STATE_FILE } from '../kubelet/cm/cpumanager/state.js';
import {
  declaredTopology,
  topologyFromCapacity,
  type CPUTopology,
} from '../kubelet/cm/cpumanager/topology.js';
import { DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_MS, ResourceManagers } from '../kubelet/cm/resourcemanagers.js';
import { parseGoDuration } from '../util/duration.js';
import { quantityMilliValue } from '../util/quantity.js';

function cpuOf(m: Record<string, string | number> | undefined): string | undefined {
  const v = m?.['cpu'];
  return v === undefined ? undefined : String(v);
}

/** The node's CPU topology: this host's for cri, the declared or capacity-sized one for sim. */
export function nodeCPUTopology(spec: VirtualNodeSpec): CPUTopology {
  if (spec.runtime.type === 'cri') return readHostCPUTopology();
  const declared = spec.kubelet.cpuTopology;
  return declared ? declaredTopology(declared) : topologyFromCapacity(quantityMilliValue(spec.capacity.cpu));
}

/**
 * The node's resource managers, or undefined when both policies are none and no checkpoint is there (nothing
 * to pin, nothing to check; a checkpoint left by another policy is refused as the kubelet refuses it).
 */
export function resourceManagersFor(spec: VirtualNodeSpec, rootDir: string): ResourceManagers | undefined {
  const k = spec.kubelet;
  const cpuPolicy = k.cpuManagerPolicy ?? 'none';
  const topologyPolicy = k.topologyManagerPolicy ?? 'none';
  const options = k.cpuManagerPolicyOptions ?? {};
  if (
    cpuPolicy === 'none' &&
    topologyPolicy === 'none' &&
    Object.keys(options).length === 0 &&
    !existsSync(path.join(rootDir, CPU_MANAGER_STATE_FILE))
  ) {
    return undefined;
  }
  const kubeReserved = cpuOf(k.kubeReserved);
  const systemReserved = cpuOf(k.systemReserved);
  return new ResourceManagers(
    {
      cpuManager: {
        policy: cpuPolicy,
        options,
        ...(k.reservedSystemCPUs ? { reservedSystemCPUs: k.reservedSystemCPUs } : {}),
        ...(kubeReserved !== undefined ? { kubeReservedCPU: kubeReserved } : {}),
        ...(systemReserved !== undefined ? { systemReservedCPU: systemReserved } : {}),
      },
      topologyManager: {
        policy: topologyPolicy,
        scope: k.topologyManagerScope ?? 'container',
        options: k.topologyManagerPolicyOptions ?? {},
      },
      reconcilePeriodMs: k.cpuManagerReconcilePeriod
        ? parseGoDuration(k.cpuManagerReconcilePeriod)
        : DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_MS,
    },
    nodeCPUTopology(spec),
    fileCheckpointStore(rootDir),
  );
}

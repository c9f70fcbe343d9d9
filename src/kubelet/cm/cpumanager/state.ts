/**
 * The CPU manager's state (pkg/kubelet/cm/cpumanager/state): the shared pool (default cpuset) and each
 * container's exclusive CPUs, and its checkpoint `cpu_manager_state` in the node's root directory. The
 * checkpoint has the kubelet's fields (policyName, defaultCpuSet, entries, checksum); the checksum is ours
 * (FNV-1a of the data), so it guards against corruption but a kubelet would not accept the file. Pure.
 */
import { CPUSet } from './cpuset.js';
import { fnv1a32 } from '../../../util/fnv.js';

export const CPU_MANAGER_STATE_FILE = 'cpu_manager_state';

export class CPUManagerState {
  defaultCPUSet = CPUSet.empty();
  /** pod UID -> container name -> CPUs. */
  readonly assignments = new Map<string, Map<string, CPUSet>>();

  getCPUSet(podUID: string, container: string): CPUSet | undefined {
    return this.assignments.get(podUID)?.get(container);
  }

  /** The container's own CPUs, or the shared pool (GetCPUSetOrDefault). */
  getCPUSetOrDefault(podUID: string, container: string): CPUSet {
    return this.getCPUSet(podUID, container) ?? this.defaultCPUSet;
  }

  setCPUSet(podUID: string, container: string, cpus: CPUSet): void {
    let m = this.assignments.get(podUID);
    if (!m) this.assignments.set(podUID, (m = new Map()));
    m.set(container, cpus);
  }

  delete(podUID: string, container: string): void {
    const m = this.assignments.get(podUID);
    if (!m) return;
    m.delete(container);
    if (m.size === 0) this.assignments.delete(podUID);
  }

  clone(): CPUManagerState {
    const s = new CPUManagerState();
    s.defaultCPUSet = this.defaultCPUSet;
    for (const [p, m] of this.assignments) s.assignments.set(p, new Map(m));
    return s;
  }
}

interface CheckpointData {
  policyName: string;
  defaultCpuSet: string;
  entries?: Record<string, Record<string, string>>;
}

function dataOf(policyName: string, s: CPUManagerState): CheckpointData {
  const entries: Record<string, Record<string, string>> = {};
  for (const [pod, m] of [...s.assignments].sort(([a], [b]) => (a < b ? -1 : 1))) {
    entries[pod] = Object.fromEntries(
      [...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([c, v]) => [c, v.toString()]),
    );
  }
  return {
    policyName,
    defaultCpuSet: s.defaultCPUSet.toString(),
    ...(Object.keys(entries).length > 0 ? { entries } : {}),
  };
}

export function marshalCheckpoint(policyName: string, s: CPUManagerState): string {
  const data = dataOf(policyName, s);
  return JSON.stringify({ ...data, checksum: fnv1a32(JSON.stringify(data)) });
}

/**
 * Reads a checkpoint for `policyName`; throws the kubelet's errors: a different policy, a bad checksum or an
 * unparsable cpuset (the node must be drained and the file removed, as the kubelet says).
 */
export function unmarshalCheckpoint(policyName: string, text: string): CPUManagerState {
  let raw: CheckpointData & { checksum?: number };
  try {
    raw = JSON.parse(text) as CheckpointData & { checksum?: number };
  } catch (err) {
    throw new Error(`checkpoint is corrupted: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || typeof raw.policyName !== 'string')
    throw new Error('checkpoint is corrupted: no policyName');
  const { checksum, ...data } = raw;
  if (checksum !== fnv1a32(JSON.stringify(data)))
    throw new Error('checkpoint is corrupted: checksum mismatch');
  if (data.policyName !== policyName)
    throw new Error(
      `configured policy "${policyName}" differs from state checkpoint policy "${data.policyName}"`,
    );
  const s = new CPUManagerState();
  try {
    s.defaultCPUSet = CPUSet.parse(data.defaultCpuSet ?? '');
  } catch (err) {
    throw new Error(`could not parse default CPU set "${data.defaultCpuSet}": ${(err as Error).message}`);
  }
  for (const [pod, m] of Object.entries(data.entries ?? {})) {
    for (const [container, cpus] of Object.entries(m)) {
      try {
        s.setCPUSet(pod, container, CPUSet.parse(cpus));
      } catch (err) {
        throw new Error(
          `could not parse cpuset "${cpus}" for container "${container}" in pod "${pod}": ${(err as Error).message}`,
        );
      }
    }
  }
  return s;
}

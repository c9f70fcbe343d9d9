/**
 * The CPU manager's I/O: this host's CPU topology read from sysfs (cri nodes; what cadvisor reads for the
 * kubelet) and the `cpu_manager_state` checkpoint file in the node's root directory, written atomically.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CheckpointStore } from '../manager.js';
import { CPU_MANAGER_STATE_FILE } from '../state.js';
import { topologyFromSysfs, type CPUTopology, type SysfsCPUFacts } from '../topology.js';

function readTrim(p: string): string | undefined {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Reads /sys/devices/system/{cpu,node}; throws when the online CPUs cannot be read. */
export function readHostCPUTopology(sys = '/sys/devices/system'): CPUTopology {
  const online = readTrim(path.join(sys, 'cpu/online'));
  if (online === undefined) throw new Error(`could not read ${path.join(sys, 'cpu/online')}`);
  const cpus = new Map<number, { packageID: number; coreID: number; l3ID?: number }>();
  for (const cpu of onlineList(online)) {
    const dir = path.join(sys, `cpu/cpu${cpu}`);
    const l3 = readTrim(path.join(dir, 'cache/index3/id'));
    cpus.set(cpu, {
      packageID: Number(readTrim(path.join(dir, 'topology/physical_package_id')) ?? 0),
      coreID: Number(readTrim(path.join(dir, 'topology/core_id')) ?? cpu),
      ...(l3 !== undefined && /^\d+$/.test(l3) ? { l3ID: Number(l3) } : {}),
    });
  }
  const numaNodes = new Map<number, { cpulist: string; distance?: string }>();
  let entries: string[] = [];
  try {
    entries = readdirSync(path.join(sys, 'node'));
  } catch {
    // A kernel without NUMA: no node directory.
  }
  for (const e of entries) {
    const m = /^node(\d+)$/.exec(e);
    if (!m) continue;
    const cpulist = readTrim(path.join(sys, 'node', e, 'cpulist'));
    if (cpulist === undefined) continue;
    const distance = readTrim(path.join(sys, 'node', e, 'distance'));
    numaNodes.set(Number(m[1]), { cpulist, ...(distance !== undefined ? { distance } : {}) });
  }
  const facts: SysfsCPUFacts = { online, cpus, numaNodes };
  return topologyFromSysfs(facts);
}

function onlineList(s: string): number[] {
  const out: number[] = [];
  for (const part of s.split(',')) {
    const [a, b] = part.split('-');
    for (let c = Number(a); c <= Number(b ?? a); c++) out.push(c);
  }
  return out;
}

/** `<rootDir>/cpu_manager_state`, replaced by rename so a crash never leaves half a file. */
export function fileCheckpointStore(rootDir: string): CheckpointStore {
  const file = path.join(rootDir, CPU_MANAGER_STATE_FILE);
  return {
    path: file,
    read: () => {
      try {
        return readFileSync(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    write: (text) => {
      mkdirSync(rootDir, { recursive: true });
      const tmp = `${file}.tmp`;
      writeFileSync(tmp, text, { mode: 0o644 });
      renameSync(tmp, file);
    },
  };
}

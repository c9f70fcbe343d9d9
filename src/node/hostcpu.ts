/**
 * The host's CPUs as the kubelet's securitycontext package reads them: the possible CPUs of
 * /sys/devices/system/cpu/possible, and which of them have a thermal_throttle directory, which procMount
 * `Default` masks in every container. Read once, when the first cri node starts; sim nodes have no host.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const CPU_DIR = '/sys/devices/system/cpu';

/**
 * The CPU numbers of a kernel cpu list ("0-3,8,10-11"); undefined when it does not parse, as the kubelet
 * then falls back to counting the CPUs it runs on.
 */
export function parseCpuList(text: string): number[] | undefined {
  const out: number[] = [];
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return undefined;
    const start = Number(m[1]);
    const end = m[2] === undefined ? start : Number(m[2]);
    if (end < start) return undefined;
    for (let cpu = start; cpu <= end; cpu++) out.push(cpu);
  }
  return out;
}

let cached: readonly string[] | undefined;

/** The thermal_throttle directories of the host's possible CPUs that exist; read once per process. */
export function hostThermalThrottlePaths(): readonly string[] {
  return (cached ??= readThermalThrottlePaths(CPU_DIR));
}

function readThermalThrottlePaths(root: string): string[] {
  let cpus: number[] | undefined;
  try {
    cpus = parseCpuList(readFileSync(`${root}/possible`, 'utf8'));
  } catch {
    cpus = undefined;
  }
  cpus ??= Array.from({ length: availableParallelism() }, (_, i) => i);
  return cpus.map((cpu) => `${root}/cpu${cpu}/thermal_throttle`).filter((p) => existsSync(p));
}

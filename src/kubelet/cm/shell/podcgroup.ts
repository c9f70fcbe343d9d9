/**
 * A pod's cgroup on the host (kubelet: the pod container manager). Creating it with its limits before the
 * runtime puts the sandbox in it (EnsureExists, limits from resourceconfig.ts); destroying it (Destroy):
 * processes still charged to it are killed first, since a cgroup with a member cannot be removed; then the
 * directories go, children first, in every mounted hierarchy. Destruction is only ever asked for a pod whose
 * sandboxes the runtime has removed, so whatever is left in the cgroup belongs to no container of ours.
 */
import { access, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { errorMessage } from '../../../util/errors.js';
import type { PodResourceConfig } from '../resourceconfig.js';
import { cpuSharesToWeight, cpuWeightToShares } from '../cpu.js';

const CGROUP_MOUNT = '/sys/fs/cgroup';

/** How often the members are killed before giving up, as the kubelet's pod container manager does. */
const KILL_ROUNDS = 5;

/**
 * rmdir of a cgroup whose last member was just killed answers EBUSY until the kernel has reaped it: tried
 * again after these waits (ms), about 1.3 s in all, before the removal is left to the next housekeeping.
 */
const BUSY_WAITS_MS = [10, 20, 40, 80, 160, 320, 640];

/** The host side the destruction touches; the real one by default, a stand-in in tests. */
export interface CgroupHost {
  /**
   * The pid of each member of one cgroup directory (its `cgroup.procs`), not of its children; 0 for a member
   * outside this process's pid namespace (cgroup v2; v1 does not list it).
   */
  members(dir: string): Promise<number[]>;
  /** Subdirectories of `dir`; undefined when it is gone. */
  children(dir: string): Promise<string[] | undefined>;
  /** SIGKILL; resolves false when the process was already gone. */
  kill(pid: number): Promise<boolean>;
  /** rmdir; a missing directory is removed already. */
  remove(dir: string): Promise<void>;
  sleep(ms: number): Promise<void>;
}

const hostCgroups: CgroupHost = {
  async members(dir) {
    let text: string;
    try {
      text = await readFile(join(dir, 'cgroup.procs'), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    // A member outside this process's pid namespace reads as 0 under cgroup v2 (kept: it holds the cgroup all
    // the same); cgroup v1 leaves it out, and the removal then fails busy.
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid >= 0);
  },
  async children(dir) {
    try {
      return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  },
  async kill(pid) {
    try {
      process.kill(pid, 'SIGKILL');
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
      throw err;
    }
  },
  async remove(dir) {
    try {
      await rmdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  },
  sleep: (ms) => new Promise((r) => setTimeout(r, ms).unref()),
};

/** Every directory of the cgroup tree at `dir`, parents before their children; [] when there is none. */
async function treeOf(host: CgroupHost, dir: string): Promise<string[]> {
  const out: string[] = [];
  const queue = [dir];
  for (let d = queue.shift(); d !== undefined; d = queue.shift()) {
    const names = await host.children(d);
    if (names === undefined) continue;
    out.push(d);
    for (const name of names) queue.push(join(d, name));
  }
  return out;
}

/**
 * Kills every process charged to the cgroup directories `dirs` (kubelet: tryKillingCgroupProcesses): up to
 * five rounds over the members found at the start, each process killed once, a round repeated only for the
 * kills that failed. A cgroup holding this process or pid 1 is not a pod's, and one holding members this
 * process cannot name (outside its pid namespace) cannot be emptied from here: for both nothing is killed,
 * and the failure says why. Returns how many were killed and the failures of the last round.
 */
async function killCgroupMembers(
  host: CgroupHost,
  dirs: readonly string[],
): Promise<{ killed: number; errors: string[] }> {
  const pids = new Set<number>();
  for (const d of dirs) for (const pid of await host.members(d)) pids.add(pid);
  if (pids.delete(0)) {
    // Not nameable from here (an operator pod without hostPID): the cgroup stays, and the log says why.
    return {
      killed: 0,
      errors: ["processes outside this process's pid namespace hold it: they cannot be killed from here"],
    };
  }
  const foreign = [...pids].filter((pid) => pid === process.pid || pid === 1);
  if (foreign.length > 0) {
    return { killed: 0, errors: foreign.map((pid) => `process ${pid} is not a pod's: nothing killed`) };
  }
  let killed = 0;
  let errors: string[] = [];
  const done = new Set<number>();
  for (let round = 0; round < KILL_ROUNDS && done.size < pids.size; round++) {
    errors = [];
    for (const pid of pids) {
      if (done.has(pid)) continue;
      try {
        if (await host.kill(pid)) killed++;
        done.add(pid);
      } catch (err) {
        errors.push(`kill ${pid}: ${errorMessage(err)}`);
      }
    }
  }
  return { killed, errors };
}

/**
 * rmdir of a tree (treeOf's order), children first; EBUSY is waited out when `waitBusy` (its members were
 * just killed).
 */
async function removeTree(host: CgroupHost, tree: readonly string[], waitBusy: boolean): Promise<void> {
  for (const d of [...tree].reverse()) {
    for (let attempt = 0; ; attempt++) {
      try {
        await host.remove(d);
        break;
      } catch (err) {
        const busy = (err as NodeJS.ErrnoException).code === 'EBUSY';
        if (!busy || !waitBusy || attempt >= BUSY_WAITS_MS.length) throw err;
        await host.sleep(BUSY_WAITS_MS[attempt]!);
      }
    }
  }
}

/**
 * Destroys the cgroup at `rel` (relative to each hierarchy's mount) in every mounted hierarchy: members
 * killed, then the directories removed. Returns one line per hierarchy that still holds it, or a failed
 * kill (then nothing is removed: the next housekeeping tries it all again); [] when it is gone everywhere.
 * Never throws.
 */
export async function destroyCgroup(
  rel: string,
  host: CgroupHost = hostCgroups,
  mount = CGROUP_MOUNT,
): Promise<string[]> {
  let hierarchies: string[];
  try {
    hierarchies = ((await host.children(mount)) ?? []).map((name) => join(mount, name));
  } catch {
    return [];
  }
  // Each hierarchy's tree is walked once: killing members neither adds nor removes cgroup directories.
  const trees: { dir: string; tree: string[] }[] = [];
  let killed: number;
  try {
    for (const base of [mount, ...hierarchies]) {
      const dir = join(base, rel);
      trees.push({ dir, tree: await treeOf(host, dir) });
    }
    const found = await killCgroupMembers(
      host,
      trees.flatMap((t) => t.tree),
    );
    if (found.errors.length > 0) return found.errors.map((e) => `${rel}: ${e}`);
    killed = found.killed;
  } catch (err) {
    return [`${rel}: reading its members: ${errorMessage(err)}`];
  }
  const failures: string[] = [];
  for (const { dir, tree } of trees) {
    try {
      await removeTree(host, tree, killed > 0);
    } catch (err) {
      failures.push(`${dir}: ${errorMessage(err)}`);
    }
  }
  return failures;
}

/** The host side the creation touches; the real one by default, a stand-in in tests. */
export interface CgroupWriter {
  exists(path: string): Promise<boolean>;
  /** mkdir -p. */
  mkdir(dir: string): Promise<void>;
  write(path: string, value: string): Promise<void>;
}

const hostWriter: CgroupWriter = {
  async exists(path) {
    try {
      await access(path);
      return true;
    } catch {
      return false;
    }
  },
  async mkdir(dir) {
    await mkdir(dir, { recursive: true });
  },
  async write(path, value) {
    await writeFile(path, value);
  },
};

export { cpuSharesToWeight, cpuWeightToShares } from '../cpu.js';

/**
 * The files of one pod cgroup and what goes in them, in the order they are written (the period before the
 * quota it applies to): cgroup v1 in the `cpu` and `memory` hierarchies, v2 in the unified tree. A zero quota
 * or memory limit is "no limit"; an absent field is not written (a resize writes one resource at a time).
 */
export function podCgroupFiles(
  config: Partial<PodResourceConfig>,
  v2: boolean,
): { controller: 'cpu' | 'memory'; file: string; value: string }[] {
  const out: { controller: 'cpu' | 'memory'; file: string; value: string }[] = [];
  if (v2) {
    if (config.cpuShares !== undefined)
      out.push({ controller: 'cpu', file: 'cpu.weight', value: String(cpuSharesToWeight(config.cpuShares)) });
    if (config.cpuPeriod !== undefined && config.cpuQuota !== undefined) {
      const quota = config.cpuQuota > 0 ? String(config.cpuQuota) : 'max';
      out.push({ controller: 'cpu', file: 'cpu.max', value: `${quota} ${config.cpuPeriod}` });
    }
    if (config.memoryLimitBytes !== undefined) {
      const max = config.memoryLimitBytes > 0 ? String(config.memoryLimitBytes) : 'max';
      out.push({ controller: 'memory', file: 'memory.max', value: max });
    }
    return out;
  }
  if (config.cpuShares !== undefined)
    out.push({ controller: 'cpu', file: 'cpu.shares', value: String(config.cpuShares) });
  if (config.cpuPeriod !== undefined && config.cpuQuota !== undefined) {
    out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(config.cpuPeriod) });
    out.push({
      controller: 'cpu',
      file: 'cpu.cfs_quota_us',
      value: String(config.cpuQuota > 0 ? config.cpuQuota : -1),
    });
  }
  if (config.memoryLimitBytes !== undefined) {
    const limit = config.memoryLimitBytes > 0 ? String(config.memoryLimitBytes) : '-1';
    out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: limit });
  }
  return out;
}

/**
 * Creates the cgroup at `rel` (relative to each hierarchy's mount) with `config`'s limits, or sets them on
 * the one there (kubelet: the pod container manager's EnsureExists). cgroup v2 (a unified tree at the mount)
 * turns on the cpu and memory controllers of every ancestor below the mount first. Rejects with the file that
 * could not be written.
 */
export async function ensurePodCgroup(
  rel: string,
  config: PodResourceConfig,
  host: CgroupWriter = hostWriter,
  mount = CGROUP_MOUNT,
): Promise<void> {
  const v2 = await host.exists(join(mount, 'cgroup.controllers'));
  const dirOf = (controller: 'cpu' | 'memory') => (v2 ? join(mount, rel) : join(mount, controller, rel));
  if (v2) {
    const target = join(mount, rel);
    const ancestors: string[] = [];
    for (
      let d = dirname(target);
      relative(mount, d) !== '' && !relative(mount, d).startsWith('..');
      d = dirname(d)
    ) {
      ancestors.unshift(d);
    }
    for (const d of [mount, ...ancestors]) {
      await host.mkdir(d);
      await host.write(join(d, 'cgroup.subtree_control'), '+cpu +memory');
    }
  }
  for (const dir of new Set([dirOf('cpu'), dirOf('memory')])) await host.mkdir(dir);
  for (const { controller, file, value } of podCgroupFiles(config, v2)) {
    const path = join(dirOf(controller), file);
    try {
      await host.write(path, value);
    } catch (err) {
      throw new Error(`write ${value} to ${path}: ${errorMessage(err)}`, { cause: err });
    }
  }
}

/** From this value on, a cgroup v1 memory limit is the kernel's "unlimited" (PAGE_COUNTER_MAX pages). */
const V1_UNLIMITED_BYTES = 2 ** 62;

function integerOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text.trim());
  return Number.isFinite(n) ? n : undefined;
}

/**
 * What a pod cgroup's files say (kubelet: the pod container manager's GetPodCgroupConfig), in the terms of
 * podCgroupFiles: shares (v2: from the weight), the quota and its period (0: no quota), the memory limit (0:
 * none). Pure: `files` maps each file name (`cpu.shares`, `cpu.max`, ...) to its text; a field whose file is
 * missing or unreadable is left out.
 */
export function parsePodCgroupFiles(
  files: ReadonlyMap<string, string>,
  v2: boolean,
): Partial<PodResourceConfig> {
  const out: Partial<PodResourceConfig> = {};
  if (v2) {
    const weight = integerOf(files.get('cpu.weight'));
    if (weight !== undefined && weight > 0) out.cpuShares = cpuWeightToShares(weight);
    const max = files.get('cpu.max')?.trim().split(/\s+/);
    if (max && max.length === 2) {
      const period = integerOf(max[1]);
      const quota = max[0] === 'max' ? 0 : integerOf(max[0]);
      if (period !== undefined && quota !== undefined) {
        out.cpuPeriod = period;
        out.cpuQuota = quota;
      }
    }
    const memory = files.get('memory.max')?.trim();
    if (memory === 'max') out.memoryLimitBytes = 0;
    else if (integerOf(memory) !== undefined) out.memoryLimitBytes = integerOf(memory)!;
    return out;
  }
  const shares = integerOf(files.get('cpu.shares'));
  if (shares !== undefined) out.cpuShares = shares;
  const period = integerOf(files.get('cpu.cfs_period_us'));
  const quota = integerOf(files.get('cpu.cfs_quota_us'));
  if (period !== undefined && quota !== undefined) {
    out.cpuPeriod = period;
    out.cpuQuota = quota > 0 ? quota : 0;
  }
  const memory = integerOf(files.get('memory.limit_in_bytes'));
  if (memory !== undefined) out.memoryLimitBytes = memory >= V1_UNLIMITED_BYTES ? 0 : memory;
  return out;
}

/** The host side a pod cgroup's reading touches; the real one by default, a stand-in in tests. */
export interface CgroupReader {
  exists(path: string): Promise<boolean>;
  /** The file's text; undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
}

const hostReader: CgroupReader = {
  exists: hostWriter.exists,
  async read(path) {
    try {
      return await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  },
};

/**
 * Reads the limits of the pod cgroup at `rel` back (parsePodCgroupFiles), and the memory it is charged with
 * (`memory.usage_in_bytes`, v2 `memory.current`). Undefined when the cgroup is not there.
 */
export async function readPodCgroup(
  rel: string,
  host: CgroupReader = hostReader,
  mount = CGROUP_MOUNT,
): Promise<{ config: Partial<PodResourceConfig>; memoryUsageBytes?: number } | undefined> {
  const v2 = await host.exists(join(mount, 'cgroup.controllers'));
  const dirOf = (controller: 'cpu' | 'memory') => (v2 ? join(mount, rel) : join(mount, controller, rel));
  if (!(await host.exists(dirOf('cpu'))) && !(await host.exists(dirOf('memory')))) return undefined;
  const names: [controller: 'cpu' | 'memory', file: string][] = v2
    ? [
        ['cpu', 'cpu.weight'],
        ['cpu', 'cpu.max'],
        ['memory', 'memory.max'],
        ['memory', 'memory.current'],
      ]
    : [
        ['cpu', 'cpu.shares'],
        ['cpu', 'cpu.cfs_period_us'],
        ['cpu', 'cpu.cfs_quota_us'],
        ['memory', 'memory.limit_in_bytes'],
        ['memory', 'memory.usage_in_bytes'],
      ];
  const files = new Map<string, string>();
  for (const [controller, file] of names) {
    const text = await host.read(join(dirOf(controller), file));
    if (text !== undefined) files.set(file, text);
  }
  const usage = integerOf(files.get(v2 ? 'memory.current' : 'memory.usage_in_bytes'));
  return {
    config: parsePodCgroupFiles(files, v2),
    ...(usage !== undefined ? { memoryUsageBytes: usage } : {}),
  };
}

/**
 * Writes some of the limits of the existing pod cgroup at `rel` (kubelet: SetPodCgroupConfig), in
 * podCgroupFiles' order; absent fields are left as they are. Rejects with the file that could not be written.
 */
export async function setPodCgroupConfig(
  rel: string,
  config: Partial<PodResourceConfig>,
  host: CgroupWriter = hostWriter,
  mount = CGROUP_MOUNT,
): Promise<void> {
  const v2 = await host.exists(join(mount, 'cgroup.controllers'));
  for (const { controller, file, value } of podCgroupFiles(config, v2)) {
    const path = v2 ? join(mount, rel, file) : join(mount, controller, rel, file);
    try {
      await host.write(path, value);
    } catch (err) {
      throw new Error(`write ${value} to ${path}: ${errorMessage(err)}`, { cause: err });
    }
  }
}

/**
 * The node's access to the pod cgroups it manages (kubelet: the pod container manager's GetPodCgroupConfig and
 * SetPodCgroupConfig), by the cgroup's path relative to each hierarchy's mount.
 */
export interface PodCgroupAccess {
  /** The cgroup's limits and memory charge; undefined when there is no such cgroup (or none to read). */
  read(rel: string): Promise<{ config: Partial<PodResourceConfig>; memoryUsageBytes?: number } | undefined>;
  /** Writes the given limits to the existing cgroup; rejects with the file that could not be written. */
  set(rel: string, config: Partial<PodResourceConfig>): Promise<void>;
}

/** This host's cgroup file system (cri nodes). */
export const hostPodCgroupAccess: PodCgroupAccess = {
  read: (rel) => readPodCgroup(rel),
  set: (rel, config) => setPodCgroupConfig(rel, config),
};

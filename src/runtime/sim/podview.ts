/**
 * What a simulated pod shows from the inside, as opposed to what the runtime API reports about it: its ports
 * to a prober, and to commands run in it its mounted files, its hostname, who it runs as (`id`) and its user
 * namespace's ID maps (`/proc/self/uid_map`, `gid_map`). Pure; the runtime passes in the records and the
 * clock reading. These model the pod, not the runtime API, so faults and `setDown` do not apply to them.
 */
import { posix } from 'node:path';
import type { IDMapping, Mount, PortProbeOutcome, UserNamespace } from '../types.js';
import type { ProcessUser } from './identity.js';
import type { FileView } from './command.js';
import type { ContainerRecord } from './records.js';

/** The node's files, as the simulated node keeps its pod directories (in memory). */
export interface NodeFiles {
  readFileSync(path: string): Buffer | undefined;
  /** Writes (or appends to) a file; false when it cannot. Absent: containers write nothing to the node. */
  writeFileSync?(path: string, data: Buffer, append?: boolean): boolean;
}

/**
 * The host path of `path` in a container with `mounts`: under the longest mount prefix, as a mount namespace
 * resolves it; undefined when no mount holds it, or an image mount does (nothing to read or write there).
 * `writable`: read-only mounts hold nothing either.
 */
export function hostPathOf(mounts: readonly Mount[], path: string, writable = false): string | undefined {
  let best: Mount | undefined;
  for (const m of mounts) {
    const under = path === m.containerPath || path.startsWith(`${m.containerPath.replace(/\/+$/, '')}/`);
    if (under && (!best || m.containerPath.length > best.containerPath.length)) best = m;
  }
  if (!best || best.image || (writable && best.readonly)) return undefined;
  const rest = path.slice(best.containerPath.replace(/\/+$/, '').length);
  return rest ? posix.join(best.hostPath, rest) : best.hostPath;
}

/**
 * What an http or tcp probe of `port` on `c` sees at `nowMs`, per the container's port behaviour: refused
 * until the port is ready, and after it fails an http probe gets a 500 while a tcp probe is refused.
 * `ip` is the sandbox's IP, for the dial error's wording.
 */
export function probePortOf(
  c: ContainerRecord,
  ip: string,
  port: number,
  protocol: 'http' | 'tcp',
  nowMs: number,
): PortProbeOutcome {
  const refused: PortProbeOutcome = {
    result: 'failure',
    output: `dial tcp ${ip}:${port}: connect: connection refused`,
  };
  const rule = c.behaviour.ports.get(port);
  if (c.state !== 'running' || !rule) return refused;
  const since = nowMs - c.startedMs;
  if (since < rule.readyAfterMs) return refused;
  if (rule.fails || since >= rule.failAfterMs) {
    return protocol === 'http'
      ? { result: 'failure', output: 'HTTP probe failed with statuscode: 500' }
      : refused;
  }
  return { result: 'success', output: '' };
}

/** Who a container's process is, and the user namespace it is in (absent: the host's). */
export interface ProcessView {
  user?: ProcessUser;
  userns?: Readonly<UserNamespace>;
}

/** What a container of `sandbox` running as `user` sees of itself. */
export function processView(
  user: ProcessUser,
  sandbox: { readonly userns: Readonly<UserNamespace> | undefined },
): ProcessView {
  return sandbox.userns ? { user, userns: sandbox.userns } : { user };
}

/** The kernel's line for the initial user namespace: everything maps to itself. */
const HOST_ID_MAP = `${'0'.padStart(10)} ${'0'.padStart(10)} ${'4294967295'.padStart(10)}\n`;

/** /proc/self/uid_map (or gid_map) as the kernel prints it: `%10u %10u %10u` per mapping. */
export function idMapFile(maps: readonly IDMapping[] | undefined): string {
  if (!maps || maps.length === 0) return HOST_ID_MAP;
  return maps
    .map(
      (m) =>
        `${String(m.containerId).padStart(10)} ${String(m.hostId).padStart(10)} ${String(m.length).padStart(10)}\n`,
    )
    .join('');
}

/**
 * The files a container with `mounts` can read (the longest mount prefix wins, as in a mount namespace), its
 * hostname, and who it is. Under an image mount nothing can be told (the simulated images hold no files, as
 * with the container's own image). `/proc/self/uid_map` and `gid_map` show the user namespace's mappings.
 */
export function fileViewOf(
  mounts: readonly Mount[],
  hostname: string,
  files: NodeFiles | undefined,
  proc: ProcessView = {},
): FileView {
  const view: FileView = {};
  if (hostname) view.hostname = hostname;
  if (proc.user) view.user = proc.user;
  view.readFile = (path) => {
    if (path === '/proc/self/uid_map' || path === '/proc/self/gid_map') {
      const own = proc.userns?.mode === 'POD' ? proc.userns : undefined;
      return idMapFile(path.endsWith('uid_map') ? own?.uids : own?.gids);
    }
    if (!files || mounts.length === 0) return undefined;
    const host = hostPathOf(mounts, path);
    if (host === undefined) return undefined;
    const data = files.readFileSync(host);
    return data === undefined ? null : data.toString('utf8');
  };
  return view;
}

/**
 * What a simulated pod shows from the inside, as opposed to what the runtime API reports about it: its ports
 * to a prober, and its mounted files and hostname to commands run in it. Pure; the runtime passes in the
 * records and the clock reading. These model the pod, not the runtime API, so faults and `setDown` do not
 * apply to them.
 */
import { posix } from 'node:path';
import type { Mount, PortProbeOutcome } from '../types.js';
import type { FileView } from './command.js';
import type { ContainerRecord } from './records.js';

/** The node's files, as the simulated node keeps its pod directories (in memory). */
export interface NodeFiles {
  readFileSync(path: string): Buffer | undefined;
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

/**
 * The files a container with `mounts` can read (the longest mount prefix wins, as in a mount namespace) and
 * its hostname. Without node files or mounts, only the hostname.
 */
export function fileViewOf(
  mounts: readonly Mount[],
  hostname: string,
  files: NodeFiles | undefined,
): FileView {
  const view: FileView = {};
  if (hostname) view.hostname = hostname;
  if (!files || mounts.length === 0) return view;
  view.readFile = (path) => {
    let best: Mount | undefined;
    for (const m of mounts) {
      const under = path === m.containerPath || path.startsWith(`${m.containerPath.replace(/\/+$/, '')}/`);
      if (under && (!best || m.containerPath.length > best.containerPath.length)) best = m;
    }
    if (!best) return undefined;
    const rest = path.slice(best.containerPath.replace(/\/+$/, '').length);
    const data = files.readFileSync(rest ? posix.join(best.hostPath, rest) : best.hostPath);
    return data === undefined ? null : data.toString('utf8');
  };
  return view;
}

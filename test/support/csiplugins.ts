/**
 * The CSI node plugins the plugin manager's tests run as host processes: node-driver-registrar and the hostpath
 * driver, built once by scripts/csi-plugins.sh (pinned tags, vendored sources) and cached outside the repo.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventually } from './eventually.js';

const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/csi-plugins.sh');

export interface CSIPluginBinaries {
  registrar: string;
  hostpath: string;
}

let cached: Promise<CSIPluginBinaries> | undefined;

/** The two binaries' paths; rejects with the script's message when they cannot be built here. */
export function csiPluginBinaries(): Promise<CSIPluginBinaries> {
  cached ??= promisify(execFile)('bash', [SCRIPT], { maxBuffer: 1 << 20, timeout: 20 * 60_000 }).then(
    ({ stdout }) => {
      const [registrar, hostpath] = stdout.trim().split('\n');
      if (!registrar || !hostpath)
        throw new Error(`scripts/csi-plugins.sh printed ${JSON.stringify(stdout)}`);
      return { registrar, hostpath };
    },
  );
  return cached;
}

/** A host process whose output is appended to `logs`. */
export function runLogged(bin: string, args: string[], logs: string[]): ChildProcess {
  const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (b: Buffer): void => {
    logs.push(b.toString());
  };
  p.stdout?.on('data', keep);
  p.stderr?.on('data', keep);
  return p;
}

/** SIGTERM, then SIGKILL after 5 s; nothing for a process already gone. */
export async function stopProcess(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
}

/**
 * The hostpath driver serving `socket` for `node`, then node-driver-registrar announcing it in
 * `registrationDir` by its `/var/lib/kubelet/plugins/csi-hostpath/csi.sock` path, as their DaemonSet would.
 */
export async function startHostpathPlugin(o: {
  bins: CSIPluginBinaries;
  socket: string;
  node: string;
  driver: string;
  stateDir: string;
  registrationDir: string;
  logs: string[];
  verbosity: number;
}): Promise<{ driver: ChildProcess; registrar: ChildProcess }> {
  const driver = runLogged(
    o.bins.hostpath,
    [
      `--endpoint=unix://${o.socket}`,
      `--nodeid=${o.node}`,
      `--drivername=${o.driver}`,
      `--statedir=${o.stateDir}`,
      `--v=${o.verbosity}`,
    ],
    o.logs,
  );
  await eventually(() => existsSync(o.socket), 30_000, 'the driver socket');
  const registrar = runLogged(
    o.bins.registrar,
    [
      `--csi-address=${o.socket}`,
      // The driver's socket as a kubelet's host has it, which is the node root here.
      '--kubelet-registration-path=/var/lib/kubelet/plugins/csi-hostpath/csi.sock',
      `--plugin-registration-path=${o.registrationDir}`,
      `--v=${o.verbosity}`,
    ],
    o.logs,
  );
  return { driver, registrar };
}

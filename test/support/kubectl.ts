/**
 * A long-running kubectl (logs -f, attach, port-forward) whose output a test watches while it runs.
 * kill() in a finally block: a test must never leave one behind.
 */
import { spawn } from 'node:child_process';
import type { ControlPlane } from './controlplane.js';

export interface WatchedKubectl {
  /** Everything written to stdout / stderr so far. */
  out(): string;
  err(): string;
  /** Resolves to the exit code (null after a signal), or 'timeout' when it has not exited within `ms`. */
  exit(ms: number): Promise<number | null | 'timeout'>;
  /** SIGKILL, when still running. */
  kill(): void;
}

/** Starts kubectl with the control plane's admin kubeconfig; `env` is added to this process's. */
export function spawnKubectl(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): WatchedKubectl {
  const child = spawn('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    out: () => out,
    err: () => err,
    exit: (ms) =>
      Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

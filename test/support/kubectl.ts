/**
 * kubectl for tests: a long-running one (logs -f, attach, port-forward) whose output a test watches while
 * it runs (kill() in a finally block: a test must never leave one behind), a ServiceAccount token and
 * what it may get.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { kubectl, type ControlPlane, type RunResult } from './controlplane.js';

/** Runs kubectl with `args` and asserts that it succeeds (its stderr as the message otherwise). */
export async function kubectlOk(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  args: string[],
): Promise<RunResult> {
  const r = await kubectl(cp, args);
  expect(r.code, r.stderr).to.equal(0);
  return r;
}

/**
 * Creates the ServiceAccount `name` (in `namespace`, default: kubectl's) and returns a token of it
 * (kubectl create token); asserts that both commands succeed.
 */
export async function saToken(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  name: string,
  namespace?: string,
): Promise<string> {
  const ns = namespace ? ['-n', namespace] : [];
  await kubectlOk(cp, ['create', 'serviceaccount', name, ...ns]);
  const t = await kubectlOk(cp, ['create', 'token', name, ...ns]);
  return t.stdout.trim();
}

/**
 * Lets ServiceAccount `default/<sa>` get `resource` (e.g. `nodes/log`, or several comma-separated): a
 * ClusterRole and a ClusterRoleBinding both named `name`; asserts that both commands succeed.
 */
export async function grantGet(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  name: string,
  resource: string,
  sa: string,
): Promise<void> {
  await kubectlOk(cp, ['create', 'clusterrole', name, '--verb=get', `--resource=${resource}`]);
  await kubectlOk(cp, [
    'create',
    'clusterrolebinding',
    name,
    `--clusterrole=${name}`,
    `--serviceaccount=default:${sa}`,
  ]);
}

/** A kubeconfig that holds only the control plane's server and CA, and `token` as the user `user`. */
export function tokenKubeConfig(
  cp: Pick<ControlPlane, 'adminKubeConfig'>,
  user: string,
  token: string,
): KubeConfig {
  const cluster = cp.adminKubeConfig().getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'test',
        server: cluster.server,
        caData: cluster.caData ?? readFileSync(cluster.caFile!).toString('base64'),
      },
    ],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'test', user }],
    currentContext: user,
  });
  return kc;
}

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

/**
 * Running a credential provider plugin and the API reads its service-account mode needs: the I/O around the
 * pure plugin.ts. The executable is `<binDir>/<name>`, run with the operator's environment plus the
 * provider's `env`, its request on stdin, and the kubelet's one-minute limit.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { KubeClient } from '../../../kube/client.js';
import type { Clock } from '../../../util/clock.js';
import { sha256Hex } from '../../../util/sha256.js';
import type { PluginIO } from '../plugin.js';

const PLUGIN_TIMEOUT_MS = 60_000;

function execPlugin(binDir: string): PluginIO['exec'] {
  return (name, args, env, stdin) =>
    new Promise((resolve, reject) => {
      const child = execFile(
        path.join(binDir, name),
        args,
        {
          timeout: PLUGIN_TIMEOUT_MS,
          maxBuffer: 4 * 1024 * 1024,
          env: { ...process.env, ...Object.fromEntries(env.map((e) => [e.name, e.value])) },
        },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`${err.message}: ${String(stderr)}`));
          else resolve(String(stdout));
        },
      );
      child.stdin?.end(stdin);
    });
}

const enc = encodeURIComponent;

/** The plugin I/O of a node: executables from `binDir`, ServiceAccounts and their tokens from the API. */
export function pluginIO(
  binDir: string,
  client: Pick<KubeClient, 'request'>,
  clock: Pick<Clock, 'now'>,
): PluginIO {
  return {
    exec: execPlugin(binDir),
    async serviceAccount(namespace, name) {
      const sa = await client.request<{ metadata: { uid?: string; annotations?: Record<string, string> } }>({
        method: 'GET',
        path: `/api/v1/namespaces/${enc(namespace)}/serviceaccounts/${enc(name)}`,
      });
      return { uid: sa.metadata.uid ?? '', annotations: sa.metadata.annotations ?? {} };
    },
    async serviceAccountToken(namespace, name, serviceAccountUID, audience, pod) {
      // The kubelet's request: the audience, bound to the pod, the API server's default lifetime.
      const tr = await client.request<{ status?: { token?: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${enc(namespace)}/serviceaccounts/${enc(name)}/token`,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          metadata: { uid: serviceAccountUID },
          spec: {
            audiences: [audience],
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid },
          },
        },
      });
      const token = tr.status?.token;
      if (!token) throw new Error('the TokenRequest answered no token');
      return token;
    },
    now: () => clock.now(),
    sha256: sha256Hex,
  };
}

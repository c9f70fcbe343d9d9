// The benchmark's control plane: etcd + kube-apiserver from test/support/controlplane.ts (no scheduler: pods
// are created with nodeName set), a Metadata-level audit log, and one client identity per party so the API
// server itself counts what each agent asks of it. Every identity is in system:masters, so RBAC allows
// everything and API Priority and Fairness exempts all of them alike (no server-side throttling on any side).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { stringify as toYaml } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import { run, startControlPlane, type ControlPlane } from '../../test/support/controlplane.js';
import { auditPolicy } from './audit.js';

/** The benchmark driver (creates and deletes pods, watches them); left out of the audit log. */
export const DRIVER_USER = 'bench-driver';
export const OPERATOR_USER = 'bench-kubelet-operator';
export const KWOK_USER = 'bench-kwok';

export interface BenchCluster {
  cp: ControlPlane;
  /** Scratch dir of this run: audit log (removed by stop), kubeconfigs, agent logs, configs. */
  dir: string;
  auditLog: string;
  kubeconfigs: Record<string, string>;
  /** A client with no rate limit as DRIVER_USER. */
  driver: KubeClient;
  stop(): Promise<void>;
}

async function openssl(args: string[]): Promise<void> {
  const r = await run('openssl', args);
  if (r.code !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.trim()}`);
}

/** A client certificate for `user` in system:masters, signed by the control plane's CA; its kubeconfig. */
async function identity(cp: ControlPlane, dir: string, user: string): Promise<string> {
  const pki = path.join(cp.dir, 'pki');
  const key = path.join(dir, `${user}.key`);
  const csr = path.join(dir, `${user}.csr`);
  const crt = path.join(dir, `${user}.crt`);
  const ext = path.join(dir, `${user}.ext`);
  await writeFile(ext, 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\n');
  await openssl([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    key,
    '-out',
    csr,
    '-subj',
    `/O=system:masters/CN=${user}`,
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    path.join(pki, 'ca.crt'),
    '-CAkey',
    path.join(pki, 'ca.key'),
    '-set_serial',
    `0x${randomBytes(12).toString('hex')}`,
    '-days',
    '30',
    '-extfile',
    ext,
    '-out',
    crt,
  ]);
  const b64 = async (f: string): Promise<string> => (await readFile(f)).toString('base64');
  const file = path.join(dir, `${user}.kubeconfig`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'bench',
        cluster: { server: cp.server, 'certificate-authority-data': await b64(path.join(pki, 'ca.crt')) },
      },
    ],
    users: [
      { name: user, user: { 'client-certificate-data': await b64(crt), 'client-key-data': await b64(key) } },
    ],
    contexts: [{ name: user, context: { cluster: 'bench', user } }],
    'current-context': user,
  };
  await writeFile(file, toYaml(config), { mode: 0o600 });
  return file;
}

export async function startBenchCluster(opts: { apiserverArgs?: string[] } = {}): Promise<BenchCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubelet-operator-bench-'));
  const auditLog = path.join(dir, 'audit.log');
  const policy = path.join(dir, 'audit-policy.yaml');
  // The API server's own loopback client is not an agent; leave it out too.
  await writeFile(policy, auditPolicy([DRIVER_USER, 'system:apiserver']));
  const cp = await startControlPlane({
    apiserverArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-format=json',
      '--audit-log-maxsize=0',
      '--audit-log-mode=blocking',
      ...(opts.apiserverArgs ?? []),
    ],
    readyTimeoutMs: 120_000,
  });
  try {
    const kubeconfigs: Record<string, string> = {};
    for (const u of [DRIVER_USER, OPERATOR_USER, KWOK_USER]) kubeconfigs[u] = await identity(cp, dir, u);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigs[DRIVER_USER]!);
    const driver = await KubeClient.fromKubeConfig(kc, {
      unlimited: true,
      userAgent: 'kubelet-operator-bench',
    });
    return {
      cp,
      dir,
      auditLog,
      kubeconfigs,
      driver,
      // The audit log (about 110 MB for 2 x 10,000 pods) has been read by then; the agents' logs stay, and
      // so does the audit log with BENCH_KEEP_AUDIT=1 (to read a run's requests one by one).
      stop: async () => {
        driver.close();
        await cp.stop();
        if (!process.env.BENCH_KEEP_AUDIT) await rm(auditLog, { force: true });
      },
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}

// The benchmark's control plane: etcd + kube-apiserver from test/support/controlplane.ts (no scheduler: pods
// are created with nodeName set), a Metadata-level audit log, and one client identity per party so the API
// server itself counts what each agent asks of it.
//
// The driver is a client certificate in system:masters (RBAC allows it everything, API Priority and Fairness
// exempts it). The agents authenticate as they are deployed (`--agent-auth token`, the default): each with a
// token of its own ServiceAccount, under its own RBAC and FlowSchemas. Ours is the sim overlay of
// manifests/ applied as a user would (the Deployment stays inert: there is no controller-manager here);
// kwok's is `kwok-controller` in kube-system, where kwok's own manifests put it (bound to cluster-admin
// here), so the built-in FlowSchemas give it workload-high and its Leases leader-election. With
// `--agent-auth certificate` both agents get client certificates in system:masters instead, as before
// 2026-11-29: exempt from API Priority and Fairness, and each request's chain verified by the API server.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { stringify as toYaml } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import {
  kubectl,
  REPO_ROOT,
  run,
  startControlPlane,
  type ControlPlane,
} from '../../test/support/controlplane.js';
import { applyCrd, waitForCrd } from '../../test/support/crd.js';
import type { AgentAuth } from './args.js';
import { auditPolicy } from './audit.js';

/** The benchmark driver (creates and deletes pods, watches them); left out of the audit log. */
export const DRIVER_USER = 'bench-driver';
export const OPERATOR_USER = 'bench-kubelet-operator';
export const KWOK_USER = 'bench-kwok';

/** An agent's kubeconfig and the user name the API server (and so the audit log) knows it by. */
export interface AgentIdentity {
  kubeconfig: string;
  user: string;
}

/** Where the manifests put each agent's ServiceAccount (`--agent-auth token`). */
const SERVICE_ACCOUNTS = {
  operator: { namespace: 'kubelet-operator-system', name: 'kubelet-operator' },
  kwok: { namespace: 'kube-system', name: 'kwok-controller' },
} as const;
/** Longer than any scenario runs; the agents read their token once. */
const TOKEN_SECONDS = 12 * 3600;

export interface BenchCluster {
  cp: ControlPlane;
  /** Scratch dir of this run: audit log (removed by stop), kubeconfigs, agent logs, configs. */
  dir: string;
  auditLog: string;
  auth: AgentAuth;
  operator: AgentIdentity;
  /** Only when the cluster was started for kwok too (`kwokDir`). */
  kwok?: AgentIdentity;
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
  return writeKubeconfig(cp, dir, user, {
    'client-certificate-data': await b64(crt),
    'client-key-data': await b64(key),
  });
}

async function writeKubeconfig(
  cp: ControlPlane,
  dir: string,
  user: string,
  credentials: Record<string, string>,
): Promise<string> {
  const ca = (await readFile(path.join(cp.dir, 'pki', 'ca.crt'))).toString('base64');
  const file = path.join(dir, `${user}.kubeconfig`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'bench', cluster: { server: cp.server, 'certificate-authority-data': ca } }],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: user, context: { cluster: 'bench', user } }],
    'current-context': user,
  };
  await writeFile(file, toYaml(config), { mode: 0o600 });
  return file;
}

/**
 * The agents' ServiceAccounts as each is installed, and a kubeconfig holding a token of each: ours with what
 * `kubectl apply -k manifests/overlays/sim` installs (the CRD, RBAC, admission policy, FlowSchemas), kwok's
 * with its own manifests' ServiceAccount, ClusterRole, binding and FlowSchema (`kwokDir`/rbac, which puts its
 * requests at the exempt priority level).
 */
async function serviceAccountIdentities(
  cp: ControlPlane,
  dir: string,
  driver: KubeClient,
  kwokDir: string | undefined,
): Promise<{ operator: AgentIdentity; kwok?: AgentIdentity }> {
  const apply = async (kustomization: string): Promise<void> => {
    const applied = await kubectl(cp, ['apply', '--server-side', '-k', kustomization]);
    if (applied.code !== 0) throw new Error(`applying ${kustomization} failed: ${applied.stderr.trim()}`);
  };
  await apply(path.join(REPO_ROOT, 'manifests/overlays/sim'));
  if (kwokDir) await apply(path.join(kwokDir, 'rbac'));
  const identityOf = async (sa: { namespace: string; name: string }): Promise<AgentIdentity> => {
    const tr = await driver.request<{ status: { token: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${sa.namespace}/serviceaccounts/${sa.name}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: TOKEN_SECONDS },
      },
    });
    const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
    return { kubeconfig: await writeKubeconfig(cp, dir, sa.name, { token: tr.status.token }), user };
  };
  const operator = await identityOf(SERVICE_ACCOUNTS.operator);
  return kwokDir ? { operator, kwok: await identityOf(SERVICE_ACCOUNTS.kwok) } : { operator };
}

/**
 * A control plane for one benchmark run, with the VirtualNode CRD served and the agents' identities; kwok's
 * only with `kwokDir` (scripts/kwok-binary.sh's directory).
 */
export async function startBenchCluster(
  opts: { apiserverArgs?: string[]; auth?: AgentAuth; kwokDir?: string; auditEvents?: boolean } = {},
): Promise<BenchCluster> {
  const auth = opts.auth ?? 'token';
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kubelet-operator-bench-'));
  const auditLog = path.join(dir, 'audit.log');
  const policy = path.join(dir, 'audit-policy.yaml');
  // The API server's own loopback client is not an agent; leave it out too.
  await writeFile(policy, auditPolicy([DRIVER_USER, 'system:apiserver'], { events: opts.auditEvents }));
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
    const kc = new KubeConfig();
    kc.loadFromFile(await identity(cp, dir, DRIVER_USER));
    const driver = await KubeClient.fromKubeConfig(kc, {
      unlimited: true,
      userAgent: 'kubelet-operator-bench',
    });
    const certificate = async (user: string): Promise<AgentIdentity> => ({
      kubeconfig: await identity(cp, dir, user),
      user,
    });
    let agents: { operator: AgentIdentity; kwok?: AgentIdentity };
    if (auth === 'token') {
      // The overlay applied there holds the CRD; it only has to be served.
      agents = await serviceAccountIdentities(cp, dir, driver, opts.kwokDir);
      await waitForCrd(cp);
    } else {
      await applyCrd(cp);
      const operator = await certificate(OPERATOR_USER);
      agents = opts.kwokDir ? { operator, kwok: await certificate(KWOK_USER) } : { operator };
    }
    return {
      cp,
      dir,
      auditLog,
      auth,
      ...agents,
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

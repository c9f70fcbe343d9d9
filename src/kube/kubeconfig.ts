/**
 * Where the API server is and how to authenticate, for the kubeconfigs almost every deployment uses: the
 * in-cluster service account, or one kubeconfig file whose current user has a client certificate or a bearer
 * token. Importing @kubernetes/client-node costs about 0.3 s of CPU (its generated API models load with its
 * KubeConfig), a third of the operator's start-up, to read a few fields. Anything beyond those fields (exec
 * plugins, auth providers, basic auth, impersonation, token files, proxies, several KUBECONFIG files) is left
 * to client-node's KubeConfig: `loadPlainKubeConfig` answers undefined and the caller loads that instead.
 * The unit tests hold both to the same answer on the same files.
 */
import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYAML } from 'yaml';
import { isRecord } from '../util/record.js';

/** The server URL (no trailing slash) and the request options client-node's applyToHTTPSOptions would give. */
export interface KubeConnection {
  server: string;
  options: https.RequestOptions;
}

/** Where the default lookup reads from; tests point these elsewhere. */
export interface KubeConfigEnvironment {
  env: NodeJS.ProcessEnv;
  home: string | undefined;
  /** The service account directory of an in-cluster pod. */
  serviceAccountDir: string;
}

const defaultEnvironment = (): KubeConfigEnvironment => ({
  env: process.env,
  home: process.env.HOME || os.homedir() || undefined,
  serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount',
});

const CLUSTER_KEYS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
]);
const USER_KEYS = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
]);

/**
 * The connection of `file`, or of the default lookup (as client-node's loadFromDefault: $KUBECONFIG,
 * ~/.kube/config, then the in-cluster service account) when `file` is undefined. Undefined when the
 * kubeconfig needs more than this reads (see the top of the file) or the lookup finds none. Throws when
 * a file that must be read cannot be.
 */
export function loadPlainKubeConfig(
  file?: string,
  environment: KubeConfigEnvironment = defaultEnvironment(),
): KubeConnection | undefined {
  if (file) return fromFile(file);
  const list = environment.env.KUBECONFIG;
  if (list) {
    const files = list.split(path.delimiter).filter((f) => f);
    return files.length === 1 ? fromFile(files[0]!) : undefined;
  }
  if (environment.home) {
    const config = path.join(environment.home, '.kube', 'config');
    if (existsSync(config)) return fromFile(config);
  }
  const token = path.join(environment.serviceAccountDir, 'token');
  if (existsSync(token)) return inCluster(environment);
  return undefined;
}

function fromFile(file: string): KubeConnection | undefined {
  const doc: unknown = parseYAML(readFileSync(file, 'utf8'));
  if (!isRecord(doc)) return undefined;
  const current = doc['current-context'];
  if (typeof current !== 'string' || !current) return undefined;
  const context = named(doc.contexts, current, 'context');
  if (!context || typeof context.cluster !== 'string' || typeof context.user !== 'string') return undefined;
  const cluster = named(doc.clusters, context.cluster, 'cluster');
  const user = named(doc.users, context.user, 'user');
  if (!cluster || !user) return undefined;
  if (Object.keys(cluster).some((k) => !CLUSTER_KEYS.has(k))) return undefined;
  if (Object.keys(user).some((k) => !USER_KEYS.has(k))) return undefined;
  if (typeof cluster.server !== 'string' || !cluster.server) return undefined;
  const strings = [...Object.entries(cluster), ...Object.entries(user)].filter(
    ([k]) => k !== 'insecure-skip-tls-verify',
  );
  if (strings.some(([, v]) => typeof v !== 'string')) return undefined;

  const dir = path.dirname(file);
  const read = (f: unknown, data: unknown): Buffer | undefined =>
    typeof f === 'string' && f
      ? readFileSync(path.isAbsolute(f) ? f : path.join(dir, f))
      : typeof data === 'string' && data
        ? Buffer.from(data, 'base64')
        : undefined;
  const options: https.RequestOptions = {};
  if (cluster['insecure-skip-tls-verify'] === true) options.rejectUnauthorized = false;
  if (typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name'])
    options.servername = cluster['tls-server-name'];
  const ca = read(cluster['certificate-authority'], cluster['certificate-authority-data']);
  if (ca) options.ca = ca;
  const cert = read(user['client-certificate'], user['client-certificate-data']);
  if (cert) options.cert = cert;
  const key = read(user['client-key'], user['client-key-data']);
  if (key) options.key = key;
  options.headers =
    typeof user.token === 'string' && user.token ? { Authorization: `Bearer ${user.token}` } : {};
  return { server: cluster.server.replace(/\/$/, ''), options };
}

/** The service account's CA and token, and the API server the kubelet's environment variables name. */
function inCluster(environment: KubeConfigEnvironment): KubeConnection {
  const host = environment.env.KUBERNETES_SERVICE_HOST;
  const port = environment.env.KUBERNETES_SERVICE_PORT;
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const serverHost = host && net.isIPv6(host) ? `[${host}]` : host;
  const dir = environment.serviceAccountDir;
  const token = readFileSync(path.join(dir, 'token'), 'utf8');
  return {
    server: `${scheme}://${serverHost}:${port}`,
    options: {
      ca: readFileSync(path.join(dir, 'ca.crt')),
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    },
  };
}

/** The `field` of the entry called `name` in a kubeconfig list (clusters, contexts, users). */
function named(list: unknown, name: string, field: string): Record<string, unknown> | undefined {
  if (!Array.isArray(list)) return undefined;
  const found: unknown[] = list.filter((e) => isRecord(e) && e.name === name);
  // client-node takes the first of several; a kubeconfig with duplicates is left to it all the same.
  if (found.length !== 1) return undefined;
  const value = (found[0] as Record<string, unknown>)[field];
  return isRecord(value) ? value : undefined;
}

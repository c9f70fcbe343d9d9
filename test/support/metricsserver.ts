// metrics-server beside a test control plane, so `kubectl top nodes|pods` (and HorizontalPodAutoscalers on
// CPU or memory) work: the resource metrics API `metrics.k8s.io/v1beta1` served through kube-apiserver's
// aggregation layer, scraped from each Node's node API (`/metrics/resource`).
//
// Everything stays on loopback. metrics-server listens on 127.0.0.1:<free port>. The APIService names
// the Service kube-system/metrics-server, which is of type ExternalName with externalName 127.0.0.1: for
// such a Service the aggregator (without --enable-aggregator-routing) dials `<externalName>:<APIService
// port>` directly (k8s.io/apiserver/pkg/util/proxy.ResolveCluster), and its availability check skips the
// EndpointSlice lookup that only ClusterIP Services get (kube-aggregator's remote availability
// controller). EndpointSlices could not hold a loopback address anyway, and there is no kube-proxy.
// A control plane with a pod network (`npm run up`) runs kube-apiserver with --enable-aggregator-routing, which
// looks the Service's endpoints up and refuses ExternalName: there metrics-server listens on the API server's
// bridge address and a Service without selector with an EndpointSlice names it (metricsserver-objects.ts).
// The aggregator verifies metrics-server's serving certificate against the APIService's caBundle with
// server name `metrics-server.kube-system.svc`.
//
// Credentials: a client certificate (CN system:metrics-server) signed by the cluster CA, used both for the
// API server and for the node API (whose client CA is the cluster CA in `npm run up` and the cluster suite;
// its SubjectAccessReview on nodes/metrics passes by the ClusterRole below); a serving certificate from a
// CA of its own, whose certificate is the APIService's caBundle.
import { readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import {
  freePort,
  REPO_ROOT,
  runEnsureScript,
  writeKubeconfig,
  type AddOnProcess,
  type ControlPlane,
} from './controlplane.js';
import {
  accessObjects,
  apiServiceObject,
  METRICS_API_SERVICE,
  METRICS_SERVER_USER,
  NAME,
} from './metricsserver-objects.js';
import { makePki } from './metricsserver-pki.js';

export { METRICS_API_SERVICE, METRICS_SERVER_USER };

const SCRIPT = path.join(REPO_ROOT, 'scripts/metrics-server.sh');
const FIELD_MANAGER = 'kubelet-operator-metrics-server';

export interface MetricsServerOptions {
  /**
   * The CA that signs the node API's serving certificates (--kubelet-certificate-authority). Default: the
   * cluster CA, which signs kubelet-serving CSRs (kube-controller-manager's --cluster-signing-cert-file).
   */
  kubeletCA?: string;
  /** --metric-resolution in seconds; metrics-server refuses less than 10. Default 15. */
  metricResolutionSeconds?: number;
  /** How long to wait, from the process start, for the APIService to be Available. Default 60 s. */
  readyTimeoutMs?: number;
  /** More metrics-server flags, appended after ours (a later flag wins). */
  extraArgs?: string[];
}

export interface MetricsServer {
  /** Where metrics-server listens: https://127.0.0.1:<port>, or the API server's bridge address with a pod network. */
  url: string;
  port: number;
  /** Its process (group) id, also listed by the control plane's processes(). */
  pid: number;
  logPath: string;
  /** Holds its certificates and kubeconfig (inside the control plane's dir). */
  dir: string;
  /** The exact flags it was started with. */
  args: string[];
  /** Milliseconds from the call to the APIService being Available, build check included. */
  startMs: number;
  /** Removes the APIService (so discovery does not report a dead group) and ends the process. */
  stop(): Promise<void>;
}

// ---- the binary -------------------------------------------------------------------------------

let binaryPromise: Promise<string> | undefined;

/**
 * Path of the metrics-server binary. Runs scripts/metrics-server.sh once per process: instant when cached,
 * a build of a few minutes when cold (its progress goes to our stderr).
 */
export function ensureMetricsServer(): Promise<string> {
  binaryPromise ??= runEnsureScript(SCRIPT);
  binaryPromise.catch(() => (binaryPromise = undefined));
  return binaryPromise;
}

/** The REST path of one of the objects above. */
function objectPath(obj: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}): string {
  const plural: Record<string, string> = {
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    RoleBinding: 'rolebindings',
    Service: 'services',
    APIService: 'apiservices',
    EndpointSlice: 'endpointslices',
  };
  const resource = plural[obj.kind];
  if (!resource) throw new Error(`no REST path known for kind ${obj.kind}`);
  const base = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
  const ns = obj.metadata.namespace ? `/namespaces/${obj.metadata.namespace}` : '';
  return `${base}${ns}/${resource}/${obj.metadata.name}`;
}

interface ApiResponse {
  status: number;
  body: string;
}

/** One request to the API server with the admin credentials. */
async function api(
  cp: ControlPlane,
  method: 'GET' | 'PATCH' | 'DELETE',
  apiPath: string,
  opts: { body?: unknown; contentType?: string; timeoutMs?: number } = {},
): Promise<ApiResponse> {
  const kc = cp.adminKubeConfig();
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      new URL(cp.server + apiPath),
      {
        ...options,
        method,
        agent: false,
        timeout: opts.timeoutMs ?? 10_000,
        headers: {
          accept: 'application/json',
          ...(body === undefined
            ? {}
            : {
                'content-type': opts.contentType ?? 'application/json',
                'content-length': Buffer.byteLength(body),
              }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${apiPath}: timeout`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Server-side apply of each object (created, or made to match). */
async function applyObjects(cp: ControlPlane, objects: object[]): Promise<void> {
  await Promise.all(
    objects.map(async (obj) => {
      const p = objectPath(obj as Parameters<typeof objectPath>[0]);
      const res = await api(cp, 'PATCH', `${p}?fieldManager=${FIELD_MANAGER}&force=true`, {
        body: obj,
        contentType: 'application/apply-patch+yaml',
      });
      if (res.status < 200 || res.status > 299) {
        throw new Error(`applying ${p} failed (HTTP ${res.status}): ${res.body.slice(0, 500)}`);
      }
    }),
  );
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** The APIService's Available condition, if it has one yet. */
async function availableCondition(cp: ControlPlane): Promise<Condition | undefined> {
  const res = await api(cp, 'GET', `/apis/apiregistration.k8s.io/v1/apiservices/${METRICS_API_SERVICE}`);
  if (res.status !== 200) return undefined;
  const svc = JSON.parse(res.body) as { status?: { conditions?: Condition[] } };
  return svc.status?.conditions?.find((c) => c.type === 'Available');
}

// ---- the process ------------------------------------------------------------------------------

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** GET https://<host>:<port>/livez, verifying the serving certificate by its Service name; true on 200. */
function live(host: string, port: number, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      { host, port, path: '/livez', ca, servername: `${NAME}.kube-system.svc`, agent: false, timeout: 2000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * Starts metrics-server for `cp` and registers it as the APIService `v1beta1.metrics.k8s.io`; resolves once
 * that APIService is Available (see the module comment for how the aggregator reaches it). The process is a
 * component of `cp`: cp.stop() ends it too, and so do the control plane's exit hook and orphan reaping.
 */
export async function startMetricsServer(
  cp: ControlPlane,
  opts: MetricsServerOptions = {},
): Promise<MetricsServer> {
  const t0 = Date.now();
  const resolutionS = opts.metricResolutionSeconds ?? 15;
  if (resolutionS < 10)
    throw new Error(`metrics-server refuses a metric resolution under 10 s (got ${resolutionS})`);
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const clusterPki = path.join(cp.dir, 'pki');
  const dir = path.join(cp.dir, NAME);
  await mkdir(dir, { recursive: true });

  // With a pod network the API server routes to a Service's endpoints (see accessObjects): metrics-server then
  // listens on the API server's address on the run's bridge, which an EndpointSlice may name (loopback not).
  const host = cp.podNetworkServer ? new URL(cp.podNetworkServer).hostname : '127.0.0.1';
  const port = await freePort();
  const [binary, pki] = await Promise.all([
    ensureMetricsServer(),
    makePki(dir, clusterPki),
    // Its permissions and the Service go in first: at start it reads the authentication ConfigMap.
    applyObjects(cp, accessObjects(host === '127.0.0.1' ? undefined : { ip: host, port })),
  ]);
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeKubeconfig(
    kubeconfig,
    cp.server,
    path.join(clusterPki, 'ca.crt'),
    METRICS_SERVER_USER,
    pki.client,
  );

  // A scrape must fit in 90 % of the resolution (metrics-server checks this); 10 s is its default.
  const requestTimeoutS = Math.min(10, Math.floor(resolutionS * 0.9));
  const args = [
    `--secure-port=${port}`,
    `--bind-address=${host}`,
    `--cert-dir=${path.join(dir, 'certs')}`,
    `--tls-cert-file=${pki.serving.cert}`,
    `--tls-private-key-file=${pki.serving.key}`,
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    // Nodes: dialled at their InternalIP on the port they publish (status.daemonEndpoints), their serving
    // certificates verified; the client certificate of the kubeconfig authenticates us to the node API.
    '--kubelet-preferred-address-types=InternalIP',
    '--kubelet-use-node-status-port',
    `--kubelet-certificate-authority=${opts.kubeletCA ?? path.join(clusterPki, 'ca.crt')}`,
    `--kubelet-request-timeout=${requestTimeoutS}s`,
    `--metric-resolution=${resolutionS}s`,
    ...(opts.extraArgs ?? []),
  ];
  const proc: AddOnProcess = await cp.addComponent(NAME, binary, args);
  const servingCA = await readFile(pki.servingCA);
  const deadline = Date.now() + readyTimeoutMs;
  const fail = async (what: string): Promise<never> => {
    await proc.stop(1000);
    throw new Error(`metrics-server: ${what}; log ${proc.logPath}:\n${tail(proc.logPath)}`);
  };

  // It listens once its informers have synced. Registering the APIService after that spares the
  // aggregator a failed first check (it retries with back-off, up to 30 s apart).
  while (!(await live(host, port, servingCA))) {
    if (!proc.running) await fail('exited before serving');
    if (Date.now() > deadline) await fail(`not serving on ${host}:${port} after ${readyTimeoutMs} ms`);
    await sleep(100);
  }
  await applyObjects(cp, [apiServiceObject(port, servingCA)]);
  let last: Condition | undefined;
  for (;;) {
    last = await availableCondition(cp).catch(() => last);
    if (last?.status === 'True') break;
    if (!proc.running) await fail('exited before its APIService was Available');
    if (Date.now() > deadline) {
      const why = last ? `${last.reason ?? ''}: ${last.message ?? ''}` : 'no condition yet';
      await fail(`APIService ${METRICS_API_SERVICE} not Available after ${readyTimeoutMs} ms (${why})`);
    }
    await sleep(200);
  }

  let stopped: Promise<void> | undefined;
  return {
    url: `https://${host}:${port}`,
    port,
    pid: proc.pid,
    logPath: proc.logPath,
    dir,
    args,
    startMs: Date.now() - t0,
    stop: () =>
      (stopped ??= (async () => {
        // Best effort: the control plane may be stopping or gone already.
        await api(cp, 'DELETE', `/apis/apiregistration.k8s.io/v1/apiservices/${METRICS_API_SERVICE}`, {
          timeoutMs: 3000,
        }).catch(() => undefined);
        await proc.stop();
      })()),
  };
}

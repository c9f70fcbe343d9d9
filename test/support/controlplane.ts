// A real Kubernetes control plane for tests: etcd + kube-apiserver, optionally kube-scheduler and
// kube-controller-manager, built from source by scripts/kube-binaries.sh and cached outside the repo.
//
// Everything a control plane owns lives in one temp dir (certs, kubeconfigs, etcd data, component logs).
// Components run detached in their own process groups; stop() ends the groups, and a synchronous
// process 'exit' hook SIGKILLs any group still running, so no component outlives the test process. A
// control plane whose owner died by SIGKILL is reaped by the next startControlPlane() (see reapOrphans).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BINARIES_SCRIPT = path.join(REPO_ROOT, 'scripts/kube-binaries.sh');
const DIR_PREFIX = 'kubelet-operator-cp-';
/** First address of the service range: the `kubernetes` Service's ClusterIP. */
const SERVICE_CIDR = '10.0.0.0/24';
const KUBERNETES_SERVICE_IP = '10.0.0.1';

export interface ControlPlaneOptions {
  /** Also run kube-scheduler. */
  scheduler?: boolean;
  /** Also run kube-controller-manager (namespaces get their default ServiceAccount, GC runs, ...). */
  controllerManager?: boolean;
  /**
   * Extra kube-apiserver flags, appended after ours (a later flag wins). `{pki}` in a flag becomes the
   * directory of the cluster's certificates (e.g. `--kubelet-certificate-authority={pki}/ca.crt`).
   */
  apiserverArgs?: string[];
  /** Extra kube-controller-manager flags, appended after ours (a later flag wins). */
  controllerManagerArgs?: string[];
  /** How long to wait for each component to become ready. Default 60 s. */
  readyTimeoutMs?: number;
  /**
   * The cluster's pod network, when it has one (test/support/podnetwork.ts): kube-apiserver then also listens
   * on `advertiseAddress` (the host's address on the run's bridge, in its serving certificate too) and keeps
   * the `kubernetes` Service's endpoints pointing there, so pods reach it through the Service; and
   * kube-controller-manager hands each Node a /24 of `clusterCIDR` (node IPAM), as on a kubeadm cluster.
   */
  podNetwork?: { advertiseAddress: string; clusterCIDR: string };
}

export interface ComponentProcess {
  name: 'etcd' | 'kube-apiserver' | 'kube-scheduler' | 'kube-controller-manager' | AddOnName;
  /** Also the process group id: each component leads its own group. */
  pid: number;
  logPath: string;
}

/** Programs that run beside the control plane as components of its own (see ControlPlane.addComponent). */
export type AddOnName = 'metrics-server';

/** A component started with ControlPlane.addComponent. */
export interface AddOnProcess extends ComponentProcess {
  readonly running: boolean;
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM to its group, SIGKILL after graceMs (default 3 s); it is then no longer listed by processes(). */
  stop(graceMs?: number): Promise<void>;
}

export interface ControlPlane {
  /** Temp dir holding certs, kubeconfigs, etcd data and logs; removed by stop(). */
  dir: string;
  /** https URL of kube-apiserver on loopback. */
  server: string;
  /** https URL of kube-apiserver as pods and nodes reach it (the pod network's address), when it has one. */
  podNetworkServer?: string;
  /** Admin kubeconfig (client cert in system:masters, certs embedded so it can be copied). */
  kubeconfigPath: string;
  binDir: string;
  /** Milliseconds startControlPlane() took, binaries check included. */
  startMs: number;
  processes(): ComponentProcess[];
  adminKubeConfig(): KubeConfig;
  /**
   * Runs `binary` as one more component (an add-on such as metrics-server): in its own process group, output
   * to logs/<name>.log, listed by processes(), stopped before kube-apiserver by stop(), and killed by the
   * process-exit hook and by reapOrphans(). For reapOrphans its arguments must name `dir`.
   */
  addComponent(name: AddOnName, binary: string, args: string[]): Promise<AddOnProcess>;
  /**
   * Stops kube-apiserver alone (SIGTERM to its group, SIGKILL after 10 s) and starts it again with the very
   * same flags, so on the same port, certificates and etcd (whose data is untouched); resolves once its
   * /readyz answers 200 again. `whileDown` runs between the two, with nothing listening on the port; the
   * server is started again even when it rejects (and its error is then rethrown). The other components
   * keep running and reconnect by themselves.
   */
  restartApiServer(whileDown?: () => Promise<void>): Promise<void>;
  /** Ends every component (SIGTERM to its group, SIGKILL after a grace period) and removes dir. */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

class Component {
  readonly exited: Promise<void>;
  private done = false;

  constructor(
    readonly name: ComponentProcess['name'],
    readonly child: ChildProcess,
    readonly logPath: string,
  ) {
    this.exited = new Promise((resolve) => {
      child.once('exit', () => {
        this.done = true;
        liveGroups.delete(child.pid!);
        resolve();
      });
    });
  }

  get running(): boolean {
    return !this.done;
  }

  get pid(): number {
    return this.child.pid!;
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.done) killGroup(this.pid, sig);
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves once the leader has exited. */
  async stop(graceMs: number): Promise<void> {
    if (this.done) return;
    this.signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.signal('SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
    // The leader is gone; make sure nothing it forked lingers in the group.
    killGroup(this.pid, 'SIGKILL');
  }
}

// ---- process-exit safety net -------------------------------------------------------------------

/** Process group -> the control plane dir it belongs to, for every component still running. */
const liveGroups = new Map<number, string>();
let exitHookInstalled = false;

function killGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // ESRCH: the group is already gone.
  }
}

function killAllGroups(): void {
  const dirs = new Set(liveGroups.values());
  for (const pgid of liveGroups.keys()) killGroup(pgid, 'SIGKILL');
  liveGroups.clear();
  for (const dir of dirs) {
    // Synchronous on purpose: this runs in the 'exit' hook.
    dropEtcdData(dir);
    writeSync(2, `control plane killed at process exit; its logs are kept in ${path.join(dir, 'logs')}\n`);
  }
}

/** A kept dir is for its logs; etcd's data (~120 MB of preallocated WAL) is not worth keeping. */
function dropEtcdData(dir: string): void {
  rmSync(path.join(dir, 'etcd'), { recursive: true, force: true });
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllGroups);
  // A signal that nobody handles ends node without 'exit': then kill our groups and let the signal do
  // what it would have done. When someone else handles it (mocha, scripts/up.ts), leave it to them;
  // the 'exit' hook still runs when they exit.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      if (process.listenerCount(sig) > 1) return;
      killAllGroups();
      process.removeListener(sig, onSignal);
      process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

/**
 * Kills the components of control planes whose owning process no longer exists (e.g. it was
 * SIGKILLed, so its exit hook never ran). A component is only killed if its command line still
 * names that control plane's dir, so a recycled PID is left alone.
 */
export function reapOrphans(): void {
  const tmp = os.tmpdir();
  let entries: string[];
  try {
    entries = readdirSync(tmp).filter((e) => e.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = path.join(tmp, entry);
    let owner: { ownerPid: number; pids: number[] };
    try {
      owner = JSON.parse(readFileSync(path.join(dir, 'owner.json'), 'utf8')) as typeof owner;
    } catch {
      continue;
    }
    if (pidAlive(owner.ownerPid)) continue;
    let killed = false;
    for (const pid of owner.pids) {
      if (commandLineOf(pid).includes(dir)) {
        killGroup(pid, 'SIGKILL');
        killed = true;
      }
    }
    if (killed) {
      dropEtcdData(dir);
      console.error(
        `killed an orphaned control plane (owner pid ${owner.ownerPid} is gone); logs in ${dir}/logs`,
      );
    }
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

// ---- small helpers ---------------------------------------------------------------------------

/** Runs a command to completion; a non-zero exit is data, not an error. */
export function run(
  cmd: string,
  args: string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    if (child.stdin) {
      // A command that exits without reading its input must not crash us with EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
  });
}

/** Runs the machine's kubectl against the control plane's admin kubeconfig. */
export function kubectl(
  cp: Pick<ControlPlane, 'kubeconfigPath'>,
  args: string[],
  input?: string,
): Promise<RunResult> {
  return run('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], input === undefined ? {} : { input });
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

async function freePorts(n: number): Promise<number[]> {
  // Hold all listeners open together so the same port is not handed out twice.
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const srv = net.createServer();
          srv.unref();
          srv.once('error', reject);
          srv.listen({ host: '127.0.0.1', port: 0 }, () => resolve(srv));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- binaries ---------------------------------------------------------------------------------

/**
 * Runs one of the scripts that ensure a cached binary (scripts/kube-binaries.sh, scripts/metrics-server.sh):
 * its progress goes to our stderr as it happens, and it resolves to the script's last stdout line (the path
 * it prints), or rejects naming the script with the last lines of its stderr.
 */
export function runEnsureScript(script: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      // Show build progress as it happens; keep the text for the error message.
      process.stderr.write(d);
      stderr = (stderr + d).slice(-4000);
    });
    child.once('error', reject);
    child.once('close', (code) => {
      const last = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && last) return resolve(last);
      const lastLines = stderr.trimEnd().split('\n').slice(-5).join('\n');
      reject(new Error(`${path.relative(REPO_ROOT, script)} exited ${code}:\n${lastLines}`));
    });
  });
}

let binDirPromise: Promise<string> | undefined;

/**
 * Path of the dir holding kube-apiserver, etcd (and the scheduler and controller-manager when built
 * here). Runs scripts/kube-binaries.sh once per process: instant when cached, a long build when cold
 * (its progress goes to our stderr).
 */
export function ensureBinaries(): Promise<string> {
  binDirPromise ??= runEnsureScript(BINARIES_SCRIPT);
  binDirPromise.catch(() => (binDirPromise = undefined));
  return binDirPromise;
}

/** The Kubernetes release scripts/kube-binaries.sh pins (or KUBE_VERSION when set). */
export function pinnedKubeVersion(): string {
  if (process.env.KUBE_VERSION) return process.env.KUBE_VERSION;
  const m = /KUBE_VERSION="\$\{KUBE_VERSION:-(v[^}]+)\}"/.exec(readFileSync(BINARIES_SCRIPT, 'utf8'));
  if (!m) throw new Error(`no KUBE_VERSION pin found in ${BINARIES_SCRIPT}`);
  return m[1]!;
}

// ---- certificates -----------------------------------------------------------------------------

interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  saKey: string;
  saPub: string;
  /** A second CA for the aggregation layer's request-header authentication, and its client. */
  frontProxyCaCert: string;
  frontProxyClient: { cert: string; key: string };
  client(name: string): { cert: string; key: string };
}

async function openssl(args: string[]): Promise<void> {
  const res = await run('openssl', args);
  if (res.code !== 0) throw new Error(`openssl ${args[0]} failed (${res.code}): ${res.stderr.trim()}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
const DAYS = ['-days', '3650'];

/**
 * The cluster CA with a serving cert for the apiserver and the given client certs (name -> subject),
 * the front-proxy CA with its client, and the service-account key pair. All keys are ECDSA P-256
 * (fast to generate; every component accepts them).
 */
async function makePki(
  dir: string,
  clients: Record<string, string>,
  extraServerIPs: readonly string[] = [],
): Promise<Pki> {
  const p = (f: string): string => path.join(dir, f);
  await mkdir(dir, { recursive: true });

  const ca = (name: string, cn: string): Promise<void> =>
    openssl([
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      p(`${name}.key`),
      '-out',
      p(`${name}.crt`),
      ...DAYS,
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ]);
  const leaf = async (caName: string, name: string, subject: string, ext: string[]): Promise<void> => {
    await writeFile(p(`${name}.ext`), ext.join('\n') + '\n');
    await openssl([
      'req',
      '-new',
      ...EC_KEY,
      '-keyout',
      p(`${name}.key`),
      '-out',
      p(`${name}.csr`),
      '-subj',
      subject,
    ]);
    await openssl([
      'x509',
      '-req',
      '-in',
      p(`${name}.csr`),
      '-CA',
      p(`${caName}.crt`),
      '-CAkey',
      p(`${caName}.key`),
      // A random serial instead of -CAcreateserial: the leaves are signed in parallel.
      '-set_serial',
      `0x${randomBytes(12).toString('hex')}`,
      ...DAYS,
      '-extfile',
      p(`${name}.ext`),
      '-out',
      p(`${name}.crt`),
    ]);
  };
  const common = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment'];
  const clientExt = [...common, 'extendedKeyUsage=clientAuth'];
  const sans = [
    'IP:127.0.0.1',
    `IP:${KUBERNETES_SERVICE_IP}`,
    'DNS:localhost',
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    'DNS:kubernetes.default.svc.cluster.local',
    ...extraServerIPs.map((ip) => `IP:${ip}`),
  ];
  await Promise.all([
    (async () => {
      await ca('ca', 'kubelet-operator-test-ca');
      await Promise.all([
        leaf('ca', 'apiserver', '/CN=kube-apiserver', [
          ...common,
          'extendedKeyUsage=serverAuth',
          `subjectAltName=${sans.join(',')}`,
        ]),
        ...Object.entries(clients).map(([name, subject]) => leaf('ca', name, subject, clientExt)),
      ]);
    })(),
    (async () => {
      await ca('front-proxy-ca', 'kubelet-operator-test-front-proxy-ca');
      await leaf('front-proxy-ca', 'front-proxy-client', '/CN=front-proxy-client', clientExt);
    })(),
    (async () => {
      await openssl([
        'genpkey',
        '-algorithm',
        'EC',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-out',
        p('sa.key'),
      ]);
      await openssl(['pkey', '-in', p('sa.key'), '-pubout', '-out', p('sa.pub')]);
    })(),
  ]);
  const pair = (name: string): { cert: string; key: string } => ({
    cert: p(`${name}.crt`),
    key: p(`${name}.key`),
  });
  return {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    serverCert: p('apiserver.crt'),
    serverKey: p('apiserver.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
    frontProxyCaCert: p('front-proxy-ca.crt'),
    frontProxyClient: pair('front-proxy-client'),
    client: pair,
  };
}

/** A kubeconfig for `user` at `server` with a client certificate; the certificates are embedded. */
export async function writeKubeconfig(
  file: string,
  server: string,
  caCert: string,
  user: string,
  client: { cert: string; key: string },
): Promise<void> {
  const b64 = async (f: string): Promise<string> => (await readFile(f)).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'kubelet-operator-test', cluster: { server, 'certificate-authority-data': await b64(caCert) } },
    ],
    users: [
      {
        name: user,
        user: {
          'client-certificate-data': await b64(client.cert),
          'client-key-data': await b64(client.key),
        },
      },
    ],
    contexts: [{ name: user, context: { cluster: 'kubelet-operator-test', user } }],
    'current-context': user,
  };
  await writeFile(file, toYaml(config), { mode: 0o600 });
}

// ---- readiness --------------------------------------------------------------------------------

interface TlsClient {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

function httpsGet(url: string, tls: TlsClient): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ...tls, rejectUnauthorized: Boolean(tls.ca), timeout: 2000, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 2000, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Polls `probe` until it returns true; fails early when the component exits, and on timeout. */
async function waitReady(
  component: Component,
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    if (!component.running) {
      throw new Error(
        `${component.name} exited before ${what}; log ${component.logPath}:\n${tail(component.logPath)}`,
      );
    }
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${component.name} not ready (${what}) after ${timeoutMs} ms${lastError ? ` (last error: ${lastError})` : ''}; ` +
          `log ${component.logPath}:\n${tail(component.logPath)}`,
      );
    }
    await sleep(100);
  }
}

// ---- the control plane ------------------------------------------------------------------------

/** Starts etcd and kube-apiserver (and optionally the scheduler and controller-manager); see ControlPlane. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const t0 = Date.now();
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  installExitHook();
  reapOrphans();
  const binDir = await ensureBinaries();
  for (const [wanted, bin] of [
    [opts.scheduler, 'kube-scheduler'],
    [opts.controllerManager, 'kube-controller-manager'],
  ] as const) {
    if (wanted && !existsSync(path.join(binDir, bin))) throw new Error(`${bin} is not in ${binDir}`);
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), DIR_PREFIX));
  const components: Component[] = [];
  const ownerFile = path.join(dir, 'owner.json');
  const recordOwner = (): Promise<void> =>
    writeFile(ownerFile, JSON.stringify({ ownerPid: process.pid, pids: components.map((c) => c.pid) }));

  const launch = async (
    name: ComponentProcess['name'],
    args: string[],
    binary = path.join(binDir, name),
  ): Promise<Component> => {
    const logPath = path.join(dir, 'logs', `${name}.log`);
    const fd = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(binary, args, { detached: true, stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.unref();
    liveGroups.set(child.pid!, dir);
    const c = new Component(name, child, logPath);
    components.push(c);
    await recordOwner();
    return c;
  };

  const stopAll = async (graceMs: number): Promise<void> => {
    // Clients of the apiserver first, then the apiserver, etcd last: no error spam from reconnects.
    const order = ['metrics-server', 'kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd'];
    const byOrder = [...components].sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    await Promise.all(byOrder.filter((c) => c.name !== 'etcd').map((c) => c.stop(graceMs)));
    await Promise.all(byOrder.filter((c) => c.name === 'etcd').map((c) => c.stop(graceMs)));
  };

  try {
    await mkdir(path.join(dir, 'logs'));
    const [etcdClientPort, etcdPeerPort, apiPort, schedulerPort, cmPort] = (await freePorts(5)) as [
      number,
      number,
      number,
      number,
      number,
    ];
    const server = `https://127.0.0.1:${apiPort}`;
    const clients: Record<string, string> = {
      admin: '/O=system:masters/CN=kubelet-operator-admin',
      'apiserver-kubelet-client': '/O=system:masters/CN=kube-apiserver-kubelet-client',
    };
    if (opts.scheduler) clients['scheduler'] = '/CN=system:kube-scheduler';
    if (opts.controllerManager) clients['controller-manager'] = '/CN=system:kube-controller-manager';
    const advertise = opts.podNetwork?.advertiseAddress;
    const pki = await makePki(path.join(dir, 'pki'), clients, advertise ? [advertise] : []);

    const kubeconfigPath = path.join(dir, 'admin.kubeconfig');
    await writeKubeconfig(kubeconfigPath, server, pki.caCert, 'admin', pki.client('admin'));

    // etcd: loopback only, both its ports picked free, no fsync (the data dir is thrown away).
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = await launch('etcd', [
      '--name=kubelet-operator-test',
      `--data-dir=${path.join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=kubelet-operator-test=${peerUrl}`,
      '--initial-cluster-state=new',
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    await waitReady(etcd, `${etcdUrl}/health`, readyTimeoutMs, async () => {
      const res = await httpGet(`${etcdUrl}/health`);
      return res.status === 200 && res.body.includes('"health":"true"');
    });

    const kubeletClient = pki.client('apiserver-kubelet-client');
    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      `--secure-port=${apiPort}`,
      ...(advertise
        ? [
            // Loopback for the host's clients and the run's bridge for pods: both are this machine's.
            '--bind-address=0.0.0.0',
            `--advertise-address=${advertise}`,
            '--endpoint-reconciler-type=lease',
            // Webhooks and aggregated APIs by their Services' endpoints (pod IPs, routed to the nodes), not
            // their ClusterIPs: no kube-proxy runs in the host's network namespace, where this server is.
            '--enable-aggregator-routing=true',
          ]
        : [
            '--bind-address=127.0.0.1',
            '--advertise-address=127.0.0.1',
            // The lease endpoint reconciler refuses a loopback advertise address; without a pod network
            // nothing needs the `kubernetes` Service's endpoints (the Service itself is still created).
            '--endpoint-reconciler-type=none',
          ]),
      `--cert-dir=${path.join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      `--kubelet-client-certificate=${kubeletClient.cert}`,
      `--kubelet-client-key=${kubeletClient.key}`,
      // Node serving certificates (kubelet-serving CSRs are signed by the cluster CA) are verified, and a
      // Node is dialled at its InternalIP: node names do not resolve here.
      `--kubelet-certificate-authority=${pki.caCert}`,
      '--kubelet-preferred-address-types=InternalIP',
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // Request-header (front-proxy) authentication: the aggregation layer works, and the scheduler
      // and controller-manager find a complete extension-apiserver-authentication ConfigMap.
      `--requestheader-client-ca-file=${pki.frontProxyCaCert}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${pki.frontProxyClient.cert}`,
      `--proxy-client-key-file=${pki.frontProxyClient.key}`,
      '--allow-privileged=true',
      '--profiling=false',
      ...(opts.apiserverArgs ?? []).map((a) => a.replaceAll('{pki}', path.join(dir, 'pki'))),
    ];
    let apiserver = await launch('kube-apiserver', apiserverArgs);
    const adminTls: TlsClient = {
      ca: readFileSync(pki.caCert),
      cert: readFileSync(pki.client('admin').cert),
      key: readFileSync(pki.client('admin').key),
    };
    const apiserverReady = (c: Component): Promise<void> =>
      waitReady(c, `${server}/readyz`, readyTimeoutMs, async () => {
        const res = await httpsGet(`${server}/readyz`, adminTls);
        return res.status === 200;
      });
    await apiserverReady(apiserver);
    // /readyz can pass a moment before the system namespaces exist; tests create things in them.
    await waitReady(apiserver, 'namespace default', readyTimeoutMs, async () => {
      const res = await httpsGet(`${server}/api/v1/namespaces/default`, adminTls);
      return res.status === 200;
    });

    const componentKubeconfig = async (name: string, user: string): Promise<string> => {
      const file = path.join(dir, `${name}.kubeconfig`);
      await writeKubeconfig(file, server, pki.caCert, user, pki.client(name));
      return file;
    };
    const waitHealthz = (c: Component, port: number): Promise<void> =>
      waitReady(c, `https://127.0.0.1:${port}/healthz`, readyTimeoutMs, async () => {
        // Their serving certs are self-signed; /healthz needs no credentials.
        const res = await httpsGet(`https://127.0.0.1:${port}/healthz`, {});
        return res.status === 200;
      });
    const extras: Promise<void>[] = [];
    if (opts.controllerManager) {
      const kc = await componentKubeconfig('controller-manager', 'system:kube-controller-manager');
      const cm = await launch('kube-controller-manager', [
        `--kubeconfig=${kc}`,
        `--authentication-kubeconfig=${kc}`,
        `--authorization-kubeconfig=${kc}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${cmPort}`,
        `--cert-dir=${path.join(dir, 'controller-manager-certs')}`,
        '--leader-elect=false',
        '--use-service-account-credentials=true',
        `--service-account-private-key-file=${pki.saKey}`,
        `--root-ca-file=${pki.caCert}`,
        `--cluster-signing-cert-file=${pki.caCert}`,
        `--cluster-signing-key-file=${pki.caKey}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        ...(opts.podNetwork
          ? [
              '--allocate-node-cidrs=true',
              `--cluster-cidr=${opts.podNetwork.clusterCIDR}`,
              '--node-cidr-mask-size=24',
              '--configure-cloud-routes=false',
            ]
          : []),
        // A list flag: a second --controllers would add to this one, so one in the extra args replaces it.
        ...((opts.controllerManagerArgs ?? []).some((a) => a.startsWith('--controllers='))
          ? []
          : ['--controllers=*']),
        ...(opts.controllerManagerArgs ?? []),
      ]);
      extras.push(waitHealthz(cm, cmPort));
    }
    if (opts.scheduler) {
      const kc = await componentKubeconfig('scheduler', 'system:kube-scheduler');
      const sched = await launch('kube-scheduler', [
        `--kubeconfig=${kc}`,
        `--authentication-kubeconfig=${kc}`,
        `--authorization-kubeconfig=${kc}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${schedulerPort}`,
        `--cert-dir=${path.join(dir, 'scheduler-certs')}`,
        '--leader-elect=false',
      ]);
      extras.push(waitHealthz(sched, schedulerPort));
    }
    await Promise.all(extras);

    let stopped: Promise<void> | undefined;
    return {
      dir,
      server,
      ...(advertise ? { podNetworkServer: `https://${advertise}:${apiPort}` } : {}),
      kubeconfigPath,
      binDir,
      startMs: Date.now() - t0,
      processes: () => components.map((c) => ({ name: c.name, pid: c.pid, logPath: c.logPath })),
      adminKubeConfig: () => {
        const kc = new KubeConfig();
        kc.loadFromFile(kubeconfigPath);
        return kc;
      },
      addComponent: async (name, binary, args) => {
        if (stopped) throw new Error(`the control plane in ${dir} is stopped; cannot start ${name}`);
        const c = await launch(name, args, binary);
        return {
          name,
          pid: c.pid,
          logPath: c.logPath,
          get running() {
            return c.running;
          },
          exited: c.exited,
          stop: async (graceMs = 3000) => {
            await c.stop(graceMs);
            const i = components.indexOf(c);
            if (i >= 0) components.splice(i, 1);
            if (!stopped) await recordOwner().catch(() => undefined);
          },
        };
      },
      restartApiServer: async (whileDown) => {
        if (stopped) throw new Error(`the control plane in ${dir} is stopped; cannot restart kube-apiserver`);
        const old = apiserver;
        await old.stop(10_000);
        components.splice(components.indexOf(old), 1);
        await recordOwner();
        let failure: unknown;
        try {
          await whileDown?.();
        } catch (err) {
          failure = err;
        }
        // Same flags, same log file (appended): the port was freed when the old process exited.
        apiserver = await launch('kube-apiserver', apiserverArgs);
        await apiserverReady(apiserver);
        if (failure !== undefined) throw failure;
      },
      stop: (stopOpts = {}) =>
        (stopped ??= (async () => {
          await stopAll(3000);
          if (stopOpts.keepDir) {
            dropEtcdData(dir);
            console.error(`control plane stopped; its logs are kept in ${path.join(dir, 'logs')}`);
          } else {
            await rm(dir, { recursive: true, force: true });
          }
        })()),
    };
  } catch (err) {
    await stopAll(1000);
    dropEtcdData(dir);
    console.error(`control plane failed to start; logs are kept in ${path.join(dir, 'logs')}`);
    throw err;
  }
}

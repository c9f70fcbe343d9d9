// CriRuntime against a real containerd 1.6 (scripts/containerd.sh): the shared Runtime behaviour suite,
// then what only a real runtime over a real socket can show (cgroups, seccomp, OOM, HTTP, restarts).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../src/api/core.js';
import { CriRuntime, type CriLogger } from '../../src/runtime/cri/client.js';
import { buildContainerConfig } from '../../src/kubelet/kuberuntime/containerconfig.js';
import { buildPodSandboxConfig, type NodeSettings } from '../../src/kubelet/kuberuntime/sandboxconfig.js';
import { StatsProvider } from '../../src/kubelet/stats/shell/provider.js';
import { ContainerNameLabel, PodUIDLabel } from '../../src/runtime/labels.js';
import { RealClock } from '../../src/util/clock.js';
import type { ContainerStatus, PodSandboxConfig } from '../../src/runtime/types.js';
import { KindError, errorKind } from '../../src/util/errors.js';
import { startContainerd, type TestContainerd } from '../support/containerd.js';
import { describeRuntimeBehaviour } from '../support/runtime-behaviour.js';
import { kindRejection } from '../support/throws.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(
  pred: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

class SpyLogger implements CriLogger {
  readonly lines: { level: 'warn' | 'info'; message: string; fields?: Record<string, unknown> }[] = [];
  warn(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: 'warn', message, fields });
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: 'info', message, fields });
  }
  count(level: 'warn' | 'info'): number {
    return this.lines.filter((l) => l.level === level).length;
  }
}

/** Cgroup directories for a cgroupfs path in every mounted hierarchy (v1 controllers and unified). */
function cgroupFile(controller: string, path: string, file: string): string | undefined {
  const base = '/sys/fs/cgroup';
  for (const d of readdirSync(base)) {
    if (d.split(',').includes(controller)) {
      const f = join(base, d, path, file);
      if (existsSync(f)) return readFileSync(f, 'utf8').trim();
    }
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv: Server = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

// ------------------------------------------------------------------------------------ shared suite

describeRuntimeBehaviour('cri', async () => {
  const ctd = await startContainerd();
  const runtime = new CriRuntime({ endpoint: ctd.endpoint });
  return {
    runtime,
    images: ctd.images,
    cgroupParent: ctd.cgroupParentPrefix,
    waitFor: (pred, timeoutMs) => waitFor(pred, timeoutMs),
    teardown: async () => {
      await runtime.close();
      await ctd.stop();
    },
  };
});

// ------------------------------------------------------------------------------------ CRI-specific

describe('CriRuntime on real containerd', function () {
  this.timeout(120_000);

  let ctd: TestContainerd;
  let rt: CriRuntime;
  let log: SpyLogger;
  let node: NodeSettings;
  let sandboxes: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // may apt-get install on a fresh machine
    ctd = await startContainerd();
    log = new SpyLogger();
    rt = new CriRuntime({ endpoint: ctd.endpoint, logger: log, shortTimeoutMs: 5_000, execGraceMs: 5_000 });
    node = { nodeName: 'cri-e2e', podLogsRoot: join(ctd.dir, 'pods'), cgroupRoot: ctd.cgroupParentPrefix };
  });

  after(async function () {
    this.timeout(3 * 60_000);
    await rt?.close();
    await ctd?.stop();
  });

  afterEach(async () => {
    for (const id of sandboxes.reverse()) {
      await rt.stopPodSandbox(id).catch(() => undefined);
      await rt.removePodSandbox(id).catch(() => undefined);
    }
    sandboxes = [];
  });

  function makePod(name: string, containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
    return {
      metadata: { name, namespace: 'cri-e2e', uid: randomUUID() },
      spec: { hostNetwork: true, containers, terminationGracePeriodSeconds: 5, ...extra },
    };
  }

  /** Runs the pod's sandbox and starts its containers (attempt 0), as the kubelet would build them. */
  async function runPod(
    pod: Pod,
  ): Promise<{ sandboxId: string; config: PodSandboxConfig; ids: Record<string, string> }> {
    const config = buildPodSandboxConfig(pod, node, 0);
    const sandboxId = await rt.runPodSandbox(config);
    sandboxes.push(sandboxId);
    const ids: Record<string, string> = {};
    for (const c of pod.spec.containers) {
      const cc = buildContainerConfig(
        pod,
        c,
        { restartCount: 0, envs: [{ key: 'POD_NAME', value: pod.metadata.name! }] },
        node,
      );
      ids[c.name] = await rt.createContainer(sandboxId, cc, config);
      await rt.startContainer(ids[c.name]!);
    }
    return { sandboxId, config, ids };
  }

  async function waitExited(id: string, timeoutMs = 30_000): Promise<ContainerStatus> {
    await waitFor(
      async () => (await rt.containerStatus(id)).state === 'exited',
      timeoutMs,
      `container ${id} to exit`,
    );
    return rt.containerStatus(id);
  }

  it('reports usage: a busy container over 100m, an idle one under 10m, through the stats provider', async () => {
    const busy: Container = {
      name: 'busy',
      image: ctd.images.busybox,
      command: ['sh', '-c', 'while :; do :; done'],
    };
    const idle: Container = { name: 'idle', image: ctd.images.busybox, command: ['sleep', '3600'] };
    const pod = makePod('stats', [busy, idle]);
    const { ids } = await runPod(pod);
    const provider = new StatsProvider({
      nodeName: 'cri-e2e',
      runtime: rt,
      clock: new RealClock(),
      startTimeMs: Date.now(),
      memoryCapacityBytes: 1 << 30,
      ephemeralStorageCapacityBytes: 1 << 30,
      nodesServed: () => 1,
    });
    const direct = await rt.listContainerStats({ id: ids.busy! });
    expect(direct).to.have.length(1);
    expect(direct[0]!.attributes?.metadata.name).to.equal('busy');
    expect(direct[0]!.cpu?.usageCoreNanoSeconds).to.be.greaterThan(0);
    expect(direct[0]!.memory?.workingSetBytes).to.be.greaterThan(0);
    await provider.summary({ fs: false });
    await sleep(2_000);
    const s = await provider.summary({ fs: false });
    const p = s.pods.find((x) => x.podRef.uid === pod.metadata.uid);
    expect(p, JSON.stringify(s.pods.map((x) => x.podRef))).to.not.equal(undefined);
    const cpu = (name: string): number =>
      p!.containers.find((c) => c.name === name)?.cpu?.usageNanoCores ?? -1;
    console.log(`      busy ${(cpu('busy') / 1e6).toFixed(1)}m, idle ${(cpu('idle') / 1e6).toFixed(2)}m`);
    expect(cpu('busy')).to.be.greaterThan(100e6);
    expect(cpu('idle')).to.be.within(0, 10e6);
    expect(p!.cpu?.usageCoreNanoSeconds).to.be.greaterThan(0);
    expect(p!.memory?.workingSetBytes).to.be.greaterThan(0);
    expect(s.node.cpu?.usageNanoCores).to.be.greaterThan(100e6);
  });

  it('runs a full pod lifecycle built from a Pod: logs, labels, cgroup limits, seccomp, removal', async () => {
    const app: Container = {
      name: 'app',
      image: ctd.images.busybox,
      command: ['sh', '-c', 'echo "hello from $POD_NAME"; echo oops >&2; exec sleep 3600'],
      resources: { requests: { cpu: '250m' }, limits: { cpu: '500m', memory: '64Mi' } },
    };
    const loose: Container = { name: 'loose', image: ctd.images.busybox, command: ['sleep', '3600'] };
    const pod = makePod('lifecycle', [app, loose]);
    const unconfinedPod = makePod('unconfined', [{ ...loose }], {
      securityContext: { seccompProfile: { type: 'Unconfined' } },
    });
    const { sandboxId, config, ids } = await runPod(pod);
    const uid = pod.metadata.uid!;

    const sb = await rt.podSandboxStatus(sandboxId);
    expect(sb.state).to.equal('ready');
    expect(sb.networkMode).to.equal('NODE');
    expect(sb.labels[PodUIDLabel]).to.equal(uid);

    const s = await rt.containerStatus(ids.app!);
    expect(s.state).to.equal('running');
    expect(s.podSandboxId).to.equal(sandboxId);
    expect(s.labels[ContainerNameLabel]).to.equal('app');
    expect(s.annotations['io.kubernetes.container.restartCount']).to.equal('0');
    expect(s.logPath).to.equal(join(ctd.dir, 'pods', `cri-e2e_lifecycle_${uid}`, 'app', '0.log'));

    // CRI log format: <RFC3339Nano> <stream> F <line>
    await waitFor(
      () => existsSync(s.logPath) && readFileSync(s.logPath, 'utf8').includes('oops'),
      10_000,
      'log lines',
    );
    const lines = readFileSync(s.logPath, 'utf8').trim().split('\n');
    expect(lines).to.have.length(2);
    // stdout and stderr reach containerd through separate pipes, so their order in the file is not fixed
    // (seen both ways); each stream's line must still be exact.
    const ts = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d+(Z|[+-]\\d\\d:\\d\\d)';
    expect(lines.filter((l) => new RegExp(`^${ts} stdout F hello from lifecycle$`).test(l))).to.have.length(
      1,
    );
    expect(lines.filter((l) => new RegExp(`^${ts} stderr F oops$`).test(l))).to.have.length(1);

    // The limits podconfig computed are what the kernel enforces.
    const cgroupPath = `${config.linux!.cgroupParent}/${ids.app}`;
    expect(cgroupFile('memory', cgroupPath, 'memory.limit_in_bytes')).to.equal(String(64 * 1024 * 1024));
    expect(cgroupFile('cpu', cgroupPath, 'cpu.shares')).to.equal('256');
    expect(cgroupFile('cpu', cgroupPath, 'cpu.cfs_quota_us')).to.equal('50000');
    expect(cgroupFile('cpu', cgroupPath, 'cpu.cfs_period_us')).to.equal('100000');

    // RuntimeDefault seccomp was sent explicitly (mode 2 = filter); an Unconfined pod has none (0).
    const seccomp = async (id: string): Promise<string> =>
      (await rt.execSync(id, ['sh', '-c', 'grep ^Seccomp: /proc/self/status'], 10)).stdout.toString().trim();
    expect(await seccomp(ids.app!)).to.match(/^Seccomp:\s+2$/);
    const unconfined = await runPod(unconfinedPod);
    expect(await seccomp(unconfined.ids.loose!)).to.match(/^Seccomp:\s+0$/);

    const listed = await rt.listContainers({ labelSelector: { [PodUIDLabel]: uid } });
    expect(listed.map((c) => c.id).sort()).to.deep.equal([ids.app, ids.loose].sort());

    await rt.stopPodSandbox(sandboxId);
    expect((await rt.podSandboxStatus(sandboxId)).state).to.equal('notready');
    for (const id of Object.values(ids)) expect((await rt.containerStatus(id)).exitCode).to.equal(137);
    await rt.removePodSandbox(sandboxId);
    expect(await rt.listContainers({ labelSelector: { [PodUIDLabel]: uid } })).to.deep.equal([]);
    expect(await rt.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } })).to.deep.equal([]);
    expect(errorKind(await kindRejection(rt.podSandboxStatus(sandboxId)))).to.equal('NotFound');
    // Idempotent removal and stop of a removed sandbox.
    await rt.removePodSandbox(sandboxId);
    await rt.stopPodSandbox(sandboxId);
  });

  it('reports exit codes and reasons: Completed, Error, OOMKilled', async () => {
    const pod = makePod('exits', [
      { name: 'ok', image: ctd.images.busybox, command: ['true'] },
      { name: 'fail', image: ctd.images.busybox, command: ['sh', '-c', 'exit 42'] },
      {
        name: 'oom',
        image: ctd.images.busybox,
        // Builds a 50 MB shell string under a 10 MiB limit.
        command: ['sh', '-c', 'x=$(head -c 50000000 /dev/zero | tr "\\0" a); sleep 1'],
        resources: { limits: { memory: '10Mi' } },
      },
    ]);
    const { ids } = await runPod(pod);
    const ok = await waitExited(ids.ok!);
    expect([ok.exitCode, ok.reason]).to.deep.equal([0, 'Completed']);
    const fail = await waitExited(ids.fail!);
    expect([fail.exitCode, fail.reason]).to.deep.equal([42, 'Error']);
    // Verified on this machine (cgroup v1 memory controller, containerd 1.6.20): the kernel OOM-kills the
    // container and containerd reports OOMKilled with 137.
    const oom = await waitExited(ids.oom!);
    expect([oom.exitCode, oom.reason]).to.deep.equal([137, 'OOMKilled']);
    expect(oom.finishedAt > oom.startedAt).to.equal(true);
  });

  it('execSync: exit code as data; its own timeout is DeadlineExceeded, promptly', async () => {
    const { ids } = await runPod(
      makePod('exec', [{ name: 'main', image: ctd.images.busybox, command: ['sleep', '3600'] }]),
    );
    const r = await rt.execSync(ids.main!, ['sh', '-c', 'echo out; echo err >&2; exit 5'], 10);
    expect([r.stdout.toString(), r.stderr.toString(), r.exitCode]).to.deep.equal(['out\n', 'err\n', 5]);

    const t0 = Date.now();
    const err = await kindRejection(rt.execSync(ids.main!, ['sleep', '30'], 1));
    const elapsed = Date.now() - t0;
    expect(err.kind, err.message).to.equal('DeadlineExceeded');
    expect(elapsed, 'the runtime enforces the exec timeout, well before timeout + grace').to.be.below(4_000);
    expect(err.context).to.include({ method: 'ExecSync', container: ids.main });

    expect(errorKind(await kindRejection(rt.execSync('0'.repeat(64), ['true'], 1)))).to.equal('NotFound');
  });

  it('serves HTTP from busybox httpd on the host network, and stop waits out its grace period (137)', async () => {
    const port = await freePort();
    const web: Container = {
      name: 'web',
      image: ctd.images.busybox,
      command: [
        'sh',
        '-c',
        `echo "hello over http" > /tmp/index.html && exec httpd -f -p 127.0.0.1:${port} -h /tmp`,
      ],
      ports: [{ containerPort: port, hostPort: port }],
    };
    const { ids } = await runPod(makePod('httpd', [web]));
    let body = '';
    await waitFor(
      async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/`);
          body = await res.text();
          return res.status === 200;
        } catch {
          return false;
        }
      },
      15_000,
      'httpd to answer',
    );
    expect(body).to.equal('hello over http\n');

    // httpd is PID 1 with no SIGTERM handler: the kernel drops SIGTERM, so StopContainer waits 2 s then kills.
    const t0 = Date.now();
    await rt.stopContainer(ids.web!, 2);
    const elapsed = Date.now() - t0;
    expect(elapsed).to.be.within(1_800, 10_000);
    const s = await rt.containerStatus(ids.web!);
    expect([s.state, s.exitCode]).to.deep.equal(['exited', 137]);
    const gone = await fetch(`http://127.0.0.1:${port}/`).then(
      () => false,
      () => true,
    );
    expect(gone, 'httpd no longer serving').to.equal(true);
  });

  it('restarts a container as attempt + 1 with its own log file; the old attempt stays reserved', async () => {
    const c: Container = { name: 'again', image: ctd.images.busybox, command: ['sh', '-c', 'echo run'] };
    const pod = makePod('restart', [c]);
    const { sandboxId, config, ids } = await runPod(pod);
    const first = await waitExited(ids.again!);
    expect(first.reason).to.equal('Completed');

    const again = await kindRejection(
      rt.createContainer(sandboxId, buildContainerConfig(pod, c, { restartCount: 0 }, node), config),
    );
    expect(again.kind, again.message).to.equal('AlreadyExists');

    const secondId = await rt.createContainer(
      sandboxId,
      buildContainerConfig(pod, c, { restartCount: 1 }, node),
      config,
    );
    await rt.startContainer(secondId);
    const second = await waitExited(secondId);
    expect(second.metadata).to.deep.equal({ name: 'again', attempt: 1 });
    expect(second.annotations['io.kubernetes.container.restartCount']).to.equal('1');
    expect(second.logPath.endsWith('/again/1.log')).to.equal(true);
    expect(readFileSync(second.logPath, 'utf8')).to.match(/ stdout F run\n$/);
    expect(readFileSync(first.logPath, 'utf8')).to.match(/ stdout F run\n$/);
    const all = await rt.listContainers({ podSandboxId: sandboxId });
    expect(all.map((x) => x.metadata.attempt).sort()).to.deep.equal([0, 1]);
  });

  it("fails a remote pull fast with a typed error carrying containerd's message", async () => {
    const t0 = Date.now();
    const err = await kindRejection(rt.pullImage('docker.io/library/definitely-not-here:1'));
    expect(Date.now() - t0).to.be.below(30_000);
    expect(err.kind).to.equal('Unknown');
    expect(err.message).to.match(
      /^failed to pull and unpack image "docker.io\/library\/definitely-not-here:1"/,
    );
    expect(err.message).to.contain('no such host');
    expect(err.context).to.include({
      method: 'PullImage',
      image: 'docker.io/library/definitely-not-here:1',
      grpcCode: 'UNKNOWN',
    });
    // Present images: status and list.
    expect((await rt.imageStatus(ctd.images.busybox))?.repoTags).to.include(ctd.images.busybox);
    expect((await rt.listImages()).some((i) => i.repoTags.includes(ctd.images.pause))).to.equal(true);
  });

  it('survives a containerd restart: Unavailable while down (one log line), then the same containers', async () => {
    const { sandboxId, ids } = await runPod(
      makePod('survivor', [{ name: 'main', image: ctd.images.busybox, command: ['sleep', '3600'] }]),
    );
    const before = await rt.containerStatus(ids.main!);
    const warnsBefore = log.count('warn');
    const infosBefore = log.count('info');

    await ctd.restartDaemon(async () => {
      for (let i = 0; i < 3; i++) {
        const t0 = Date.now();
        const err = await kindRejection(rt.listContainers());
        expect(err.kind, err.message).to.equal('Unavailable');
        expect(Date.now() - t0, 'fails fast while down').to.be.below(5_000);
      }
      const err = await kindRejection(rt.stopContainer(ids.main!, 0));
      expect(err.kind).to.equal('Unavailable');
      expect(err.message).to.contain(ctd.socketPath);
    });
    const warns = log.lines.slice(warnsBefore).filter((l) => l.level === 'warn');
    expect(warns, 'one warning per outage').to.have.length(1);
    expect(warns[0]!.message).to.contain(ctd.socketPath);

    // The channel reconnects on its own (backoff at most 3 s).
    await waitFor(
      async () =>
        rt.version().then(
          () => true,
          () => false,
        ),
      20_000,
      'the client to reconnect',
    );
    expect(log.count('info') - infosBefore).to.equal(1);
    const after = await rt.containerStatus(ids.main!);
    expect(after.state).to.equal('running');
    expect(after.startedAt).to.equal(before.startedAt);
    expect((await rt.listPodSandbox({ id: sandboxId }))[0]?.state).to.equal('ready');
    expect((await rt.execSync(ids.main!, ['echo', 'still here'], 10)).stdout.toString()).to.equal(
      'still here\n',
    );
  });
});

describe('CriRuntime without a runtime', function () {
  this.timeout(30_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ko-cri-nosock-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives Unavailable quickly for a missing socket, and logs one line naming its path', async () => {
    const socket = join(dir, 'missing.sock');
    const log = new SpyLogger();
    const rt = new CriRuntime({ endpoint: `unix://${socket}`, logger: log });
    try {
      for (const call of [
        () => rt.version(),
        () => rt.status(),
        () => rt.runPodSandbox(minimalSandbox()),
        () => rt.listContainers(),
      ]) {
        const t0 = Date.now();
        const err = await kindRejection(call());
        expect(err.kind, err.message).to.equal('Unavailable');
        expect(Date.now() - t0).to.be.below(2_000);
        expect(err.message).to.contain(socket);
      }
      expect(log.lines).to.have.length(1);
      expect(log.lines[0]!.level).to.equal('warn');
      expect(log.lines[0]!.message).to.contain(socket);
    } finally {
      await rt.close();
    }
  });

  it('gives DeadlineExceeded, not a hang, when the socket accepts but never answers', async () => {
    const socket = join(dir, 'silent.sock');
    const conns: Socket[] = [];
    const silent = createServer((c) => conns.push(c)).listen(socket);
    await new Promise((r) => silent.once('listening', r));
    const rt = new CriRuntime({ endpoint: `unix://${socket}`, shortTimeoutMs: 500 });
    try {
      const t0 = Date.now();
      const err = await kindRejection(rt.version());
      expect(err.kind, err.message).to.equal('DeadlineExceeded');
      expect(Date.now() - t0).to.be.within(400, 3_000);
    } finally {
      await rt.close();
      // grpc-js drops a connection that never got ready only at its connect timeout: end it here.
      for (const c of conns) c.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('refuses calls after close() and rejects a relative endpoint at construction', async () => {
    const rt = new CriRuntime({ endpoint: `unix://${join(dir, 'x.sock')}` });
    await rt.close();
    await rt.close();
    expect((await kindRejection(rt.version())).kind).to.equal('Unavailable');
    expect(() => new CriRuntime({ endpoint: 'unix://relative.sock' })).to.throw(KindError);
    expect(() => new CriRuntime({ endpoint: '/abs.sock', requestTimeoutMs: 0 })).to.throw(KindError);
  });
});

function minimalSandbox(): PodSandboxConfig {
  return { metadata: { name: 'x', uid: 'u', namespace: 'n', attempt: 0 }, labels: {}, annotations: {} };
}

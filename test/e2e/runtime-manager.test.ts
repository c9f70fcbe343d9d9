// KubeGenericRuntimeManager against a real containerd: a pod with an init container and a long-running
// container reaches running through repeated syncs, then killPod + removePod leave nothing behind (no
// containers, sandboxes, log directory or pod cgroup).
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../src/api/core.js';
import { newCrashLoopBackOff } from '../../src/kubelet/backoff.js';
import type { RuntimePodStatus } from '../../src/kubelet/container/types.js';
import { ImagePullBackOff } from '../../src/kubelet/images/pullbackoff.js';
import { KubeGenericRuntimeManager } from '../../src/kubelet/kuberuntime/shell/manager.js';
import { ReasonCache } from '../../src/kubelet/reasoncache.js';
import { CriRuntime } from '../../src/runtime/cri/client.js';
import { podLogsDirectory } from '../../src/kubelet/kuberuntime/sandboxconfig.js';
import { PodUIDLabel } from '../../src/runtime/labels.js';
import { RealClock } from '../../src/util/clock.js';
import { startContainerd, type TestContainerd, podCgroupDirs } from '../support/containerd.js';
import { SyncCancel } from '../../src/kubelet/util/synccancel.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const NODE = 'rm-e2e';

/** The pod cgroup's directory in every mounted hierarchy that has it. */

describe('KubeGenericRuntimeManager on real containerd', function () {
  this.timeout(180_000);

  let ctd: TestContainerd;
  let runtime: CriRuntime;
  let logRoot: string;
  let manager: KubeGenericRuntimeManager;
  const events: string[] = [];

  before(async function () {
    this.timeout(15 * 60_000); // may apt-get install on a fresh machine
    ctd = await startContainerd();
    runtime = new CriRuntime({ endpoint: ctd.endpoint });
    logRoot = await mkdtemp(join(tmpdir(), 'ko-rm-logs-'));
    manager = new KubeGenericRuntimeManager({
      runtime,
      clock: new RealClock(),
      nodeSettings: {
        nodeName: NODE,
        podLogsRoot: logRoot,
        cgroupRoot: ctd.cgroupParentPrefix,
        podNetwork: 'host',
        nodeIP: '127.0.0.1',
      },
      recorder: (_pod, type, reason, message) => events.push(`${type} ${reason}: ${message}`),
      envSource: { getConfigMap: async () => undefined, getSecret: async () => undefined },
      httpGet: async () => ({ status: 200 }),
      crashLoopBackOff: newCrashLoopBackOff(),
      imagePullBackOff: new ImagePullBackOff(),
      reasonCache: new ReasonCache(),
      logger: { info: () => undefined, warn: () => undefined },
    });
  });

  after(async function () {
    this.timeout(3 * 60_000);
    await runtime?.close();
    await ctd?.stop();
    if (logRoot) await rm(logRoot, { recursive: true, force: true });
  });

  /** Syncs `pod` until its container `main` runs; returns the pod's runtime status then. */
  async function syncUntilRunning(sync: SyncCancel, pod: Pod): Promise<RuntimePodStatus> {
    const { uid, name } = pod.metadata as { uid: string; name: string };
    const probes = { liveness: { get: () => undefined }, startup: { get: () => undefined } };
    let status: RuntimePodStatus = await manager.getPodStatus(uid, name, 'default');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const main = status.containers.find((c) => c.name === 'main');
      if (main?.state === 'running') return status;
      if (Date.now() > deadline) throw new Error(`main never ran; events: ${events.join(' | ')}`);
      const r = await manager.syncPod(sync, pod, status, probes);
      expect(r.error?.message ?? '', events.join(' | ')).to.equal('');
      await sleep(200);
      status = await manager.getPodStatus(uid, name, 'default');
    }
  }

  it('runs init then main, and killPod + removePod leave nothing', async () => {
    const uid = randomUUID();
    const pod: Pod = {
      metadata: { name: 'init-and-sleep', namespace: 'default', uid },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 2,
        initContainers: [
          {
            name: 'init',
            image: ctd.images.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sh', '-c', 'echo init done'],
          },
        ],
        containers: [
          {
            name: 'main',
            image: ctd.images.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
            env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          },
        ],
      },
    };
    const sync = new SyncCancel();
    let status = await syncUntilRunning(sync, pod);

    expect(status.sandboxes).to.have.length(1);
    expect(status.sandboxes[0]).to.include({ state: 'ready', netns: 'node' });
    expect(status.containers.map((c) => `${c.name}:${c.state}`)).to.deep.equal([
      'main:running',
      'init:exited',
    ]);
    expect(status.containers[1]).to.include({ exitCode: 0, reason: 'Completed', runtimeType: 'containerd' });
    expect(events).to.include('Normal Started: Started container init');
    expect(events).to.include('Normal Started: Started container main');
    const logDir = podLogsDirectory(logRoot, 'default', pod.metadata.name!, uid);
    expect(readFileSync(join(logDir, 'init', '0.log'), 'utf8')).to.match(/ stdout F init done\n$/);
    expect(podCgroupDirs(ctd.cgroupParentPrefix, uid)).to.not.deep.equal([]);

    // sleep as PID 1 ignores SIGTERM: the 2 s grace period runs out, then SIGKILL.
    const killed = await manager.killPod(sync, pod, status);
    expect(killed.error).to.equal(undefined);
    status = await manager.getPodStatus(uid, pod.metadata.name!, 'default');
    expect(status.containers.find((c) => c.name === 'main')).to.include({ state: 'exited', exitCode: 137 });
    expect(status.sandboxes[0]!.state).to.equal('notready');

    const removed = await manager.removePod(status);
    expect(removed.error).to.equal(undefined);
    expect(await runtime.listContainers({ labelSelector: { [PodUIDLabel]: uid } })).to.deep.equal([]);
    expect(await runtime.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } })).to.deep.equal([]);
    expect(await manager.getPods()).to.deep.equal([]);
    expect(existsSync(logDir)).to.equal(false);
    expect(podCgroupDirs(ctd.cgroupParentPrefix, uid)).to.deep.equal([]);
  });

  it('kills a process left in the pod cgroup when the pod is removed, and the cgroup goes (pod container manager Destroy)', async () => {
    const uid = randomUUID();
    const pod: Pod = {
      metadata: { name: 'stray-process', namespace: 'default', uid },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: ctd.images.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
          },
        ],
      },
    };
    const sync = new SyncCancel();
    let status = await syncUntilRunning(sync, pod);
    // A host process charged to the pod's cgroup, as one escaping its container's would be: the runtime knows
    // nothing of it, so removing the sandbox leaves it there and the cgroup cannot be removed.
    const stray = spawn('sleep', ['3600'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      stray.on('exit', (_code, signal) => resolve(signal)),
    );
    const dirs = podCgroupDirs(ctd.cgroupParentPrefix, uid).filter((d) =>
      existsSync(join(d, 'cgroup.procs')),
    );
    expect(dirs, 'the pod has a cgroup').to.not.deep.equal([]);
    for (const d of dirs) writeFileSync(join(d, 'cgroup.procs'), String(stray.pid));
    try {
      expect((await manager.killPod(sync, pod, status)).error).to.equal(undefined);
      status = await manager.getPodStatus(uid, pod.metadata.name!, 'default');
      expect((await manager.removePod(status)).error).to.equal(undefined);
      expect(podCgroupDirs(ctd.cgroupParentPrefix, uid)).to.deep.equal([]);
      expect(await exited).to.equal('SIGKILL');
    } finally {
      stray.kill('SIGKILL');
    }
  });
});

/**
 * The whole operator in-process against a real kube-apiserver with a `cri` VirtualNode on a real containerd:
 * plain pods run with containerd container IDs, exec and httpGet readiness probes flip Ready, a failing
 * liveness probe restarts its container, restartPolicy Never pods end Succeeded or Failed, a graceful delete
 * waits out the grace period of a container that ignores SIGTERM, and in the end nothing of ours is left in
 * containerd or in the cgroup tree.
 *
 * OPERATOR_TEST_LOG=debug shows the operator's log.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import type { Pod, PodStatus } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { CriRuntime } from '../../src/runtime/cri/client.js';
import { PodUIDLabel } from '../../src/runtime/labels.js';
import { isNotFound } from '../../src/util/errors.js';
import {
  criRuntimeSpec,
  type TestContainerd,
  podCgroupDirs,
  waitNoObjectsOfNode,
} from '../support/containerd.js';
import { freePort } from '../support/controlplane.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventually } from '../support/eventually.js';
import { eventsOf, eventsWithReasons } from '../support/events.js';
import {
  cstatus,
  isGone,
  podReady as ready,
  postVirtualNode,
  VN_PATH,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const NODE = 'vn-cri';
/** A second node on the same containerd, created while containerd is down. */
const LATE_NODE = 'vn-cri-late';
const NS = 'cri-e2e';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('kubelet-operator end to end on containerd (real apiserver, cri runtime)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let ctd: TestContainerd;
  let client: KubeClient;
  let cri: CriRuntime | undefined;
  let logRoot = '';
  let busybox = '';
  const uids = new Set<string>();

  const podPath = (name: string) => `/api/v1/namespaces/${NS}/pods/${name}`;
  const getPod = (name: string) => client.request<Pod>({ method: 'GET', path: podPath(name) });
  const createPod = async (
    name: string,
    containers: Record<string, unknown>[],
    spec: Record<string, unknown> = {},
  ): Promise<Pod> => {
    const pod = await client.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        metadata: { name, namespace: NS },
        spec: {
          nodeName: NODE,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          containers: containers.map((c) => ({
            name: 'c',
            image: busybox,
            imagePullPolicy: 'IfNotPresent',
            ...c,
          })),
          ...spec,
        },
      },
    });
    uids.add(pod.metadata.uid!);
    return pod;
  };
  const waitPod = (name: string, pred: (s: PodStatus) => boolean, what: string, timeoutMs = 60_000) =>
    waitPodStatus(client, NS, name, pred, what, timeoutMs);
  const eventsWith = (name: string, reasons: string[]): Promise<CoreEvent[]> =>
    eventsWithReasons(() => eventsOf(client, NS, name), reasons, name);
  const gone = (p: string): Promise<true | undefined> => isGone(client, p);
  /** 'gone' when the GET answers NotFound; otherwise what it found (UID, creation time) or how it failed. */
  const whatIsLeft = async (p: string): Promise<string> => {
    try {
      const o = await client.request<{ metadata?: { uid?: string; creationTimestamp?: string } }>({
        method: 'GET',
        path: p,
      });
      return `still there: uid ${o.metadata?.uid}, created ${o.metadata?.creationTimestamp}, now ${new Date().toISOString()}`;
    } catch (err) {
      return isNotFound(err) ? 'gone' : `GET failed: ${(err as Error).message}`;
    }
  };

  before(async function () {
    this.timeout(20 * 60_000); // cold binaries build, package install
    env = await startCriNodeEnv({ node: NODE, namespace: NS });
    ({ ctd, client, logRoot } = env);
    busybox = 'busybox'; // normalised by containerd to the harness's docker.io/library/busybox:latest
    expect(ctd.images.busybox).to.equal('docker.io/library/busybox:latest');
    cri = new CriRuntime({ endpoint: ctd.endpoint });
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await cri?.close().catch(() => undefined);
    await env?.stop();
  });

  it('registers a Ready Node reporting the containerd runtime', async () => {
    const node = await waitNodeReady(client, NODE, 60_000);
    expect(node.status?.nodeInfo?.containerRuntimeVersion).to.match(/^containerd:\/\/\S+/);
    // NodeSwap: the host's SwapTotal when it has swap, else no swap field (this machine has none).
    const swapKB = Number(/^SwapTotal:\s*(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0);
    if (swapKB > 0) expect(node.status?.nodeInfo?.swap).to.deep.equal({ capacity: swapKB * 1024 });
    else expect(node.status?.nodeInfo).to.not.have.property('swap');
  });

  it('runs a plain pod to Running and Ready with a containerd:// container ID', async () => {
    await createPod('plain', [{ command: ['sleep', '3600'] }]);
    const pod = await waitPod('plain', (s) => ready(s) === 'True', 'Ready');
    expect(pod.status?.phase).to.equal('Running');
    expect(pod.status?.podIP).to.equal('127.0.0.1'); // host network: the node's IP
    const c = cstatus(pod.status);
    expect(c).to.include({ ready: true, started: true, restartCount: 0 });
    expect(c?.containerID).to.match(/^containerd:\/\/[0-9a-f]{64}$/);
    expect(c?.state?.running?.startedAt).to.be.a('string');
    // containerd reports one of the image's tags (the harness tags busybox twice).
    expect(c?.image).to.match(/^docker\.io\/library\/busybox:/);
    expect(c?.imageID).to.be.a('string').and.not.equal('');
    const reasons = (await eventsWith('plain', ['Pulled', 'Created', 'Started'])).map((e) => e.reason);
    expect(reasons).to.include.members(['Pulled', 'Created', 'Started']);
  });

  it('an exec readiness probe turns Ready from False to True once the file exists', async () => {
    await createPod('exec-ready', [
      {
        command: ['sh', '-c', 'sleep 4; touch /tmp/ready; exec sleep 3600'],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
      },
    ]);
    const running = await waitPod('exec-ready', (s) => s.phase === 'Running', 'Running');
    expect(ready(running.status), 'Ready before the file exists').to.equal('False');
    expect(cstatus(running.status)?.ready).to.equal(false);
    const t0 = Date.now();
    const pod = await waitPod('exec-ready', (s) => ready(s) === 'True', 'Ready');
    expect(Date.now() - t0).to.be.greaterThan(1000);
    expect(cstatus(pod.status)).to.include({ ready: true, restartCount: 0 });
  });

  it('an httpGet readiness probe against busybox httpd goes Ready', async () => {
    const port = await freePort();
    await createPod('http-ready', [
      {
        command: [
          'sh',
          '-c',
          `mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p ${port} -h /www`,
        ],
        readinessProbe: { httpGet: { path: '/index.html', port }, periodSeconds: 1 },
      },
    ]);
    const pod = await waitPod('http-ready', (s) => ready(s) === 'True', 'Ready');
    expect(cstatus(pod.status)).to.include({ ready: true, restartCount: 0 });
    const res = await fetch(`http://127.0.0.1:${port}/index.html`);
    expect((await res.text()).trim()).to.equal('ok');
  });

  it('a liveness probe that starts failing restarts the container', async () => {
    await createPod('liveness', [
      {
        command: ['sh', '-c', 'touch /tmp/healthy; sleep 3; rm /tmp/healthy; exec sleep 3600'],
        livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
      },
    ]);
    const first = await waitPod('liveness', (s) => s.phase === 'Running', 'Running');
    const firstID = cstatus(first.status)?.containerID;
    // Wait for the converged status of the restart (new container running, the killed one as lastState);
    // a status written between the kill and the new start may not carry lastState yet.
    const pod = await waitPod(
      'liveness',
      (s) =>
        (cstatus(s)?.restartCount ?? 0) >= 1 &&
        cstatus(s)?.state?.running !== undefined &&
        cstatus(s)?.lastState?.terminated !== undefined,
      'restartCount >= 1 with the killed container as lastState',
    );
    const c = cstatus(pod.status)!;
    expect(c.containerID).to.not.equal(firstID);
    expect(c.lastState?.terminated?.containerID).to.equal(firstID);
    expect(c.lastState?.terminated?.exitCode).to.equal(137);
    const events = await eventually(
      async () => {
        const ev = await eventsOf(client, NS, 'liveness');
        return ev.some((e) => e.reason === 'Unhealthy' && e.message.startsWith('Liveness probe failed'))
          ? ev
          : undefined;
      },
      20_000,
      'Unhealthy event',
    );
    const unhealthy = events.find((e) => e.reason === 'Unhealthy')!;
    expect(unhealthy.type).to.equal('Warning');
    expect(unhealthy.source).to.include({ component: 'kubelet', host: NODE });
    expect(events.map((e) => e.reason)).to.include('Killing');
  });

  it('restartPolicy Never: exit 0 -> Succeeded, exit 1 -> Failed with reason Error', async () => {
    await createPod('never-ok', [{ command: ['sh', '-c', 'exit 0'] }], { restartPolicy: 'Never' });
    await createPod('never-fail', [{ command: ['sh', '-c', 'exit 1'] }], { restartPolicy: 'Never' });
    const ok = await waitPod('never-ok', (s) => s.phase === 'Succeeded', 'Succeeded');
    expect(cstatus(ok.status)?.state?.terminated).to.include({ exitCode: 0, reason: 'Completed' });
    const failed = await waitPod('never-fail', (s) => s.phase === 'Failed', 'Failed');
    const t = cstatus(failed.status)?.state?.terminated;
    expect(t).to.include({ exitCode: 1, reason: 'Error' });
    expect(t?.containerID).to.match(/^containerd:\/\//);
    expect(cstatus(failed.status)?.restartCount).to.equal(0);
  });

  it("procMount Default: the kubelet's masked paths are empty and its read-only ones refuse writes", async () => {
    // Both are on the kubelet's masked list (masked: /dev/null bound over them); /proc/sys is on its read-only one.
    const script =
      'echo "$(wc -c < /proc/interrupts) $(wc -c < /proc/timer_list)"; ' +
      'if echo 1 > /proc/sys/kernel/domainname 2>/dev/null; then echo writable; else echo read-only; fi';
    await createPod('procmount', [{ command: ['sh', '-c', `(${script}) > /dev/termination-log`] }], {
      restartPolicy: 'Never',
    });
    const pod = await waitPod('procmount', (s) => s.phase === 'Succeeded', 'Succeeded');
    expect(cstatus(pod.status)?.state?.terminated?.message?.trim()).to.equal('0 0\nread-only');
  });

  it('a graceful delete of a container ignoring SIGTERM takes the grace period, then the pod is gone', async () => {
    // sleep as PID 1 has no SIGTERM handler, so the kernel drops the signal: only SIGKILL ends it.
    await createPod('graceful', [{ command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 3 });
    await waitPod('graceful', (s) => ready(s) === 'True', 'Ready');
    const t0 = Date.now();
    await client.request({ method: 'DELETE', path: podPath('graceful') });
    await eventually(() => gone(podPath('graceful')), 30_000, 'graceful pod gone');
    const took = Date.now() - t0;
    expect(took, `delete took ${took} ms`).to.be.within(2800, 10_000);
    const reasons = (await eventsWith('graceful', ['Killing'])).map((e) => e.reason);
    expect(reasons).to.include('Killing');
  });

  it('a node whose runtime is down when it starts runs its pods once the runtime answers', async () => {
    await ctd.restartDaemon(async () => {
      await postVirtualNode(client, LATE_NODE, { runtime: criRuntimeSpec(ctd, logRoot) });
      await createPod('late', [{ command: ['sleep', '3600'] }], { nodeName: LATE_NODE });
      // The node registers while its kubelet finds no runtime to start on.
      await eventually(
        () => client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${LATE_NODE}` }),
        30_000,
        'the late Node registered',
      );
      await sleep(3000);
      expect((await getPod('late')).status?.phase ?? 'Pending').to.equal('Pending');
    });
    const pod = await waitPod('late', (s) => ready(s) === 'True', 'Ready once containerd is back', 90_000);
    expect(cstatus(pod.status)?.containerID).to.match(/^containerd:\/\//);
    // The first node's pods lived through the containerd restart without a new container.
    const plain = await getPod('plain');
    expect(ready(plain.status)).to.equal('True');
    expect(cstatus(plain.status)?.restartCount).to.equal(0);
  });

  it('after deleting every pod nothing of ours is left in containerd or the cgroup tree', async () => {
    const pods = await client.request<{ items: Pod[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${NS}/pods`,
    });
    await Promise.all(
      pods.items.map((p) => client.request({ method: 'DELETE', path: podPath(p.metadata.name!) })),
    );
    await eventually(
      async () => {
        const left = await client.request<{ items: Pod[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${NS}/pods`,
        });
        return left.items.length === 0 ? true : undefined;
      },
      60_000,
      'every pod object gone',
    );
    expect(uids.size).to.equal(9);
    await waitNoObjectsOfNode(cri!, NODE);
    // Nothing at all, labelled or not, and no cgroup or log directory of any of our pods.
    expect(await cri!.listPodSandbox()).to.deep.equal([]);
    expect(await cri!.listContainers()).to.deep.equal([]);
    for (const uid of uids) {
      expect(await cri!.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } })).to.deep.equal([]);
      await eventually(
        () => (podCgroupDirs(ctd.cgroupParentPrefix, uid).length === 0 ? true : undefined),
        20_000,
        `pod ${uid} cgroup removed`,
      );
    }
    await eventually(
      () => (readdirSync(logRoot).length === 0 ? true : undefined),
      20_000,
      'pod log directories removed',
    ).catch((err: Error) => {
      const left = readdirSync(logRoot, { recursive: true }).map(String).sort();
      throw new Error(`${err.message}; still there: ${left.join(', ')}`);
    });
  });

  it('deleting the VirtualNodes removes their Nodes and Leases', async () => {
    for (const node of [NODE, LATE_NODE]) {
      await client.request({ method: 'DELETE', path: `${VN_PATH}/${node}` });
      await eventually(() => gone(`${VN_PATH}/${node}`), 60_000, `VirtualNode ${node} gone`);
      expect(await whatIsLeft(`/api/v1/nodes/${node}`), `Node ${node}`).to.equal('gone');
      expect(
        await whatIsLeft(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`),
        `Lease ${node}`,
      ).to.equal('gone');
    }
  });
});

/**
 * The core scenarios on the containerd-backed VirtualNodes `cri-1` and `cri-2` (test/cluster/env.ts), through
 * kubectl and the API only: a Deployment behind a real HTTP readiness probe (busybox httpd), a container whose
 * liveness probe starts failing, a readiness probe that keeps failing behind an init container, and a graceful
 * delete; containerd is only looked into, to see that nothing of a deleted pod is left there.
 *
 * Pods there use the node's network (the VirtualNodes run `podNetwork: host`), so each httpd binds its pod IP
 * (= its node's InternalIP, from the downward API) and a hostPort keeps the scheduler from putting two replicas
 * on one node, as on real machines.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { PodUIDLabel } from '../../src/runtime/labels.js';
import { isNotFound } from '../../src/util/errors.js';
import { waitNoObjectsOfNode } from '../support/containerd.js';
import { kubectl } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { CRI_NODES, CRI_TAINT, NS, podReady, type ClusterEnv } from './env.js';
import {
  expectKubeletEvent,
  expectPodConditions,
  expectPodStatusBasics,
  kubeletMessage,
  READY_CONDITIONS,
} from './kubelet-expectations.js';

const IMAGE = 'busybox';
const tolerateCri = [{ key: CRI_TAINT.key, operator: 'Equal', value: CRI_TAINT.value, effect: 'NoSchedule' }];

/** A busybox httpd on `$POD_IP:<port>` serving /www, after `prepare` (shell) ran. */
function httpd(port: number, prepare: string): Record<string, unknown> {
  return {
    name: 'web',
    image: IMAGE,
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', `mkdir -p /www && ${prepare} && exec httpd -f -p "$POD_IP:${port}" -h /www`],
    env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
    ports: [{ containerPort: port, hostPort: port, protocol: 'TCP' }],
  };
}

/** A pod spec for the cri nodes: host network, the taint tolerated, no service account token volume. */
function criPodSpec(spec: Record<string, unknown>): Record<string, unknown> {
  return {
    hostNetwork: true,
    automountServiceAccountToken: false,
    tolerations: tolerateCri,
    nodeSelector: { 'cluster-test/pool': 'cri' },
    ...spec,
  };
}

export function criScenarios(getEnv: () => ClusterEnv): void {
  describe('on the containerd-backed VirtualNodes', () => {
    const uids = new Set<string>();
    const createPod = async (name: string, spec: Record<string, unknown>): Promise<Pod> => {
      await getEnv().apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec });
      const pod = await getEnv().pod(name);
      uids.add(pod.metadata.uid!);
      return pod;
    };
    const waitPod = (name: string, pred: (p: Pod) => boolean, what: string, timeoutMs = 60_000) =>
      eventually(
        async () => {
          const p = await getEnv().pod(name);
          return pred(p) ? p : undefined;
        },
        timeoutMs,
        `${name}: ${what}`,
        200,
      );
    const gone = async (name: string): Promise<boolean> =>
      getEnv()
        .pod(name)
        .then(
          () => false,
          (err: unknown) => isNotFound(err),
        );

    it('a Deployment behind an HTTP readiness probe on busybox httpd goes Ready, one replica per node', async () => {
      const env = getEnv();
      const t0 = Date.now();
      await env.apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'cri-web', namespace: NS },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'cri-web' } },
          template: {
            metadata: { labels: { app: 'cri-web' } },
            spec: criPodSpec({
              terminationGracePeriodSeconds: 2,
              containers: [
                {
                  ...httpd(18080, 'echo ok > /www/index.html'),
                  readinessProbe: { httpGet: { path: '/index.html', port: 18080 }, periodSeconds: 1 },
                },
              ],
            }),
          },
        },
      });
      await env.k(['rollout', 'status', 'deployment/cri-web', '--timeout=120s']);
      const ps = await env.pods('app=cri-web');
      for (const p of ps) uids.add(p.metadata.uid!);
      expect(ps).to.have.length(2);
      expect(ps.every(podReady)).to.equal(true);
      expect(ps.map((p) => p.spec?.nodeName).sort()).to.deep.equal(Object.keys(CRI_NODES).sort());

      const wide = await env.k(['get', 'pods', '-l', 'app=cri-web', '-o', 'wide', '--no-headers']);
      for (const line of wide.trim().split('\n')) {
        const cols = line.trim().split(/\s+/);
        expect(cols.slice(1, 3), line).to.deep.equal(['1/1', 'Running']);
        expect(cols[5], line).to.equal(CRI_NODES[cols[6]!]);
      }

      for (const p of ps) {
        const nodeName = p.spec!.nodeName!;
        const ip = CRI_NODES[nodeName]!;
        // The real server answers on the pod IP, which is how the probe found it Ready.
        const res = await fetch(`http://${ip}:18080/index.html`);
        expect((await res.text()).trim()).to.equal('ok');

        expect(p.status?.phase).to.equal('Running');
        expectPodConditions(p, READY_CONDITIONS);
        expectPodStatusBasics(p, { hostIP: ip, podIP: ip });
        const c = p.status?.containerStatuses?.[0];
        expect(c).to.include({ name: 'web', ready: true, started: true, restartCount: 0 });
        expect(c?.containerID).to.match(/^containerd:\/\/[0-9a-f]{64}$/);
        expect(c?.image).to.match(/^docker\.io\/library\/busybox:/);
        expect(c?.imageID).to.be.a('string').and.not.equal('');

        const evs = await env.events(p.metadata.name!, ['Pulled', 'Created', 'Started']);
        const on = { node: nodeName, container: 'web' };
        expectKubeletEvent(evs, { reason: 'Pulled', message: kubeletMessage.alreadyPresent(IMAGE), ...on });
        expectKubeletEvent(evs, { reason: 'Created', message: kubeletMessage.created('web'), ...on });
        expectKubeletEvent(evs, { reason: 'Started', message: kubeletMessage.started('web'), ...on });
        const describe = await env.k(['describe', 'pod', p.metadata.name!]);
        expect(describe).to.match(/Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned/);
        expect(describe).to.match(/Normal\s+Started\s+.*kubelet\s+Started container web/);
      }
      console.log(`      cri Deployment: 2 replicas Ready in ${Date.now() - t0} ms`);
    });

    it('kubectl logs and exec reach pods through the API server and the node API (cri and sim)', async () => {
      const env = getEnv();
      const [p] = await env.pods('app=cri-web');
      const name = p!.metadata.name!;
      // httpd -f writes nothing, and neither did the shell before it: the log is empty, exactly.
      expect(await env.k(['logs', name])).to.equal('');
      const r = await kubectl(env.cp, [
        '-n',
        NS,
        'exec',
        name,
        '--',
        'sh',
        '-c',
        'cat /www/index.html; exit 3',
      ]);
      expect(r.stdout, r.stderr).to.equal('ok\n');
      expect(r.code).to.equal(3);

      // A simulated node's API serves logs, and says plainly that it cannot exec.
      await env.apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'sim-logs', namespace: NS },
        spec: {
          nodeName: 'sim-1',
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: 'app', image: IMAGE, command: ['sh', '-c', 'echo hello; echo world >&2; sleep 3600'] },
          ],
        },
      });
      await eventually(async () =>
        (await env.pod('sim-logs')).status?.phase === 'Running' ? true : undefined,
      );
      expect(await env.k(['logs', 'sim-logs'])).to.equal('hello\nworld\n');
      const ex = await kubectl(env.cp, ['-n', NS, 'exec', 'sim-logs', '--', 'true']);
      expect(ex.code).to.not.equal(0);
      expect(ex.stderr).to.include('the simulated runtime has no streaming server (exec)');
      await env.k(['delete', 'pod', 'sim-logs', '--wait=true']);
    });

    it('nodes/<name>/proxy reaches the node API of a cri node through the API server (bridge address)', async () => {
      const env = getEnv();
      // kube-apiserver refuses this for loopback node addresses; the cri nodes' InternalIPs are on the bridge.
      const r = await kubectl(env.cp, ['get', '--raw', '/api/v1/nodes/cri-1/proxy/pods']);
      expect(r.code, r.stderr).to.equal(0);
      const list = JSON.parse(r.stdout) as { kind: string; items: { spec: { nodeName?: string } }[] };
      expect(list.kind).to.equal('PodList');
      for (const p of list.items) expect(p.spec.nodeName).to.equal('cri-1');
      const health = await kubectl(env.cp, ['get', '--raw', '/api/v1/nodes/cri-2/proxy/healthz']);
      expect(health.stdout.trim(), health.stderr).to.equal('ok');
    });

    it('a container whose liveness probe starts failing is restarted, then backs off', async () => {
      const env = getEnv();
      const t0 = Date.now();
      // /www/healthz lives in the container's own filesystem: each new container serves it for 3 s.
      await createPod(
        'cri-liveness',
        criPodSpec({
          nodeSelector: { 'kubernetes.io/hostname': 'cri-1' },
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              ...httpd(18081, 'echo ok > /www/healthz && { (sleep 3; rm /www/healthz) & }'),
              livenessProbe: {
                httpGet: { path: '/healthz', port: 18081 },
                // Not before httpd listens: a refused first probe would already restart the container.
                initialDelaySeconds: 1,
                periodSeconds: 1,
                failureThreshold: 1,
              },
            },
          ],
        }),
      );
      const first = await waitPod(
        'cri-liveness',
        (p) => podReady(p) && p.status?.containerStatuses?.[0]?.restartCount === 0,
        'Ready, not restarted yet',
      );
      const firstID = first.status?.containerStatuses?.[0]?.containerID;
      // The converged status after the restart: the new container running, the killed one as lastState.
      const restarted = await waitPod(
        'cri-liveness',
        (p) => {
          const c = p.status?.containerStatuses?.[0];
          return (
            (c?.restartCount ?? 0) >= 1 &&
            c?.containerID !== firstID &&
            !!c?.state?.running &&
            !!c.lastState?.terminated
          );
        },
        'restartCount >= 1 with the killed container as lastState',
      );
      const c = restarted.status!.containerStatuses![0]!;
      expect(c.containerID).to.not.equal(firstID);
      // httpd as PID 1 ignores SIGTERM: the kill ends with SIGKILL after the grace period.
      expect(c.lastState?.terminated).to.include({ containerID: firstID, exitCode: 137, reason: 'Error' });
      expect(c.lastState?.terminated?.startedAt).to.be.a('string');
      expect(c.lastState?.terminated?.finishedAt).to.be.a('string');

      // The second failure finds the container in crash-loop back-off (10 s after the first restart).
      const waiting = await waitPod(
        'cri-liveness',
        (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff',
        'CrashLoopBackOff',
      );
      expect(waiting.status?.containerStatuses?.[0]?.state?.waiting?.message).to.equal(
        kubeletMessage.crashLoopWaiting('10s', 'web', waiting),
      );
      expect(waiting.status?.phase).to.equal('Running');

      const evs = await eventually(
        async () => {
          const all = await env.events('cri-liveness');
          return all.some((e) => e.reason === 'BackOff') ? all : undefined;
        },
        30_000,
        'a BackOff event',
      );
      const on = { node: 'cri-1', container: 'web' };
      const unhealthy = expectKubeletEvent(evs, {
        reason: 'Unhealthy',
        type: 'Warning',
        message: kubeletMessage.unhealthy('Liveness', 'HTTP probe failed with statuscode: 404'),
        ...on,
      });
      expect(unhealthy.count).to.be.at.least(2);
      expectKubeletEvent(evs, { reason: 'Killing', message: kubeletMessage.livenessRestart('web'), ...on });
      expectKubeletEvent(evs, {
        reason: 'BackOff',
        type: 'Warning',
        message: kubeletMessage.backOff('web', waiting),
        ...on,
      });
      const describe = await env.k(['describe', 'pod', 'cri-liveness']);
      expect(describe).to.match(/Warning\s+Unhealthy\s+.*kubelet\s+Liveness probe failed: HTTP probe failed/);
      expect(describe).to.match(/Warning\s+BackOff\s+.*kubelet\s+Back-off restarting failed container web/);
      console.log(`      cri liveness: restarted, then in back-off, after ${Date.now() - t0} ms`);
    });

    it('behind an init container, a failing readiness probe keeps the pod unready, saying why', async () => {
      const env = getEnv();
      await createPod(
        'cri-unready',
        criPodSpec({
          nodeSelector: { 'kubernetes.io/hostname': 'cri-2' },
          terminationGracePeriodSeconds: 1,
          initContainers: [
            { name: 'init', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3'] },
          ],
          containers: [
            {
              ...httpd(18082, 'true'),
              readinessProbe: { httpGet: { path: '/ready', port: 18082 }, periodSeconds: 1 },
            },
          ],
        }),
      );
      const initializing = await waitPod(
        'cri-unready',
        (p) => !!p.status?.initContainerStatuses?.[0]?.state?.running,
        'init container running',
      );
      const unready = ['False', 'ContainersNotReady', 'containers with unready status: [web]'] as const;
      expectPodConditions(initializing, {
        PodReadyToStartContainers: ['True'],
        Initialized: ['False', 'ContainersNotInitialized', 'containers with incomplete status: [init]'],
        Ready: unready,
        ContainersReady: unready,
        PodScheduled: ['True'],
      });
      expect(initializing.status?.phase).to.equal('Pending');
      expect(initializing.status?.containerStatuses?.[0]?.state?.waiting?.reason).to.equal('PodInitializing');

      const running = await waitPod(
        'cri-unready',
        (p) => !!p.status?.containerStatuses?.[0]?.state?.running,
        'main container running',
      );
      const init = running.status?.initContainerStatuses?.[0];
      expect(init?.state?.terminated).to.include({ exitCode: 0, reason: 'Completed' });
      expect(init).to.include({ ready: true, started: false, restartCount: 0 });
      const evs = await eventually(
        async () => {
          const all = await env.events('cri-unready');
          return all.some((e) => e.reason === 'Unhealthy') ? all : undefined;
        },
        30_000,
        'an Unhealthy event',
      );
      expectKubeletEvent(evs, {
        reason: 'Started',
        message: kubeletMessage.started('init'),
        node: 'cri-2',
        container: 'init',
        initContainer: true,
      });
      expectKubeletEvent(evs, {
        reason: 'Unhealthy',
        type: 'Warning',
        message: kubeletMessage.unhealthy('Readiness', 'HTTP probe failed with statuscode: 404'),
        node: 'cri-2',
        container: 'web',
      });
      const now = await env.pod('cri-unready');
      expect(now.status?.phase).to.equal('Running');
      expectPodConditions(now, {
        PodReadyToStartContainers: ['True'],
        Initialized: ['True'],
        Ready: unready,
        ContainersReady: unready,
        PodScheduled: ['True'],
      });
      expect(now.status?.containerStatuses?.[0]).to.include({ ready: false, started: true, restartCount: 0 });
    });

    it('a graceful delete stops the container on SIGTERM, then the pod and its containerd objects are gone', async () => {
      const env = getEnv();
      const pod = await createPod(
        'cri-graceful',
        criPodSpec({
          nodeSelector: { 'kubernetes.io/hostname': 'cri-2' },
          // Long: the delete must end because the container stopped, not because the grace period ran out.
          terminationGracePeriodSeconds: 60,
          containers: [
            {
              name: 'app',
              image: IMAGE,
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
            },
          ],
        }),
      );
      await waitPod('cri-graceful', podReady, 'Ready');
      const uid = pod.metadata.uid!;
      const ours = { labelSelector: { [PodUIDLabel]: uid } };
      expect(await env.cri.listContainers(ours)).to.have.length(1);
      expect(await env.cri.listPodSandbox(ours)).to.have.length(1);

      const t0 = Date.now();
      await env.k(['delete', 'pod', 'cri-graceful', '--wait=false']);
      await eventually(
        async () => ((await gone('cri-graceful')) ? true : undefined),
        60_000,
        'pod gone',
        200,
      );
      const took = Date.now() - t0;
      // The trap exits within its 1 s sleep; the 60 s grace period would mean SIGTERM did not arrive.
      expect(took, `delete took ${took} ms`).to.be.below(20_000);
      const evs = await env.events('cri-graceful', ['Killing']);
      expectKubeletEvent(evs, {
        reason: 'Killing',
        message: kubeletMessage.stopping('app'),
        node: 'cri-2',
        container: 'app',
      });
      await eventually(
        async () => {
          const [cs, ss] = await Promise.all([env.cri.listContainers(ours), env.cri.listPodSandbox(ours)]);
          return cs.length === 0 && ss.length === 0 ? true : undefined;
        },
        30_000,
        "the pod's containers and sandbox removed from containerd",
      );
      console.log(`      cri graceful delete: pod gone after ${took} ms`);
    });

    it('once every pod is deleted, nothing of the cri nodes is left in containerd', async () => {
      const env = getEnv();
      await env.k(['delete', 'deployment/cri-web', 'pod/cri-liveness', 'pod/cri-unready', '--wait=false']);
      await eventually(
        async () => {
          const left = (await env.pods('')).filter((p) => uids.has(p.metadata.uid!));
          return left.length === 0 ? true : undefined;
        },
        90_000,
        'every cri pod gone',
        500,
      );
      for (const node of Object.keys(CRI_NODES)) await waitNoObjectsOfNode(env.cri, node);
    });
  });
}

/**
 * A whole cluster whose only node agent is kubelet-operator: real etcd, kube-apiserver, kube-scheduler and
 * kube-controller-manager, a real containerd, and in-process operators serving simulated and containerd-backed
 * VirtualNodes (test/cluster/env.ts). Everything goes through kubectl or the API client (no private hooks):
 * workloads are created with kubectl, the scheduler binds them, the controllers react to what our kubelet
 * reports. Resource metrics through metrics-server (metrics-scenarios.ts), Jobs (job-scenarios.ts), in-place
 * resize (resize-scenarios.ts), node failure (node-failure.ts) and the containerd-backed scenarios
 * (cri-scenarios.ts), a device plugin (deviceplugin-scenarios.ts), a CSI driver DaemonSet (csi-scenarios.ts),
 * node-pressure eviction (eviction-scenarios.ts), graceful node shutdown
 * (nodeshutdown-scenarios.ts) and image GC on a containerd of its own (imagegc-scenarios.ts) run on the same
 * cluster, after the tests here.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { kubectl } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { criScenarios } from './cri-scenarios.js';
import { csiDaemonSetScenario } from './csi-scenarios.js';
import { devicePluginScenario } from './deviceplugin-scenarios.js';
import { evictionScenarios } from './eviction-scenarios.js';
import { nodeShutdownScenario } from './nodeshutdown-scenarios.js';
import { imageGCScenario } from './imagegc-scenarios.js';
import { jobScenarios } from './job-scenarios.js';
import { hpaScenarios } from './hpa-scenarios.js';
import { metricsScenarios } from './metrics-scenarios.js';
import { nodeFailureScenario } from './node-failure.js';
import { resizeScenarios } from './resize-scenarios.js';
import { tokenScenario } from './token-scenarios.js';
import {
  expectKubeletEvent,
  expectPodConditions,
  expectPodStatusBasics,
  kubeletMessage,
  PULLED_FRESH,
  READY_CONDITIONS,
} from './kubelet-expectations.js';
import { NS, podReady as ready, SIM_NODE_IPS, SIM_NODES, startClusterEnv, type ClusterEnv } from './env.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Deployment {
  metadata: { name: string; generation?: number };
  spec: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
  };
}

/** A container that exits promptly on SIGTERM (a trap in a loop), like a well-behaved server. */
const GRACEFUL = ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'];

describe('cluster: kubelet-operator as the only node agent (scheduler + controller-manager)', function () {
  this.timeout(10 * 60_000);
  let env: ClusterEnv;
  const k = (args: string[], input?: string): Promise<string> => env.k(args, input);
  const apply = (obj: unknown): Promise<string> => env.apply(obj);
  const pods = (selector: string): Promise<Pod[]> => env.pods(selector);
  const events = (name: string, reasons?: readonly string[]) => env.events(name, reasons);
  const node = (name: string) => env.node(name);
  const deployment = (name: string): Promise<Deployment> =>
    env.get<Deployment>(`/apis/apps/v1/namespaces/${NS}/deployments/${name}`);

  before(async function () {
    this.timeout(20 * 60_000); // a cold machine builds the control plane and installs containerd
    env = await startClusterEnv();
  });

  after(async function () {
    this.timeout(2 * 60_000);
    await env?.stop();
  });

  it('scales a Deployment 1 -> 20 -> 0: every pod Ready, spread by the scheduler, deleted gracefully', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'scale', namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'scale' } },
        template: {
          metadata: { labels: { app: 'scale' } },
          spec: {
            terminationGracePeriodSeconds: 10,
            nodeSelector: { 'cluster-test/pool': 'main' },
            containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const first = await eventually(
      async () => {
        const ps = await pods('app=scale');
        return ps.length === 1 && ready(ps[0]!) ? ps[0]! : undefined;
      },
      30_000,
      'one Ready pod',
    );

    // kubectl get pods -o wide: node, IP and readiness as a kubelet's pods show them.
    const wide = await k(['get', 'pods', '-l', 'app=scale', '-o', 'wide', '--no-headers']);
    const cols = wide.trim().split(/\s+/);
    expect(cols[1], wide).to.equal('1/1');
    expect(cols[2], wide).to.equal('Running');
    expect(cols[5], wide)
      .to.equal(first.status?.podIP)
      .and.match(/^\d+\.\d+\.\d+\.\d+$/);
    expect(cols[6], wide)
      .to.equal(first.spec?.nodeName)
      .and.match(/^sim-[12]$/);

    // kubectl describe: Scheduled from the scheduler, the rest from kubelet, in the kubelet's words.
    const name = first.metadata.name!;
    const nodeName = first.spec!.nodeName!;
    const describe = await k(['describe', 'pod', name]);
    expect(describe).to.match(/Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned/);
    expect(describe).to.match(/Normal\s+Pulling\s+.*kubelet\s+Pulling image "busybox:1\.36"/);
    expect(describe).to.match(/Normal\s+Pulled\s+.*kubelet\s+Successfully pulled image "busybox:1\.36" in /);
    expect(describe).to.match(/Normal\s+Created\s+.*kubelet\s+Created container: app/);
    expect(describe).to.match(/Normal\s+Started\s+.*kubelet\s+Started container app/);
    const evs = await events(name, ['Pulling', 'Pulled', 'Created', 'Started']);
    const on = { node: nodeName, container: 'app' };
    expectKubeletEvent(evs, { reason: 'Pulling', message: kubeletMessage.pulling('busybox:1.36'), ...on });
    expectKubeletEvent(evs, { reason: 'Pulled', message: PULLED_FRESH('busybox:1.36'), ...on });
    expectKubeletEvent(evs, { reason: 'Created', message: kubeletMessage.created('app'), ...on });
    expectKubeletEvent(evs, { reason: 'Started', message: kubeletMessage.started('app'), ...on });

    // The status fields as the kubelet sets them for a running pod on a pod network.
    expectPodConditions(first, READY_CONDITIONS);
    expectPodStatusBasics(first, {
      hostIP: SIM_NODE_IPS[first.spec!.nodeName!]!,
      podIP: /^10\.88\.[12]\.\d+$/,
    });
    expect(first.status?.phase).to.equal('Running');
    const app = first.status?.containerStatuses?.[0];
    expect(app).to.include({
      name: 'app',
      ready: true,
      started: true,
      restartCount: 0,
    });
    // The image as the runtime reports it: the fully qualified reference, as containerd shows it.
    expect(app?.image).to.equal('docker.io/library/busybox:1.36');
    expect(app?.state?.running?.startedAt).to.be.a('string');

    await k(['scale', 'deployment/scale', '--replicas=20']);
    const all = await eventually(
      async () => {
        const ps = await pods('app=scale');
        return ps.length === 20 && ps.every(ready) ? ps : undefined;
      },
      90_000,
      '20 Ready pods',
      500,
    );
    const byNode = new Map<string, number>();
    for (const p of all) byNode.set(p.spec!.nodeName!, (byNode.get(p.spec!.nodeName!) ?? 0) + 1);
    expect([...byNode.keys()].sort()).to.deep.equal(['sim-1', 'sim-2']);
    expect(new Set(all.map((p) => p.status?.podIP)).size, 'distinct pod IPs').to.equal(20);
    const upMs = Date.now() - t0;

    await k(['scale', 'deployment/scale', '--replicas=0']);
    const killed = all[0]!.metadata.name!;
    await eventually(async () => (await pods('app=scale')).length === 0, 60_000, 'all pods gone', 500);
    const killing = (await events(killed, ['Killing'])).find((e) => e.reason === 'Killing');
    expect(killing?.message).to.equal(kubeletMessage.stopping('app'));
    expect(killing?.source).to.deep.equal({ component: 'kubelet', host: killing?.reportingInstance });
    expect(killing?.involvedObject.fieldPath).to.equal('spec.containers{app}');
    console.log(`      scale: 1 -> 20 Ready in ${upMs} ms, -> 0 in ${Date.now() - t0 - upMs} ms`);
  });

  it('rolls a Deployment out to a new image, gated by readiness (maxUnavailable respected)', async () => {
    const t0 = Date.now();
    const template = (image: string) => ({
      metadata: {
        labels: { app: 'roll' },
        // The simulated httpd answers its readiness probe only 1.5 s after it starts.
        annotations: {
          'sim.kubelet-operator.dev/behaviour.web': '{"ports": {"8080": {"readyAfterMs": 1500}}}',
        },
      },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'web',
            image,
            command: ['httpd', '-f', '-p', '8080'],
            readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    });
    const deploy = (image: string) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'roll', namespace: NS },
      spec: {
        replicas: 4,
        minReadySeconds: 0,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
        selector: { matchLabels: { app: 'roll' } },
        template: template(image),
      },
    });
    await apply(deploy('busybox:1.36'));
    await k(['rollout', 'status', 'deployment/roll', '--timeout=60s']);

    await apply(deploy('busybox:1.37'));
    let minReady = Infinity;
    let sawUnready = false;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        const ps = (await pods('app=roll')).filter((p) => !p.metadata.deletionTimestamp);
        const r = ps.filter(ready).length;
        minReady = Math.min(minReady, r);
        if (ps.some((p) => !ready(p))) sawUnready = true;
        await sleep(150);
      }
    })();
    await k(['rollout', 'status', 'deployment/roll', '--timeout=90s']);
    done = true;
    await sampler;
    const d = await deployment('roll');
    expect(d.status).to.include({ replicas: 4, updatedReplicas: 4, readyReplicas: 4, availableReplicas: 4 });
    expect(sawUnready, 'new pods were observed not yet Ready').to.equal(true);
    // maxUnavailable 1 of 4: never fewer than 3 Ready pods while the rollout waits on readiness.
    expect(minReady).to.be.at.least(3);
    const images = (await pods('app=roll')).filter((p) => !p.metadata.deletionTimestamp);
    expect(images.map((p) => p.spec?.containers[0]?.image)).to.deep.equal(Array(4).fill('busybox:1.37'));
    await k(['delete', 'deployment/roll', '--wait=false']);
    console.log(`      rollout: ${Date.now() - t0} ms, min Ready during rollout ${minReady}/4`);
  });

  it('a DaemonSet runs one pod on every VirtualNode', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: {
            terminationGracePeriodSeconds: 5,
            containers: [{ name: 'agent', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const ps = await eventually(
      async () => {
        const all = await pods('app=agent');
        return all.length === SIM_NODES.length && all.every(ready) ? all : undefined;
      },
      60_000,
      'a Ready daemon pod per node',
      500,
    );
    expect(ps.map((p) => p.spec?.nodeName).sort()).to.deep.equal(SIM_NODES);
    await k(['delete', 'daemonset/agent', '--wait=true', '--timeout=60s']);
    await eventually(async () => (await pods('app=agent')).length === 0, 60_000, 'daemon pods gone', 500);
    console.log(`      DaemonSet: ${Date.now() - t0} ms`);
  });

  it('a taint on a VirtualNode keeps untolerated pods off its Node', async () => {
    const t0 = Date.now();
    const taint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };
    const patchTaints = (taints: unknown[]) =>
      kubectl(env.cp, [
        'patch',
        'virtualnode',
        'sim-2',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { taints } }),
      ]);
    expect((await patchTaints([taint])).code).to.equal(0);
    await eventually(
      async () => (await node('sim-2')).spec?.taints?.some((t) => t.key === 'dedicated'),
      30_000,
      'the taint on Node sim-2',
    );
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'untolerated', namespace: NS },
      spec: {
        replicas: 6,
        selector: { matchLabels: { app: 'untolerated' } },
        template: {
          metadata: { labels: { app: 'untolerated' } },
          spec: {
            terminationGracePeriodSeconds: 5,
            nodeSelector: { 'cluster-test/pool': 'main' },
            containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const ps = await eventually(
      async () => {
        const all = await pods('app=untolerated');
        return all.length === 6 && all.every(ready) ? all : undefined;
      },
      60_000,
      '6 Ready pods',
      500,
    );
    expect(new Set(ps.map((p) => p.spec?.nodeName))).to.deep.equal(new Set(['sim-1']));
    await k(['delete', 'deployment/untolerated', '--wait=false']);
    expect((await patchTaints([])).code).to.equal(0);
    await eventually(async () => !(await node('sim-2')).spec?.taints?.length, 30_000, 'taint removed');
    console.log(`      taint: ${Date.now() - t0} ms`);
  });

  it('restarts a container whose liveness probe starts failing, counting restarts and saying why', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'liveness',
        namespace: NS,
        // The simulated server answers 500 from 2 s after each start.
        annotations: {
          'sim.kubelet-operator.dev/behaviour.web': '{"ports": {"8080": {"failAfterMs": 2000}}}',
        },
      },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'web',
            image: 'busybox:1.36',
            command: ['httpd', '-f', '-p', '8080'],
            livenessProbe: {
              httpGet: { path: '/healthz', port: 8080 },
              periodSeconds: 1,
              failureThreshold: 2,
            },
          },
        ],
      },
    });
    const pod = await eventually(
      async () => {
        const p = await env.pod('liveness');
        return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
      },
      60_000,
      'a liveness restart',
      500,
    );
    expect(pod.status?.phase).to.equal('Running');
    const evs = await events('liveness', ['Unhealthy', 'Killing']);
    const on = { node: pod.spec!.nodeName!, container: 'web' };
    expectKubeletEvent(evs, {
      reason: 'Unhealthy',
      type: 'Warning',
      message: kubeletMessage.unhealthy('Liveness', 'HTTP probe failed with statuscode: 500'),
      ...on,
    });
    expectKubeletEvent(evs, { reason: 'Killing', message: kubeletMessage.livenessRestart('web'), ...on });
    const describe = await k(['describe', 'pod', 'liveness']);
    expect(describe).to.match(/Warning\s+Unhealthy\s+.*kubelet\s+Liveness probe failed: HTTP probe failed/);
    expect(describe).to.match(/Restart Count:\s+[1-9]/);
    await k(['delete', 'pod', 'liveness', '--wait=false']);
    console.log(`      liveness restart after ${Date.now() - t0} ms`);
  });

  metricsScenarios(() => env);
  hpaScenarios(() => env);
  jobScenarios(() => env);
  resizeScenarios(() => env);
  nodeFailureScenario(() => env);
  tokenScenario(() => env);
  criScenarios(() => env);
  devicePluginScenario(() => env);
  csiDaemonSetScenario(() => env);
  evictionScenarios(() => env);
  nodeShutdownScenario(() => env);
  imageGCScenario(() => env);
});

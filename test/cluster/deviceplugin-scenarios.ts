/**
 * A device plugin on a containerd-backed VirtualNode in the whole cluster (issue #59): our small device
 * plugin (test/support/deviceplugin.ts) registers two `example.com/gpu` devices in `cri-1`'s
 * `device-plugins/`, as a plugin's DaemonSet would through its hostPath. The Node shows the resource, the
 * scheduler places a pod asking for one there and the pod sees its device's env; with both devices held, a
 * pod asking for one more stays Pending (Unschedulable, Insufficient) until the holder goes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { kubeletRootPaths } from '../../src/kubelet/rootdir.js';
import { busybox, sh } from '../support/podspec.js';
import { eventually } from '../support/eventually.js';
import { CRI_TAINT, NS, type ClusterEnv } from './env.js';

const NODE = 'cri-1';
const R = 'example.com/gpu';
const PLUGIN = fileURLToPath(new URL('../support/deviceplugin.ts', import.meta.url));

export function devicePluginScenario(getEnv: () => ClusterEnv): void {
  describe('a device plugin on a containerd-backed VirtualNode', () => {
    const env = (): ClusterEnv => getEnv();
    let plugin: ChildProcess | undefined;
    let out = '';

    const gpuPod = (name: string, gpus: number, script: string, restartPolicy = 'Never') =>
      env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { 'cluster-test/devices': 'yes' } },
        spec: {
          automountServiceAccountToken: false,
          restartPolicy,
          terminationGracePeriodSeconds: 1,
          tolerations: [
            { key: CRI_TAINT.key, operator: 'Equal', value: CRI_TAINT.value, effect: 'NoSchedule' },
          ],
          nodeSelector: { 'cluster-test/pool': 'cri' },
          containers: [busybox('c', sh(script), { resources: { limits: { [R]: String(gpus) } } })],
        },
      });
    const waitPod = (name: string, pred: (p: Pod) => boolean, what: string): Promise<Pod> =>
      eventually(
        async () => {
          const p = await env().pod(name);
          return pred(p) ? p : undefined;
        },
        90_000,
        `${name}: ${what}`,
      );

    before(async function () {
      this.timeout(2 * 60_000);
      const dir = kubeletRootPaths(nodeRootDir(env().stateDir, NODE)).devicePlugins;
      plugin = spawn(process.execPath, ['--import', 'tsx', PLUGIN, dir, R, '2'], {
        cwd: path.resolve(path.dirname(PLUGIN), '../..'),
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      plugin.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      await eventually(async () => out.includes('registered') || undefined, 60_000, 'the plugin registered');
    });

    after(async function () {
      this.timeout(2 * 60_000);
      plugin?.kill('SIGTERM');
      await env()
        .k(['delete', 'pod', '-l', 'cluster-test/devices=yes', '--ignore-not-found', '--wait=false'])
        .catch(() => undefined);
    });

    it('the Node shows the devices, a pod gets one, a pod beyond the count stays Pending', async () => {
      const node = await eventually(
        async () => {
          const n = await env().node(NODE);
          return n.status?.capacity?.[R] === '2' && n.status?.allocatable?.[R] === '2' ? n : undefined;
        },
        60_000,
        `${NODE} advertises ${R}`,
      );
      expect(node.status?.capacity?.[R]).to.equal('2');
      // The other cri node has no plugin: nothing advertised there.
      expect((await env().node('cri-2')).status?.capacity?.[R]).to.equal(undefined);

      // Scheduled by the resource alone (both cri nodes match the selector), the device's env inside.
      await gpuPod('gpu-sees', 1, 'echo -n "$EXAMPLE_DEVICE_IDS" > /dev/termination-log');
      const seen = await waitPod('gpu-sees', (p) => p.status?.phase === 'Succeeded', 'Succeeded');
      expect(seen.spec.nodeName).to.equal(NODE);
      expect(seen.status?.containerStatuses?.[0]?.state?.terminated?.message).to.equal('gpu-1');

      // Both devices held: one more stays Pending, as the scheduler says; it runs once the holder goes.
      await gpuPod('gpu-holder', 2, 'exec sleep 3600', 'Always');
      await waitPod('gpu-holder', (p) => p.status?.phase === 'Running', 'Running');
      await gpuPod('gpu-waits', 1, 'echo -n "$EXAMPLE_DEVICE_IDS" > /dev/termination-log');
      const waiting = await waitPod(
        'gpu-waits',
        (p) =>
          p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable') ??
          false,
        'Unschedulable',
      );
      expect(waiting.status?.phase).to.equal('Pending');
      expect(waiting.spec.nodeName).to.equal(undefined);
      const cond = waiting.status!.conditions!.find((c) => c.type === 'PodScheduled')!;
      expect(cond.message).to.contain(`Insufficient ${R}`);

      await env().k(['delete', 'pod', 'gpu-holder', '--wait=false']);
      const ran = await waitPod(
        'gpu-waits',
        (p) => p.status?.phase === 'Succeeded',
        'Succeeded after the holder',
      );
      expect(ran.spec.nodeName).to.equal(NODE);
      expect(ran.status?.containerStatuses?.[0]?.state?.terminated?.message).to.match(/^gpu-[01]$/);
    });
  });
}

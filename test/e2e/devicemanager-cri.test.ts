/**
 * The device manager on a real containerd through a real v1.37 kube-apiserver (issue #59 item 5): our small
 * device plugin (test/support/deviceplugin.ts), a separate process speaking the device plugin API v1beta1 on
 * a socket in the cri node's `device-plugins/`, registers two example.com/gpu devices.
 * - The Node shows capacity and allocatable 2.
 * - A pod asking for one gets the device's env and its device node (the plugin prefers the highest id:
 *   gpu-1), after PreStartContainer; what it saw comes back as its termination message.
 * - A pod holding one and a pod asking for two: the second is refused at admission as the kubelet refuses
 *   it (UnexpectedAdmissionError, its message).
 * - The held device turning Unhealthy in the plugin shows in the running pod's allocatedResourcesStatus.
 * - The operator restarted: the running pod keeps its device (checkpoint), the plugin registers again.
 *
 * Root on Linux is required (containerd).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Node } from '../../src/api/node.js';
import { kubeletRootPaths } from '../../src/kubelet/rootdir.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventually } from '../support/eventually.js';

const NODE = 'vn-devices-cri';
const NS = 'devices-e2e';
const R = 'example.com/gpu';
const PLUGIN = fileURLToPath(new URL('../support/deviceplugin.ts', import.meta.url));

const until = (check: () => Promise<unknown>, timeoutMs: number): Promise<boolean> =>
  eventually(async () => {
    await check();
    return true;
  }, timeoutMs);

describe('device manager on containerd with a real device plugin (real apiserver, cri runtime)', function () {
  this.timeout(10 * 60_000);
  let env: CriNodeEnv | undefined;
  let plugin: ChildProcess | undefined;
  let out = '';

  const node = (): Promise<Node> =>
    env!.client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
  const gpuPod = (name: string, gpus: number, script: string) =>
    env!.createPod(name, {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      containers: [
        {
          name: 'c',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', script],
          resources: { limits: { [R]: String(gpus) }, requests: { [R]: String(gpus) } },
        },
      ],
    });

  before(async function () {
    this.timeout(20 * 60_000);
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      spec: { heartbeat: { statusUpdateFrequencySeconds: 2 } },
    });
    const dir = kubeletRootPaths(nodeRootDir(env.stateDir, NODE)).devicePlugins;
    plugin = spawn(process.execPath, ['--import', 'tsx', PLUGIN, dir, R, '2'], {
      cwd: path.resolve(path.dirname(PLUGIN), '../..'),
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    plugin.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    await until(async () => expect(out).to.contain('registered'), 60_000);
  });

  after(async function () {
    this.timeout(5 * 60_000);
    plugin?.kill('SIGTERM');
    await env?.stop();
  });

  it('advertises the devices, gives a pod its device, refuses beyond the count, reports health, survives a restart', async () => {
    await until(async () => {
      const n = await node();
      expect(n.status?.capacity?.[R]).to.equal('2');
      expect(n.status?.allocatable?.[R]).to.equal('2');
    }, 60_000);

    // The env and the device node reach the container; the plugin preferred gpu-1.
    await gpuPod(
      'sees',
      1,
      'echo -n "$EXAMPLE_DEVICE_IDS:$(test -c /dev/gpu-1 && echo chardev)" > /dev/termination-log',
    );
    const seen = await env!.waitPod('sees', (s) => s.phase === 'Succeeded', 'Succeeded');
    expect(seen.status?.containerStatuses?.[0]?.state?.terminated?.message).to.equal('gpu-1:chardev');
    expect(out).to.contain('prestart gpu-1');

    // One holder; then a pod asking for two is refused (only one is free).
    await gpuPod('holder', 1, 'sleep 3600');
    await env!.waitPod('holder', (s) => s.phase === 'Running', 'Running');
    await gpuPod('too-many', 2, 'true');
    const refused = await env!.waitPod('too-many', (s) => s.phase === 'Failed', 'Failed');
    expect(refused.status).to.deep.include({
      reason: 'UnexpectedAdmissionError',
      message: `Pod was rejected: Allocate failed due to requested number of devices unavailable for ${R}. Requested: 2, Available: 1, which is unexpected`,
    });

    // The holder's device (gpu-1, preferred again) turns Unhealthy in the plugin.
    await until(async () => {
      const s = (await env!.getPod('holder')).status?.containerStatuses?.[0]?.allocatedResourcesStatus;
      expect(s).to.deep.equal([{ name: R, resources: [{ resourceID: 'gpu-1', health: 'Healthy' }] }]);
    }, 30_000);
    plugin!.stdin!.write('health gpu-1 Unhealthy\n');
    await until(async () => {
      const s = (await env!.getPod('holder')).status?.containerStatuses?.[0]?.allocatedResourcesStatus;
      expect(s).to.deep.equal([{ name: R, resources: [{ resourceID: 'gpu-1', health: 'Unhealthy' }] }]);
    }, 30_000);
    await until(async () => expect((await node()).status?.allocatable?.[R]).to.equal('1'), 30_000);

    // A restart of the operator: the plugin registers again, the holder keeps running with its device.
    const before = out.split('registered').length;
    await env!.restartOperator();
    await until(async () => expect(out.split('registered').length).to.be.greaterThan(before), 60_000);
    await until(async () => {
      const p = await env!.getPod('holder');
      expect(p.status?.phase).to.equal('Running');
      expect(p.status?.containerStatuses?.[0]?.restartCount).to.equal(0);
      expect(p.status?.containerStatuses?.[0]?.allocatedResourcesStatus?.[0]?.resources).to.deep.equal([
        { resourceID: 'gpu-1', health: 'Unhealthy' },
      ]);
    }, 60_000);
  });
});

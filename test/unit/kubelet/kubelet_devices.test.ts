// The device manager inside a Kubelet on the simulated runtime (fake clock): a simulated plugin's devices
// admit a pod, reach its container's environment, refuse a pod beyond the count, and a health change reaches
// the pod's allocatedResourcesStatus through a sync of the pod (kubelet HandlePodSyncs).
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { DeviceManager } from '../../../src/kubelet/cm/devicemanager/shell/manager.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { silentLogger } from '../../../src/util/logger.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

const R = 'example.com/gpu';
const gpuPod = (uid: string, n: number): Pod =>
  mkPod(uid, { containers: [{ name: 'app', image: 'img:1', resources: { limits: { [R]: String(n) } } }] });

describe('Kubelet with the device manager', () => {
  it('admits by devices, gives the env, refuses beyond the count, reports a health change', async () => {
    const { clock, runtime, api, deps, eventMessages } = setup();
    const envs: string[] = [];
    const create = runtime.createContainer.bind(runtime);
    runtime.createContainer = (id, c, sb) => {
      envs.push(...(c.envs ?? []).map((e) => `${e.key}=${e.value}`));
      return create(id, c, sb);
    };
    const ref: { k?: Kubelet } = {};
    const devices = new DeviceManager({
      clock,
      logger: silentLogger,
      activePods: () => ref.k?.activePods() ?? [],
      onPodsNeedSync: (uids) => ref.k?.resourceHealthChanged(uids),
    });
    devices.setSimDevices([{ resource: R, count: 2, unhealthy: 0 }]);
    const k = (ref.k = new Kubelet({ ...deps(), devices }));
    await start(k, clock);
    const a = gpuPod('a', 2);
    api.pods.set('p-a', a);
    k.handlePodAdd(a);
    await advance(clock, 3_000);
    const running = (await runtime.listContainers()).filter((c) => c.state === 'running');
    expect(running).to.have.length(1);
    expect(envs).to.include('EXAMPLE_COM_GPU_DEVICES=gpu-0,gpu-1');

    const b = gpuPod('b', 1);
    api.pods.set('p-b', b);
    k.handlePodAdd(b);
    await advance(clock, 2_000);
    expect(eventMessages).to.include(
      `Warning UnexpectedAdmissionError: Allocate failed due to requested number of devices unavailable for ${R}. Requested: 1, Available: 0, which is unexpected`,
    );

    const healthOf = (): unknown =>
      k.statusManager.peekPodStatus('a' as never)?.containerStatuses?.[0]?.allocatedResourcesStatus;
    expect(healthOf()).to.deep.equal([
      {
        name: R,
        resources: [
          { resourceID: 'gpu-0', health: 'Healthy' },
          { resourceID: 'gpu-1', health: 'Healthy' },
        ],
      },
    ]);
    devices.setSimDevices([{ resource: R, count: 2, unhealthy: 1 }]);
    await advance(clock, 500);
    expect(healthOf()).to.deep.equal([
      {
        name: R,
        resources: [
          { resourceID: 'gpu-0', health: 'Healthy' },
          { resourceID: 'gpu-1', health: 'Unhealthy' },
        ],
      },
    ]);
    await k.stop(0);
    await devices.stop();
  });
});

import { expect } from 'chai';
import {
  computeNodeStatus,
  daemonEndpoints,
  isExtendedResourceName,
  machineInfo,
  nodeAddresses,
  nodeStatusChanged,
  pressureConditions,
  readyCondition,
} from '../../../src/node/setters.js';

const t0 = '2026-01-01T00:00:00Z';
const t1 = '2026-01-01T00:00:10Z';

const setters = (errors: string[]) => [
  nodeAddresses('127.0.0.2', 'vn-1'),
  machineInfo({ cpu: '4', memory: '8Gi', pods: '110' }, { cpu: '4', memory: '8Gi', pods: '110' }),
  daemonEndpoints(10250),
  pressureConditions(),
  readyCondition(errors),
];

describe('node status setters', () => {
  it('reports the eviction manager pressure conditions in the kubelet words, moving lastTransitionTime on a flip', () => {
    const calm = computeNodeStatus(undefined, [pressureConditions([])], t0);
    const hot = computeNodeStatus(calm, [pressureConditions(['MemoryPressure', 'PIDPressure'])], t1);
    expect(
      hot.conditions!.map(({ type, status, reason, message, lastTransitionTime }) => ({
        type,
        status,
        reason,
        message,
        lastTransitionTime,
      })),
    ).to.deep.equal([
      {
        type: 'MemoryPressure',
        status: 'True',
        reason: 'KubeletHasInsufficientMemory',
        message: 'kubelet has insufficient memory available',
        lastTransitionTime: t1,
      },
      {
        type: 'DiskPressure',
        status: 'False',
        reason: 'KubeletHasNoDiskPressure',
        message: 'kubelet has no disk pressure',
        lastTransitionTime: t0,
      },
      {
        type: 'PIDPressure',
        status: 'True',
        reason: 'KubeletHasInsufficientPID',
        message: 'kubelet has insufficient PID available',
        lastTransitionTime: t1,
      },
    ]);
    const disk = computeNodeStatus(hot, [pressureConditions(['DiskPressure'])], t1);
    expect(disk.conditions!.find((c) => c.type === 'DiskPressure')).to.deep.include({
      status: 'True',
      reason: 'KubeletHasDiskPressure',
      message: 'kubelet has disk pressure',
    });
    expect(disk.conditions!.find((c) => c.type === 'MemoryPressure')).to.deep.include({
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
    });
  });

  it('keeps extended resources others advertised in capacity, and gives allocatable every capacity resource', () => {
    const set = machineInfo(
      { cpu: '4', memory: '8Gi', pods: '110' },
      { cpu: '3500m', memory: '8Gi', pods: '110' },
    );
    const advertised = set(
      {
        capacity: { cpu: '2', 'example.com/dongle': '4', 'hugepages.kubernetes.io/x': '1' },
        allocatable: { 'example.com/dongle': '4', 'example.com/gone': '1' },
      },
      t0,
    );
    expect(advertised.capacity).to.deep.equal({
      cpu: '4',
      memory: '8Gi',
      pods: '110',
      'example.com/dongle': '4',
    });
    expect(advertised.allocatable).to.deep.equal({
      cpu: '3500m',
      memory: '8Gi',
      pods: '110',
      'example.com/dongle': '4',
    });
    expect(isExtendedResourceName('scheduling.k8s.io/foo')).to.equal(true);
    expect(isExtendedResourceName('cpu')).to.equal(false);
    expect(isExtendedResourceName('kubernetes.io/batch-cpu')).to.equal(false);
    expect(isExtendedResourceName('requests.example.com/x')).to.equal(false);
  });

  it('builds a kubelet-like status with Ready last', () => {
    const s = computeNodeStatus(undefined, setters([]), t0);
    expect(s.conditions!.map((c) => c.type)).to.deep.equal([
      'MemoryPressure',
      'DiskPressure',
      'PIDPressure',
      'Ready',
    ]);
    expect(s.conditions![3]).to.include({ status: 'True', reason: 'KubeletReady', lastTransitionTime: t0 });
    expect(s.addresses![0]).to.deep.equal({ type: 'InternalIP', address: '127.0.0.2' });
    expect(s.daemonEndpoints).to.deep.equal({ kubeletEndpoint: { Port: 10250 } });
  });

  it('keeps lastTransitionTime until the status flips; heartbeats always move', () => {
    const a = computeNodeStatus(undefined, setters([]), t0);
    const b = computeNodeStatus(a, setters([]), t1);
    const readyB = b.conditions!.find((c) => c.type === 'Ready')!;
    expect(readyB).to.include({ lastTransitionTime: t0, lastHeartbeatTime: t1 });
    const c = computeNodeStatus(b, setters(['container runtime is down']), t1);
    const readyC = c.conditions!.find((x) => x.type === 'Ready')!;
    expect(readyC).to.include({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
      lastTransitionTime: t1,
    });
  });

  it('reports on real change or after the report frequency, not for heartbeats alone', () => {
    const a = computeNodeStatus(undefined, setters([]), t0);
    const b = computeNodeStatus(a, setters([]), t1);
    expect(nodeStatusChanged(a, b, 0, 10_000)).to.equal(false);
    expect(nodeStatusChanged(a, b, 0, 5 * 60_000)).to.equal(true);
    expect(nodeStatusChanged(undefined, b, undefined, 0)).to.equal(true);
    const c = computeNodeStatus(b, setters(['PLEG is not healthy']), t1);
    expect(nodeStatusChanged(b, c, 0, 10_000)).to.equal(true);
  });
});

import { expect } from 'chai';
import type { Pod, PodPhase } from '../../../../src/api/core.js';
import {
  activePods,
  allocatableResources,
  getPodResources,
  isPodInactive,
  listPodResources,
  listPodResourcesV1alpha1,
  podResources,
  type KubeletPodsView,
} from '../../../../src/kubelet/apis/podresources/answers.js';
import type { WorkerState } from '../../../../src/kubelet/podworkers.js';
import { podResourcesCounted } from '../../../../src/kubelet/apis/shell/server.js';
import { Metrics } from '../../../../src/metrics.js';

function pod(name: string, over: { phase?: PodPhase; init?: Pod['spec']['initContainers'] } = {}): Pod {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: {
      ...(over.init ? { initContainers: over.init } : {}),
      containers: [
        { name: 'app', image: 'busybox' },
        { name: 'side', image: 'busybox' },
      ],
    },
    ...(over.phase ? { status: { phase: over.phase } } : {}),
  } as Pod;
}

interface Fake {
  pods: Pod[];
  workers?: Record<string, WorkerState>;
  phases?: Record<string, PodPhase>;
}

function view(f: Fake): KubeletPodsView {
  return {
    pods: () => f.pods,
    podByName: (ns, name) => f.pods.find((p) => p.metadata.namespace === ns && p.metadata.name === name),
    workerState: (uid) => f.workers?.[uid],
    statusPhase: (uid) => f.phases?.[uid],
  };
}

describe('kubelet/apis/podresources answers', () => {
  describe('isPodInactive (the kubelet isPodInactive)', () => {
    const cases: {
      name: string;
      apiPhase?: PodPhase;
      worker?: WorkerState;
      statusPhase?: PodPhase;
      inactive: boolean;
    }[] = [
      { name: 'no worker yet, no phase', inactive: false },
      { name: 'syncing, Running', apiPhase: 'Running', worker: 'syncing', inactive: false },
      { name: 'terminated worker', apiPhase: 'Running', worker: 'terminated', inactive: true },
      { name: 'API phase Succeeded', apiPhase: 'Succeeded', worker: 'syncing', inactive: true },
      {
        name: 'status manager Failed',
        apiPhase: 'Running',
        worker: 'syncing',
        statusPhase: 'Failed',
        inactive: true,
      },
      {
        name: 'terminal but still terminating',
        statusPhase: 'Failed',
        worker: 'terminating',
        inactive: false,
      },
      { name: 'terminating, not terminal', apiPhase: 'Running', worker: 'terminating', inactive: false },
    ];
    for (const c of cases)
      it(c.name, () => {
        const p = pod('a', c.apiPhase ? { phase: c.apiPhase } : {});
        const v = view({
          pods: [p],
          ...(c.worker ? { workers: { 'uid-a': c.worker } } : {}),
          ...(c.statusPhase ? { phases: { 'uid-a': c.statusPhase } } : {}),
        });
        expect(isPodInactive(p, v)).to.equal(c.inactive);
      });
  });

  it('podResources lists sidecars first, plain init containers never, and no devices, CPUs or memory', () => {
    const p = pod('a', {
      init: [
        { name: 'setup', image: 'busybox' },
        { name: 'proxy', image: 'busybox', restartPolicy: 'Always' },
      ],
    });
    const r = podResources(p);
    expect(r.name).to.equal('a');
    expect(r.namespace).to.equal('ns');
    expect(r.containers.map((c) => c.name)).to.deep.equal(['proxy', 'app', 'side']);
    for (const c of r.containers) {
      expect(c.devices).to.deep.equal([]);
      expect(c.cpu_ids).to.deep.equal([]);
      expect(c.memory).to.deep.equal([]);
      expect(c.dynamic_resources).to.deep.equal([]);
    }
    expect(r.cpu_ids).to.deep.equal([]);
    expect(r.memory).to.deep.equal([]);
  });

  it('List answers the active pods only (KubeletPodResourcesListUseActivePods)', () => {
    const v = view({
      pods: [pod('run', { phase: 'Running' }), pod('done', { phase: 'Succeeded' }), pod('gone'), pod('new')],
      workers: { 'uid-run': 'syncing', 'uid-gone': 'terminated' },
    });
    expect(activePods(v).map((p) => p.metadata.name)).to.deep.equal(['run', 'new']);
    expect(listPodResources(v).pod_resources.map((p) => p.name)).to.deep.equal(['run', 'new']);
  });

  describe('Get', () => {
    const v = view({
      pods: [pod('run', { phase: 'Running' }), pod('done', { phase: 'Failed' })],
      workers: { 'uid-run': 'syncing', 'uid-done': 'terminated' },
    });
    const cases: {
      name: string;
      req: { pod_name?: string; pod_namespace?: string };
      found?: string;
      error?: string;
    }[] = [
      { name: 'an active pod', req: { pod_name: 'run', pod_namespace: 'ns' }, found: 'run' },
      {
        name: 'an unknown pod',
        req: { pod_name: 'nope', pod_namespace: 'ns' },
        error: 'pod nope in namespace ns not found',
      },
      {
        name: 'a pod of another namespace',
        req: { pod_name: 'run', pod_namespace: 'other' },
        error: 'pod run in namespace other not found',
      },
      {
        name: 'an inactive pod',
        req: { pod_name: 'done', pod_namespace: 'ns' },
        error: 'pod done in namespace ns not found',
      },
      { name: 'an empty request', req: {}, error: 'pod  in namespace  not found' },
    ];
    for (const c of cases)
      it(c.name, () => {
        const a = getPodResources(v, c.req);
        if (c.found) {
          expect(a).to.have.property('ok');
          if ('ok' in a) expect(a.ok.pod_resources.name).to.equal(c.found);
        } else {
          expect(a).to.deep.equal({ error: { code: 'Unknown', message: c.error } });
        }
      });
  });

  it('GetAllocatableResources has nothing to hand out (none policies, no device plugins)', () => {
    expect(allocatableResources()).to.deep.equal({ devices: [], cpu_ids: [], memory: [] });
  });

  it('v1alpha1 List answers every pod of the pod manager, regular containers only', () => {
    const v = view({
      pods: [
        pod('run'),
        pod('done', { phase: 'Succeeded', init: [{ name: 'p', image: 'x', restartPolicy: 'Always' }] }),
      ],
    });
    expect(listPodResourcesV1alpha1(v)).to.deep.equal({
      pod_resources: [
        {
          name: 'run',
          namespace: 'ns',
          containers: [
            { name: 'app', devices: [] },
            { name: 'side', devices: [] },
          ],
        },
        {
          name: 'done',
          namespace: 'ns',
          containers: [
            { name: 'app', devices: [] },
            { name: 'side', devices: [] },
          ],
        },
      ],
    });
  });
});

describe('pod-resources metrics (kubelet_pod_resources_endpoint_*)', () => {
  it('each endpoint counts requests_total and its own requests, Get of an unknown pod its errors, v1alpha1 List only the total', async () => {
    const metrics = new Metrics();
    const series = metrics.forNode('n1');
    const counted = podResourcesCounted((c, version) => series.podResourcesEndpoint(c, version).inc());
    const v = view({ pods: [pod('a')] });
    counted('v1', 'list', () => ({ ok: listPodResources(v) }))({});
    counted('v1', 'get', (req) => getPodResources(v, req as { pod_name: string; pod_namespace: string }))({
      pod_name: 'a',
      pod_namespace: 'ns',
    });
    const missing = counted('v1', 'get', (req) => getPodResources(v, req as { pod_name: string }))({
      pod_name: 'gone',
    });
    expect(missing).to.have.property('error');
    counted('v1', 'get_allocatable', () => ({ ok: allocatableResources() }))({});
    counted('v1alpha1', undefined, () => ({ ok: listPodResourcesV1alpha1(v) }))({});
    expect(() =>
      counted('v1', 'list', () => {
        throw new Error('boom');
      })({}),
    ).to.throw('boom');
    const text = await metrics.registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('kubelet_pod_resources_endpoint_'));
    expect(lines).to.deep.equal([
      'kubelet_pod_resources_endpoint_requests_total{node="n1",server_api_version="v1"} 5',
      'kubelet_pod_resources_endpoint_requests_total{node="n1",server_api_version="v1alpha1"} 1',
      'kubelet_pod_resources_endpoint_requests_list{node="n1",server_api_version="v1"} 2',
      'kubelet_pod_resources_endpoint_requests_get_allocatable{node="n1",server_api_version="v1"} 1',
      'kubelet_pod_resources_endpoint_requests_get{node="n1",server_api_version="v1"} 2',
      'kubelet_pod_resources_endpoint_errors_list{node="n1",server_api_version="v1"} 1',
      'kubelet_pod_resources_endpoint_errors_get{node="n1",server_api_version="v1"} 1',
    ]);
  });

  it('without metrics the answer is the endpoint itself', () => {
    const answer = () => ({ ok: 1 });
    expect(podResourcesCounted(undefined)('v1', 'list', answer)).to.equal(answer);
  });
});

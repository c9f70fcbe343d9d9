import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../../src/api/core.js';
import {
  effectivePodStatus,
  getPod,
  initialWatchEvents,
  listPods,
  PodWatchBroadcaster,
  statusStoredEvent,
  type KubeletPodsAPIView,
  type PodWatchEvent,
} from '../../../../src/kubelet/apis/pods/answers.js';
import { decodePod, encodePod, timeMessage } from '../../../../src/kubelet/apis/pods/shell/podproto.js';
import { countPodsApiRequest, podsApiCounted } from '../../../../src/kubelet/apis/shell/server.js';
import { Metrics } from '../../../../src/metrics.js';

function pod(uid: string, status?: PodStatus): Pod {
  return {
    metadata: { name: `p-${uid}`, namespace: 'ns', uid },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    ...(status ? { status } : {}),
  } as Pod;
}

function view(pods: Pod[], cached: Record<string, PodStatus> = {}, ready = true): KubeletPodsAPIView {
  return {
    pods: () => pods,
    podByUID: (uid) => pods.find((p) => p.metadata.uid === uid),
    cachedStatus: (uid) => cached[uid],
    sourcesReady: () => ready,
  };
}

const readyTrue = { type: 'Ready', status: 'True', lastTransitionTime: '2026-12-06T10:00:00Z' } as const;

describe('kubelet/apis/pods answers', () => {
  describe('effectivePodStatus (the kubelet getEffectivePodStatus)', () => {
    const cases: { name: string; api?: PodStatus; cached?: PodStatus; want: PodStatus }[] = [
      {
        name: 'the status manager has one: that one',
        api: { phase: 'Pending' },
        cached: { phase: 'Running' },
        want: { phase: 'Running' },
      },
      { name: 'none anywhere: Pending', want: { phase: 'Pending' } },
      { name: 'the API phase kept', api: { phase: 'Running' }, want: { phase: 'Running' } },
      {
        name: 'an API Ready=True is not trusted',
        api: { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }, readyTrue] },
        want: {
          phase: 'Running',
          conditions: [
            { type: 'PodScheduled', status: 'True' },
            {
              ...readyTrue,
              status: 'False',
              reason: 'ContainersNotReady',
              message: 'Kubelet is initializing pod containers',
            },
          ],
        },
      },
      {
        name: 'an API Ready=False stays',
        api: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] },
        want: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] },
      },
    ];
    for (const c of cases)
      it(c.name, () => {
        const p = pod('u', c.api);
        const before = JSON.stringify(p);
        expect(effectivePodStatus(p, c.cached)).to.deep.equal(c.want);
        expect(JSON.stringify(p)).to.equal(before, 'the pod manager object is not changed');
      });
  });

  it('ListPods sorts by UID and carries the status manager status', () => {
    const a = listPods(view([pod('c'), pod('a'), pod('b')], { a: { phase: 'Running' } }));
    expect(a).to.have.property('ok');
    if (!('ok' in a)) return;
    expect(a.ok.map((p) => p.metadata.uid)).to.deep.equal(['a', 'b', 'c']);
    expect(a.ok.map((p) => p.status?.phase)).to.deep.equal(['Running', 'Pending', 'Pending']);
  });

  describe('GetPod', () => {
    const v = view([pod('a')], { a: { phase: 'Running' } });
    it('a known UID', () => {
      const a = getPod(v, 'a');
      expect('ok' in a && a.ok.status?.phase).to.equal('Running');
    });
    it('an unknown UID: NotFound', () => {
      expect(getPod(v, 'zz')).to.deep.equal({
        error: { code: 'NotFound', message: 'pod with UID zz not found' },
      });
    });
  });

  it('every call waits for the pod source: FailedPrecondition', () => {
    const v = view([pod('a')], {}, false);
    const initializing = { error: { code: 'FailedPrecondition', message: 'Kubelet is initializing' } };
    expect(listPods(v)).to.deep.equal(initializing);
    expect(getPod(v, 'a')).to.deep.equal(initializing);
    expect(initialWatchEvents(v)).to.deep.equal(initializing);
  });

  it('a watch starts with every pod ADDED, then INITIAL_SYNC_COMPLETE', () => {
    const a = initialWatchEvents(view([pod('b'), pod('a')]));
    expect('ok' in a && a.ok.map((e) => `${e.type}:${e.pod?.metadata.uid ?? ''}`)).to.deep.equal([
      'ADDED:a',
      'ADDED:b',
      'INITIAL_SYNC_COMPLETE:',
    ]);
  });

  describe('statusStoredEvent (OnPodUpdated, OnPodRemoved)', () => {
    const status: PodStatus = { phase: 'Running' };
    const deleting = {
      ...pod('a'),
      metadata: { ...pod('a').metadata, deletionTimestamp: '2026-12-06T10:00:00Z' },
    };
    const cases: { name: string; pod: Pod; first: boolean; finished: boolean; type: string }[] = [
      { name: 'first status', pod: pod('a'), first: true, finished: false, type: 'ADDED' },
      { name: 'later status', pod: pod('a'), first: false, finished: false, type: 'MODIFIED' },
      {
        name: 'first status of a pod being deleted',
        pod: deleting,
        first: true,
        finished: false,
        type: 'MODIFIED',
      },
      { name: 'finished pod', pod: pod('a'), first: false, finished: true, type: 'DELETED' },
    ];
    for (const c of cases)
      it(c.name, () => {
        const e = statusStoredEvent(c.pod, status, c.first, c.finished);
        expect(e.type).to.equal(c.type);
        if (c.type === 'DELETED')
          expect(e.pod).to.deep.equal({ metadata: { name: 'p-a', namespace: 'ns', uid: 'a' } });
        else expect(e.pod?.status).to.deep.equal(status);
      });
  });

  it('the broadcaster drops a watcher whose queue is full and keeps the others', () => {
    const b = new PodWatchBroadcaster(2);
    const slow: PodWatchEvent[] = [];
    const fast: PodWatchEvent[] = [];
    let dropped = 0;
    b.register({ pending: () => slow.length, deliver: (e) => slow.push(e), onDrop: () => dropped++ });
    b.register({ pending: () => 0, deliver: (e) => fast.push(e), onDrop: () => expect.fail('fast dropped') });
    for (let i = 0; i < 4; i++) b.broadcast({ type: 'MODIFIED', pod: pod(`p${i}`) });
    expect(slow).to.have.length(2);
    expect(fast).to.have.length(4);
    expect(dropped).to.equal(1);
    expect(b.size).to.equal(1);
  });

  describe('pod encoding (core/v1 protobuf)', () => {
    it('times as seconds and nanos', () => {
      expect(timeMessage('2026-12-06T10:00:00Z')).to.deep.equal({ seconds: 1796551200, nanos: 0 });
      expect(timeMessage('2026-12-06T10:00:00.123456Z')).to.deep.equal({
        seconds: 1796551200,
        nanos: 123456000,
      });
      expect(timeMessage('not a time')).to.equal(undefined);
    });

    it('round-trips a pod with quantities, int-or-strings, inline probe handlers and volume sources', () => {
      const p = {
        metadata: {
          name: 'a',
          namespace: 'ns',
          uid: 'u',
          labels: { app: 'x' },
          creationTimestamp: '2026-12-06T10:00:00Z',
          managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:spec': {} } }],
        },
        spec: {
          volumes: [{ name: 'cfg', configMap: { name: 'cm', optional: true } }],
          containers: [
            {
              name: 'app',
              image: 'busybox',
              resources: { requests: { cpu: '100m', memory: '64Mi' } },
              livenessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 5 },
              readinessProbe: { tcpSocket: { port: 'http' } },
              envFrom: [{ configMapRef: { name: 'env' } }],
            },
          ],
          aNewerField: { that: 'no decoder knows' },
        },
        status: { phase: 'Running', startTime: '2026-12-06T10:00:01.5Z' },
      };
      const got = decodePod(encodePod(p));
      expect(got).to.deep.equal({
        metadata: {
          name: 'a',
          namespace: 'ns',
          uid: 'u',
          labels: { app: 'x' },
          creationTimestamp: { seconds: 1796551200, nanos: 0 },
          managedFields: [
            { manager: 'kubectl', fieldsV1: { Raw: Buffer.from('{"f:spec":{}}').toString('base64') } },
          ],
        },
        spec: {
          volumes: [
            {
              name: 'cfg',
              volumeSource: { configMap: { localObjectReference: { name: 'cm' }, optional: true } },
            },
          ],
          containers: [
            {
              name: 'app',
              image: 'busybox',
              resources: { requests: { cpu: { string: '100m' }, memory: { string: '64Mi' } } },
              livenessProbe: {
                handler: { httpGet: { path: '/healthz', port: { type: 0, intVal: 8080 } } },
                periodSeconds: 5,
              },
              readinessProbe: { handler: { tcpSocket: { port: { type: 1, strVal: 'http' } } } },
              envFrom: [{ configMapRef: { localObjectReference: { name: 'env' } } }],
            },
          ],
        },
        status: { phase: 'Running', startTime: { seconds: 1796551201, nanos: 500000000 } },
      });
    });
  });
});

describe('pods API metrics (kubelet_pod_requests_*)', () => {
  it('each answer counted in requests total and its method’s counter by its status code; a throw as Internal', async () => {
    const metrics = new Metrics();
    const series = metrics.forNode('n1');
    const counted = podsApiCounted({
      requests: (c, version, code) => series.podRequests(c, version, code).inc(),
      watchEventDropped: () => series.podWatchEventsDropped.inc(),
    });
    counted('ListPods', () => ({ ok: [] }))({});
    counted('GetPod', () => ({ error: { code: 'NotFound', message: 'pod with UID x not found' } }))({});
    counted('GetPod', () => ({ error: { code: 'FailedPrecondition', message: 'Kubelet is initializing' } }))(
      {},
    );
    expect(() =>
      counted('ListPods', () => {
        throw new Error('boom');
      })({}),
    ).to.throw('boom');
    const lines = (await metrics.registry.metrics())
      .split('\n')
      .filter(
        (l) => l.startsWith('kubelet_pod_requests_') || l.startsWith('kubelet_pod_watch_events_dropped'),
      );
    expect(lines).to.deep.equal([
      'kubelet_pod_requests_total{node="n1",server_api_version="v1alpha1",status_code="OK"} 1',
      'kubelet_pod_requests_total{node="n1",server_api_version="v1alpha1",status_code="NotFound"} 1',
      'kubelet_pod_requests_total{node="n1",server_api_version="v1alpha1",status_code="FailedPrecondition"} 1',
      'kubelet_pod_requests_total{node="n1",server_api_version="v1alpha1",status_code="Internal"} 1',
      'kubelet_pod_requests_list_total{node="n1",server_api_version="v1alpha1",status_code="OK"} 1',
      'kubelet_pod_requests_list_total{node="n1",server_api_version="v1alpha1",status_code="Internal"} 1',
      'kubelet_pod_requests_get_total{node="n1",server_api_version="v1alpha1",status_code="NotFound"} 1',
      'kubelet_pod_requests_get_total{node="n1",server_api_version="v1alpha1",status_code="FailedPrecondition"} 1',
      'kubelet_pod_watch_events_dropped_total{node="n1"} 0',
    ]);
  });

  it('a watch counted in requests total and watch_total', async () => {
    const metrics = new Metrics();
    const series = metrics.forNode('n1');
    countPodsApiRequest(
      {
        requests: (c, version, code) => series.podRequests(c, version, code).inc(),
        watchEventDropped: () => series.podWatchEventsDropped.inc(),
      },
      'WatchPods',
      'Canceled',
    );
    const lines = (await metrics.registry.metrics())
      .split('\n')
      .filter((l) => l.startsWith('kubelet_pod_requests_'));
    expect(lines).to.deep.equal([
      'kubelet_pod_requests_total{node="n1",server_api_version="v1alpha1",status_code="Canceled"} 1',
      'kubelet_pod_requests_watch_total{node="n1",server_api_version="v1alpha1",status_code="Canceled"} 1',
    ]);
  });

  it('without metrics the answer is the endpoint itself', () => {
    const answer = () => ({ ok: 1 });
    expect(podsApiCounted(undefined)('ListPods', answer)).to.equal(answer);
  });
});

/**
 * The Event sink against a real kube-apiserver: it creates and patches core/v1 Events asking for the
 * object's metadata alone in the answer (it reads none of it), which the server must accept for both verbs.
 */
import { expect } from 'chai';
import type { CoreEvent } from '../../src/kube/eventcorrelator.js';
import { KubeClient, PartialObjectMetadataJSON } from '../../src/kube/client.js';
import { restEventSink } from '../../src/node/api.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';

const NS = 'default';

describe('Event sink (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let client: KubeClient;

  before(async function () {
    this.timeout(180_000);
    cp = await startControlPlane();
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { qps: 200, burst: 400 });
  });

  after(async function () {
    client?.close();
    await cp?.stop();
  });

  it('creates an Event, then aggregates into it with a patch', async () => {
    const sink = restEventSink(client);
    const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'p.1875f0c0aaaa0001', namespace: NS },
      involvedObject: { kind: 'Pod', namespace: NS, name: 'p', uid: 'u-1', apiVersion: 'v1' },
      reason: 'Pulled',
      message: 'Container image "busybox" already present on machine',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type: 'Normal',
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    };
    await sink.create(NS, event);
    await sink.patch(NS, event.metadata.name, { count: 2, lastTimestamp: at, message: event.message });
    const stored = await client.request<CoreEvent>({
      method: 'GET',
      path: `/api/v1/namespaces/${NS}/events/${event.metadata.name}`,
    });
    expect(stored).to.include({ reason: 'Pulled', count: 2, message: event.message });

    // What the sink asks for, asked directly: the server answers both verbs with the metadata alone.
    const created = await client.request<Record<string, unknown>>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/events`,
      body: { ...event, metadata: { name: 'p.1875f0c0aaaa0002', namespace: NS } },
      accept: PartialObjectMetadataJSON,
    });
    expect(created.kind).to.equal('PartialObjectMetadata');
    expect(created).to.not.have.property('reason');
  });
});

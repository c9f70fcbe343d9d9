import { expect } from 'chai';
import type { Node } from '../../../src/api/node.js';
import {
  OWNED_LABELS_ANNOTATION,
  OWNED_TAINTS_ANNOTATION,
  buildNode,
  deleteNode,
  desiredLabels,
  reconcileNodePatch,
  registerNode,
  type NodeIdentity,
} from '../../../src/node/registration.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeNodeAPI, flush } from './fakeapi.js';

const T0 = Date.UTC(2026, 0, 1);

const id = (over: Partial<NodeIdentity> = {}): NodeIdentity => ({
  nodeName: 'vn-1',
  virtualNodeName: 'vn-1-cr',
  labels: {},
  taints: [],
  ...over,
});

describe('node registration: the Node object', () => {
  it('carries the kubelet default labels and ours, and no taints unless asked', () => {
    const node = buildNode(id({ labels: { zone: 'a' } }), {});
    expect(node.metadata.labels).to.deep.equal({
      'kubernetes.io/hostname': 'vn-1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      type: 'virtual-kubelet',
      'node.kubernetes.io/instance-type': 'virtual',
      'kubelet-operator.dev/virtual-node': 'vn-1-cr',
      zone: 'a',
    });
    expect(node.spec).to.deep.equal({});
    expect(node.metadata.annotations).to.include({
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      [OWNED_TAINTS_ANNOTATION]: '',
    });
  });

  it('lets spec labels override defaults but not the node identity labels', () => {
    const labels = desiredLabels(
      id({
        labels: {
          'node.kubernetes.io/instance-type': 'big',
          'kubernetes.io/hostname': 'evil',
          'kubelet-operator.dev/virtual-node': 'other',
        },
      }),
    );
    expect(labels['node.kubernetes.io/instance-type']).to.equal('big');
    expect(labels['kubernetes.io/hostname']).to.equal('vn-1');
    expect(labels['kubelet-operator.dev/virtual-node']).to.equal('vn-1-cr');
  });

  it('puts spec taints on the Node, one per key and effect', () => {
    const node = buildNode(
      id({
        taints: [
          { key: 'virtual', effect: 'NoSchedule' },
          { key: 'virtual', value: 'x', effect: 'NoSchedule' },
          { key: 'gpu', value: 'no', effect: 'NoExecute' },
        ],
      }),
      {},
    );
    expect(node.spec!.taints).to.deep.equal([
      { key: 'virtual', value: 'x', effect: 'NoSchedule' },
      { key: 'gpu', value: 'no', effect: 'NoExecute' },
    ]);
  });
});

describe('reconcileNodePatch', () => {
  const existing = (over: Partial<Node['metadata']> = {}, taints?: Node['spec']): Node => ({
    metadata: { name: 'vn-1', resourceVersion: '7', ...over },
    spec: taints ?? {},
  });

  it('is undefined when the Node already matches', () => {
    const built = buildNode(id({ taints: [{ key: 'a', effect: 'NoSchedule' }] }), {});
    expect(
      reconcileNodePatch(
        { ...built, metadata: { ...built.metadata, resourceVersion: '3' } },
        id({ taints: [{ key: 'a', effect: 'NoSchedule' }] }),
      ),
    ).to.equal(undefined);
  });

  it('sets our labels, removes ones we owned and dropped, and leaves foreign labels alone', () => {
    const patch = reconcileNodePatch(
      existing({
        labels: { 'kubernetes.io/hostname': 'vn-1', old: '1', admin: 'mine' },
        annotations: { [OWNED_LABELS_ANNOTATION]: 'kubernetes.io/hostname,old' },
      }),
      id({ labels: { fresh: '2' } }),
    ) as { metadata: { labels: Record<string, string | null>; resourceVersion: string } };
    expect(patch.metadata.resourceVersion).to.equal('7');
    expect(patch.metadata.labels['old']).to.equal(null);
    expect(patch.metadata.labels['fresh']).to.equal('2');
    expect(patch.metadata.labels).to.not.have.property('admin');
    expect(patch.metadata.labels).to.not.have.property('kubernetes.io/hostname');
  });

  it("replaces taints we owned, keeps others (the node lifecycle controller's), adds new ones", () => {
    const patch = reconcileNodePatch(
      existing(
        { annotations: { [OWNED_TAINTS_ANNOTATION]: 'old:NoSchedule' } },
        {
          taints: [
            { key: 'old', effect: 'NoSchedule' },
            { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: '2026-01-01T00:00:00Z' },
            { key: 'keep', value: 'v1', effect: 'NoSchedule' },
          ],
        },
      ),
      id({ taints: [{ key: 'keep', value: 'v2', effect: 'NoSchedule' }] }),
    ) as { spec: { taints: unknown[] }; metadata: { annotations: Record<string, string> } };
    expect(patch.spec.taints).to.deep.equal([
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: '2026-01-01T00:00:00Z' },
      { key: 'keep', value: 'v2', effect: 'NoSchedule' },
    ]);
    expect(patch.metadata.annotations[OWNED_TAINTS_ANNOTATION]).to.equal('keep:NoSchedule');
  });

  it('clears the taint list when nothing is left', () => {
    const patch = reconcileNodePatch(
      existing(
        { annotations: { [OWNED_TAINTS_ANNOTATION]: 'a:NoSchedule' } },
        { taints: [{ key: 'a', effect: 'NoSchedule' }] },
      ),
      id(),
    ) as { spec: { taints: unknown } };
    expect(patch.spec.taints).to.equal(null);
  });
});

describe('registerNode', () => {
  it('creates the Node', async () => {
    const clock = new FakeClock(T0);
    const api = new FakeNodeAPI(clock);
    let created = 0;
    const node = await registerNode(api, buildNode(id(), {}), id(), { clock, onCreated: () => created++ });
    expect(node.metadata.uid).to.be.a('string');
    expect(api.nodes.get('vn-1')!.metadata.labels!['type']).to.equal('virtual-kubelet');
    expect(created, 'onCreated: this registration created the Node').to.equal(1);
    await registerNode(api, buildNode(id(), {}), id(), { clock, onCreated: () => created++ });
    expect(created, 'adopting an existing Node is not a creation').to.equal(1);
  });

  it('adopts an existing Node and reconciles what it owns', async () => {
    const clock = new FakeClock(T0);
    const api = new FakeNodeAPI(clock);
    await api.createNode({ metadata: { name: 'vn-1', labels: { admin: 'x' } }, spec: {} });
    const uid = api.nodes.get('vn-1')!.metadata.uid;
    const node = await registerNode(
      api,
      buildNode(id({ labels: { a: 'b' } }), {}),
      id({ labels: { a: 'b' } }),
      { clock },
    );
    expect(node.metadata.uid).to.equal(uid);
    expect(node.metadata.labels).to.include({ admin: 'x', a: 'b', 'kubernetes.io/hostname': 'vn-1' });
    expect(api.count('patchNode')).to.equal(1);
    // Registering again changes nothing.
    await registerNode(api, buildNode(id({ labels: { a: 'b' } }), {}), id({ labels: { a: 'b' } }), { clock });
    expect(api.count('patchNode')).to.equal(1);
  });

  it('retries failures with back-off 100 ms doubling, and a conflicting patch from the start', async () => {
    const clock = new FakeClock(T0);
    const api = new FakeNodeAPI(clock);
    await api.createNode({ metadata: { name: 'vn-1' }, spec: {} });
    api.calls = [];
    api.fail('getNode', 'Unavailable', 2);
    api.fail('patchNode', 'Conflict', 1);
    let result: Node | undefined;
    void registerNode(api, buildNode(id(), {}), id(), { clock }).then((n) => (result = n));
    await flush(5);
    for (let i = 0; i < 40 && !result; i++) {
      clock.advance(50);
      await flush(5);
    }
    expect(result).to.not.equal(undefined);
    const getTimes = api.calls.filter((c) => c.method === 'getNode').map((c) => c.at - T0);
    expect(getTimes).to.deep.equal([0, 100, 300, 700]);
  });

  it('gives up only when aborted', async () => {
    const clock = new FakeClock(T0);
    const api = new FakeNodeAPI(clock);
    api.fail('createNode', 'Unavailable', 1000);
    const ac = new AbortController();
    const p = registerNode(api, buildNode(id(), {}), id(), { clock, signal: ac.signal });
    await flush(3);
    for (let i = 0; i < 400; i++) {
      clock.advance(50);
      await flush(3);
    }
    ac.abort();
    let err: unknown;
    await p.catch((e: unknown) => (err = e));
    expect((err as { kind?: string }).kind).to.equal('Unavailable');
    // Back-off 100 ms doubling, capped at 7 s: attempts at 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 19.7 s.
    expect(api.calls.map((c) => c.at - T0)).to.deep.equal([
      0, 100, 300, 700, 1500, 3100, 6300, 12_700, 19_700,
    ]);
  });
});

describe('deleteNode', () => {
  it('deletes the Node and its Lease, and tolerates either being gone', async () => {
    const api = new FakeNodeAPI();
    await api.createNode({ metadata: { name: 'vn-1' } });
    await api.createLease({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'vn-1' },
      spec: {},
    });
    await deleteNode(api, 'vn-1');
    expect(api.nodes.size).to.equal(0);
    expect(api.leases.size).to.equal(0);
    await deleteNode(api, 'vn-1');
  });

  it('passes a UID precondition through', async () => {
    const api = new FakeNodeAPI();
    await api.createNode({ metadata: { name: 'vn-1' } });
    let err: unknown;
    await deleteNode(api, 'vn-1', { uid: 'not-it' }).catch((e: unknown) => (err = e));
    expect((err as { kind?: string }).kind).to.equal('Conflict');
    expect(api.nodes.size).to.equal(1);
  });
});

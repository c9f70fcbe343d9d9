import { expect } from 'chai';
import type { KubeClient, RequestOptions } from '../../../../../src/kube/client.js';
import { CSIPluginHandler } from '../../../../../src/kubelet/pluginmanager/shell/csihandler.js';
import type { CSINode, CSINodeInfo } from '../../../../../src/kubelet/pluginmanager/csinodeinfo.js';
import { KindError } from '../../../../../src/util/errors.js';
import { silentLogger } from '../../../../../src/util/logger.js';

const D = 'hostpath.csi.k8s.io';
const TOPO = 'topology.hostpath.csi/node';

/** An API server holding one Node and at most one CSINode, answering the handler's requests. */
class FakeApi {
  node = {
    metadata: {
      name: 'vn-a',
      uid: 'uid-1',
      labels: {} as Record<string, string>,
      annotations: {} as Record<string, string>,
    },
  };
  csiNode: CSINode | undefined;
  calls: string[] = [];
  conflictsLeft = 0;
  csiDriverPeriodSeconds: number | undefined;

  request = (req: RequestOptions): Promise<unknown> => {
    this.calls.push(`${req.method} ${req.path}`);
    if (req.path === '/api/v1/nodes/vn-a') {
      if (req.method === 'PATCH') {
        const md = (
          req.body as {
            metadata: { labels?: Record<string, string>; annotations?: Record<string, string | null> };
          }
        ).metadata;
        Object.assign(this.node.metadata.labels, md.labels ?? {});
        for (const [k, v] of Object.entries(md.annotations ?? {})) {
          if (v === null) delete this.node.metadata.annotations[k];
          else this.node.metadata.annotations[k] = v;
        }
      }
      return Promise.resolve(structuredClone(this.node));
    }
    if (req.path.startsWith('/apis/storage.k8s.io/v1/csidrivers/')) {
      return this.csiDriverPeriodSeconds === undefined
        ? Promise.reject(new KindError('NotFound', 'not found'))
        : Promise.resolve({ spec: { nodeAllocatableUpdatePeriodSeconds: this.csiDriverPeriodSeconds } });
    }
    if (req.path.startsWith('/apis/storage.k8s.io/v1/csinodes')) {
      switch (req.method) {
        case 'GET':
          return this.csiNode
            ? Promise.resolve(structuredClone(this.csiNode))
            : Promise.reject(new KindError('NotFound', 'not found'));
        case 'POST':
          if (this.csiNode) return Promise.reject(new KindError('AlreadyExists', 'already exists'));
          this.csiNode = structuredClone(req.body as CSINode);
          return Promise.resolve(structuredClone(this.csiNode));
        case 'PUT':
          if (this.conflictsLeft > 0) {
            this.conflictsLeft--;
            return Promise.reject(new KindError('Conflict', 'the object has been modified'));
          }
          this.csiNode = structuredClone(req.body as CSINode);
          return Promise.resolve(undefined);
        case 'DELETE':
          this.csiNode = undefined;
          return Promise.resolve(undefined);
      }
    }
    return Promise.reject(new Error(`unexpected ${req.method} ${req.path}`));
  };
}

function handler(
  api: FakeApi,
  info: CSINodeInfo | Error | (() => CSINodeInfo),
  recheckMs?: number,
): CSIPluginHandler {
  return new CSIPluginHandler({
    client: api as unknown as KubeClient,
    nodeName: 'vn-a',
    logger: silentLogger,
    nodeGetInfo: () =>
      info instanceof Error
        ? Promise.reject(info)
        : Promise.resolve(typeof info === 'function' ? info() : info),
    ...(recheckMs !== undefined ? { csiDriverRecheckMs: recheckMs } : {}),
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const INFO: CSINodeInfo = { nodeID: 'vn-a', maxVolumesPerNode: 0, topology: { [TOPO]: 'vn-a' } };

describe('pluginmanager/csihandler', () => {
  it('registers: creates the CSINode owned by the Node, labels and annotates the Node; deregisters', async () => {
    const api = new FakeApi();
    const h = handler(api, INFO);
    await h.validatePlugin(D, '/p/csi.sock', ['1.0.0']);
    await h.registerPlugin(D, '/p/csi.sock', ['1.0.0']);
    expect(h.endpoint(D)).to.equal('/p/csi.sock');
    expect(api.csiNode?.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'vn-a', uid: 'uid-1' },
    ]);
    expect(api.csiNode?.spec.drivers).to.deep.equal([{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO] }]);
    expect(api.node.metadata.labels).to.deep.equal({ [TOPO]: 'vn-a' });
    expect(api.node.metadata.annotations).to.deep.equal({
      'csi.volume.kubernetes.io/nodeid': `{"${D}":"vn-a"}`,
    });

    // A second registration of the same version is refused, as the kubelet refuses it.
    let refused = '';
    await h.validatePlugin(D, '/p/csi.sock', ['1.0.0']).catch((e: Error) => (refused = e.message));
    expect(refused).to.match(/already registered with a higher supported version: "1.0.0"/);

    await h.deregisterPlugin(D, '/p/csi.sock');
    expect(h.endpoint(D)).to.equal(undefined);
    expect(api.csiNode?.spec.drivers).to.deep.equal([]);
    expect(api.node.metadata.annotations).to.deep.equal({});
    expect(api.node.metadata.labels).to.deep.equal({ [TOPO]: 'vn-a' });
  });

  it('a CSINode owned by an earlier Node of the name is deleted and made anew', async () => {
    const api = new FakeApi();
    api.csiNode = {
      metadata: {
        name: 'vn-a',
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'vn-a', uid: 'old' }],
      },
      spec: { drivers: [{ name: 'stale', nodeID: 'x' }] },
    };
    await handler(api, INFO).registerPlugin(D, '/p/csi.sock', ['1.0.0']);
    expect(api.csiNode?.metadata.ownerReferences?.[0]?.uid).to.equal('uid-1');
    expect(api.csiNode?.spec.drivers?.map((d) => d.name)).to.deep.equal([D]);
  });

  it('retries the CSINode write on a conflict', async () => {
    const api = new FakeApi();
    api.conflictsLeft = 2;
    await handler(api, INFO).registerPlugin(D, '/p/csi.sock', ['1.0.0']);
    expect(api.csiNode?.spec.drivers?.map((d) => d.name)).to.deep.equal([D]);
    expect(api.calls.filter((c) => c.startsWith('PUT')).length).to.equal(3);
  });

  it('a NodeGetInfo failure fails the registration and forgets the driver', async () => {
    const api = new FakeApi();
    const h = handler(api, new Error('rpc error: code = Unavailable'));
    let err = '';
    await h.registerPlugin(D, '/p/csi.sock', ['1.0.0']).catch((e: Error) => (err = e.message));
    expect(err).to.equal('rpc error: code = Unavailable');
    expect(h.endpoint(D)).to.equal(undefined);
  });

  it('a topology collision fails the registration and leaves the CSINode without the driver', async () => {
    const api = new FakeApi();
    api.node.metadata.labels[TOPO] = 'elsewhere';
    let err = '';
    await handler(api, INFO)
      .registerPlugin(D, '/p/csi.sock', ['1.0.0'])
      .catch((e: Error) => (err = e.message));
    expect(err).to.match(/detected topology value collision/);
    expect(api.csiNode?.spec.drivers ?? []).to.deep.equal([]);
  });

  describe('the CSI node updater (MutableCSINodeAllocatableCount)', () => {
    it('refreshes the allocatable count every CSIDriver period, and stops with the driver', async () => {
      const api = new FakeApi();
      api.csiDriverPeriodSeconds = 0.05;
      let count = 16;
      const h = handler(api, () => ({ ...INFO, maxVolumesPerNode: count }));
      await h.registerPlugin(D, '/p/csi.sock', ['1.0.0']);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 16 });
      count = 8;
      await sleep(400);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 8 });
      await h.deregisterPlugin(D, '/p/csi.sock');
      const puts = api.calls.filter((c) => c.startsWith('PUT')).length;
      count = 4;
      await sleep(200);
      expect(api.calls.filter((c) => c.startsWith('PUT')).length).to.equal(puts);
      h.stop();
    });

    it('a ResourceExhausted attach refreshes at once when the CSIDriver has a period, else does nothing', async () => {
      const api = new FakeApi();
      let count = 16;
      const h = handler(api, () => ({ ...INFO, maxVolumesPerNode: count }), 60_000);
      await h.registerPlugin(D, '/p/csi.sock', ['1.0.0']);
      count = 3;
      expect(await h.refreshAllocatable(D), 'no CSIDriver').to.equal(false);
      api.csiDriverPeriodSeconds = 0;
      expect(await h.refreshAllocatable(D), 'no period').to.equal(false);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 16 });
      api.csiDriverPeriodSeconds = 3600;
      expect(await h.refreshAllocatable(D)).to.equal(true);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 3 });
      expect(await h.refreshAllocatable('other.csi'), 'not registered').to.equal(false);
      h.stop();
    });

    it('no period (or no CSIDriver): no refresh, the CSIDriver looked at again', async () => {
      const api = new FakeApi();
      let count = 16;
      const h = handler(api, () => ({ ...INFO, maxVolumesPerNode: count }), 40);
      await h.registerPlugin(D, '/p/csi.sock', ['1.0.0']);
      count = 8;
      await sleep(200);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 16 });
      expect(api.calls.filter((c) => c.includes('/csidrivers/')).length).to.be.greaterThan(2);
      // A period set later is taken up.
      api.csiDriverPeriodSeconds = 0.03;
      await sleep(500);
      expect(api.csiNode?.spec.drivers?.[0]?.allocatable).to.deep.equal({ count: 8 });
      h.stop();
    });
  });

  describe('initializeCSINode (at start, with no driver)', () => {
    const initialized = (h: CSIPluginHandler) => new Promise<void>((r) => h.initializeCSINode(r));

    it('creates the CSINode owned by the Node, with no drivers and no migrated plugins', async () => {
      const api = new FakeApi();
      const h = handler(api, INFO);
      await initialized(h);
      expect(api.csiNode?.metadata.ownerReferences).to.deep.equal([
        { apiVersion: 'v1', kind: 'Node', name: 'vn-a', uid: 'uid-1' },
      ]);
      expect(api.csiNode?.spec.drivers).to.deep.equal([]);
      expect(api.csiNode?.metadata.annotations).to.deep.equal({
        'storage.alpha.kubernetes.io/migrated-plugins': '',
      });
      h.stop();
    });

    it("keeps this Node's CSINode as it is (a restart), and replaces another Node's", async () => {
      const api = new FakeApi();
      const h = handler(api, INFO);
      await initialized(h);
      const mine = structuredClone(api.csiNode);
      api.calls = [];
      await initialized(h);
      expect(api.csiNode).to.deep.equal(mine);
      expect(api.calls.filter((c) => !c.startsWith('GET'))).to.deep.equal([]);
      api.node.metadata.uid = 'uid-2';
      await initialized(h);
      expect(api.csiNode?.metadata.ownerReferences?.[0]?.uid).to.equal('uid-2');
      h.stop();
    });

    it('retries while the Node is not registered yet, and stops retrying on stop', async () => {
      const api = new FakeApi();
      const real = api.request;
      let missing = 2;
      api.request = (req) =>
        req.path === '/api/v1/nodes/vn-a' && missing-- > 0
          ? Promise.reject(new KindError('NotFound', 'nodes "vn-a" not found'))
          : real(req);
      const h = handler(api, INFO);
      await initialized(h); // after 30 ms and 240 ms
      expect(api.csiNode?.metadata.ownerReferences?.[0]?.uid).to.equal('uid-1');
      const stopped = new FakeApi();
      stopped.request = () => Promise.reject(new KindError('Unavailable', 'connection refused'));
      const h2 = handler(stopped, INFO);
      let done = false;
      h2.initializeCSINode(() => (done = true));
      h2.stop();
      await sleep(100);
      expect(done).to.equal(false);
      h.stop();
    });

    it('sends nothing before the registration says the Node exists; then reads first a Node it found', async () => {
      const api = new FakeApi();
      const h = handler(api, INFO);
      let registered!: (r: { uid: string; created: boolean }) => void;
      const nodeRegistered = new Promise<{ uid: string; created: boolean }>((r) => (registered = r));
      const done = new Promise<void>((r) => h.initializeCSINode(r, nodeRegistered));
      await sleep(50);
      expect(api.calls).to.deep.equal([]);
      registered({ uid: 'uid-1', created: false });
      await done;
      expect(api.calls).to.deep.equal([
        'GET /apis/storage.k8s.io/v1/csinodes/vn-a',
        'GET /api/v1/nodes/vn-a',
        'POST /apis/storage.k8s.io/v1/csinodes',
      ]);
      h.stop();
    });

    it('creates the CSINode of a Node the registration created at once, and replaces a stale one', async () => {
      const api = new FakeApi();
      const h = handler(api, INFO);
      await new Promise<void>((r) =>
        h.initializeCSINode(r, Promise.resolve({ uid: 'uid-1', created: true })),
      );
      expect(api.calls).to.deep.equal(['POST /apis/storage.k8s.io/v1/csinodes']);
      expect(api.csiNode?.metadata.ownerReferences?.[0]?.uid).to.equal('uid-1');
      // The name still held by the CSINode of the Node this one replaced (its garbage collection pending).
      api.calls = [];
      api.node.metadata.uid = 'uid-2';
      const h2 = handler(api, INFO);
      await new Promise<void>((r) =>
        h2.initializeCSINode(r, Promise.resolve({ uid: 'uid-2', created: true })),
      );
      expect(api.calls).to.deep.equal([
        'POST /apis/storage.k8s.io/v1/csinodes',
        'GET /apis/storage.k8s.io/v1/csinodes/vn-a',
        'GET /api/v1/nodes/vn-a',
        'DELETE /apis/storage.k8s.io/v1/csinodes/vn-a',
        'GET /api/v1/nodes/vn-a',
        'POST /apis/storage.k8s.io/v1/csinodes',
      ]);
      expect(api.csiNode?.metadata.ownerReferences?.[0]?.uid).to.equal('uid-2');
      h.stop();
      h2.stop();
    });
  });
});

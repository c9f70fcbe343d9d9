/**
 * The plugin manager of a VirtualNode (issue #59) against a real v1.37 kube-apiserver, with real node plugins
 * run as host processes: the hostpath CSI driver serving on the node root's `plugins/csi-hostpath/csi.sock`
 * and node-driver-registrar announcing it in the node root's `plugins_registry/` (as their DaemonSet would
 * through `/var/lib/kubelet` hostPaths; the registrar names the driver's socket by its `/var/lib/kubelet` path, as
 * in a DaemonSet, and the node finds it in its root). The node's CSINode gets the driver with its node ID and topology key,
 * the Node the topology label and the node-ID annotation; when the registrar stops (it removes its socket on
 * SIGTERM) the driver is deregistered: the CSINode entry and the annotation go. A second node of the same
 * process sees none of it (its own root).
 */
import { expect } from 'chai';
import { type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../../src/kube/client.js';
import { kubeletRootPaths, pluginDir } from '../../src/kubelet/rootdir.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { csiPluginBinaries, startHostpathPlugin, stopProcess } from '../support/csiplugins.js';
import { eventually } from '../support/eventually.js';
import { postVirtualNode, type SimNodeEnv, startSimNodeEnv, waitNodeReady } from '../support/operator.js';
import { testStateDir } from '../support/statedir.js';

const NODE = 'vn-plugins';
const OTHER = 'vn-plugins-other';
const DRIVER = 'hostpath.csi.k8s.io';
const TOPOLOGY_KEY = 'topology.hostpath.csi/node';

interface CSINodeObj {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  spec: { drivers: { name: string; nodeID: string; topologyKeys?: string[] | null }[] | null };
}
interface NodeObj {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
}

function getCSINode(client: KubeClient, name: string): Promise<CSINodeObj | undefined> {
  return client
    .request<CSINodeObj>({ method: 'GET', path: `/apis/storage.k8s.io/v1/csinodes/${name}` })
    .catch(() => undefined);
}

function getNode(client: KubeClient, name: string): Promise<NodeObj> {
  return client.request<NodeObj>({ method: 'GET', path: `/api/v1/nodes/${name}` });
}

describe('plugin manager: CSI node plugin registration (real registrar and hostpath driver)', function () {
  this.timeout(180_000);
  let env: SimNodeEnv;
  let client: KubeClient;
  let driver: ChildProcess | undefined;
  let registrar: ChildProcess | undefined;
  let driverState = '';
  const logs: string[] = [];
  const root = nodeRootDir(testStateDir(), NODE);
  const paths = kubeletRootPaths(root);
  const csiSocket = path.join(pluginDir(root, 'csi-hostpath'), 'csi.sock');
  const regSocket = path.join(paths.pluginsRegistry, `${DRIVER}-reg.sock`);

  before(async function () {
    this.timeout(25 * 60_000);
    const bins = await csiPluginBinaries();
    env = await startSimNodeEnv({ node: OTHER, podCIDR: '10.86.0.0/24' });
    client = env.client;
    await postVirtualNode(client, NODE, { runtime: { type: 'sim', sim: { podCIDR: '10.86.1.0/24' } } });
    await waitNodeReady(client, NODE);
    await mkdir(path.dirname(csiSocket), { recursive: true });
    driverState = await mkdtemp(path.join(tmpdir(), 'ko-hostpath-'));
    ({ driver, registrar } = await startHostpathPlugin({
      bins,
      socket: csiSocket,
      node: NODE,
      driver: DRIVER,
      stateDir: driverState,
      registrationDir: paths.pluginsRegistry,
      logs,
      verbosity: 2,
    }));
  });

  after(async () => {
    await stopProcess(registrar);
    await stopProcess(driver);
    await env?.stop();
    if (driverState) await rm(driverState, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') console.log(logs.join('').slice(-4000));
  });

  it('the registrar puts its socket in the node root plugins_registry/', async () => {
    await eventually(() => existsSync(regSocket), 30_000, 'the registration socket');
    expect(regSocket.startsWith(`${testStateDir()}/nodes/${NODE}/plugins_registry/`)).to.equal(true);
  });

  it("the node's CSINode gets the driver with its node ID and topology key, owned by the Node", async () => {
    const csiNode = await eventually(
      async () => {
        const n = await getCSINode(client, NODE);
        return n?.spec.drivers?.some((d) => d.name === DRIVER) ? n : undefined;
      },
      30_000,
      'the CSINode driver entry',
    );
    expect(csiNode.spec.drivers).to.deep.equal([
      { name: DRIVER, nodeID: NODE, topologyKeys: [TOPOLOGY_KEY] },
    ]);
    expect(csiNode.metadata.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).to.deep.equal([
      `Node/${NODE}`,
    ]);
  });

  it('the Node gets the topology label and the node-ID annotation', async () => {
    const node = await getNode(client, NODE);
    expect(node.metadata.labels?.[TOPOLOGY_KEY]).to.equal(NODE);
    expect(JSON.parse(node.metadata.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '{}')).to.deep.equal({
      [DRIVER]: NODE,
    });
  });

  it('another VirtualNode of the process sees none of it', async () => {
    const other = await getCSINode(client, OTHER);
    expect(other?.spec.drivers ?? []).to.deep.equal([]);
    expect((await getNode(client, OTHER)).metadata.labels?.[TOPOLOGY_KEY]).to.equal(undefined);
  });

  it('the registrar stopped (its socket removed): the driver is deregistered', async () => {
    await stopProcess(registrar);
    registrar = undefined;
    await eventually(() => !existsSync(regSocket), 10_000, 'the socket removed');
    await eventually(
      async () => {
        const n = await getCSINode(client, NODE);
        return n && !(n.spec.drivers ?? []).some((d) => d.name === DRIVER) ? n : undefined;
      },
      30_000,
      'the CSINode entry removed',
    );
    const node = await getNode(client, NODE);
    expect(node.metadata.annotations?.['csi.volume.kubernetes.io/nodeid']).to.equal(undefined);
    // Topology labels stay, as on a kubelet.
    expect(node.metadata.labels?.[TOPOLOGY_KEY]).to.equal(NODE);
  });
});

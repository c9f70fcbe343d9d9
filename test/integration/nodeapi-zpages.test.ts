/**
 * The kubelet's /configz, /flagz and /statusz on a VirtualNode's node API, against a real kube-apiserver:
 * read through the API server's node proxy (`/api/v1/nodes/<node>/proxy/configz`, as upstream's node e2e
 * reads a kubelet's configuration), so the node's InternalIP is an address on a private bridge
 * (test/support/podnetwork.ts; kube-apiserver refuses to proxy to loopback). Then directly, with a
 * ServiceAccount that may only `get nodes/statusz`: it reads /statusz, and /configz and /flagz are 403
 * (nodes/configz, with nodes/proxy as the only fallback and only for /configz), as the kubelet authorizes.
 *
 * Needs root (the bridge).
 */
import { expect } from 'chai';
import type { KubeClient } from '../../src/kube/client.js';
import { KUBELET_VERSION } from '../../src/node/nodestatus.js';
import { KindError } from '../../src/util/errors.js';
import { kubectl, type ControlPlane } from '../support/controlplane.js';
import { grantGet, saToken } from '../support/kubectl.js';
import { nodeApiGet, startNodeApiEnv, type NodeApiEnv } from '../support/nodeapi.js';
import { createPodNetwork, type PodNetwork } from '../support/podnetwork.js';

const NODE = 'vn-zpages';
const WARNING =
  'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.';

describe('node API /configz, /flagz, /statusz through the real API server (sim runtime)', function () {
  this.timeout(10 * 60_000);
  let network: PodNetwork;
  let nodeIP: string;
  let env: NodeApiEnv | undefined;
  let cp: ControlPlane;
  let client: KubeClient;
  let servingCa: Buffer;

  const proxied = (p: string): string => `/api/v1/nodes/${NODE}/proxy${p}`;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    network = await createPodNetwork();
    nodeIP = await network.nodeIP(0);
    env = await startNodeApiEnv({
      node: NODE,
      ip: nodeIP,
      spec: {
        runtime: { type: 'sim' },
        capacity: { pods: 42 },
        taints: [{ key: 'dedicated', value: 'zpages', effect: 'NoSchedule' }],
        kubelet: { clusterDNS: ['10.0.0.10'], clusterDomain: 'zpages.local' },
        heartbeat: { leaseDurationSeconds: 50, statusUpdateFrequencySeconds: 12 },
      },
    });
    ({ cp, client, servingCa } = env);
  });

  after(async () => {
    await env?.stop();
    await network?.stop();
  });

  it('/configz: the node\'s KubeletConfiguration under "kubeletconfig", from its VirtualNode', async () => {
    const r = await kubectl(cp, ['get', '--raw', proxied('/configz')]);
    expect(r.code, r.stderr).to.equal(0);
    const cfg = (JSON.parse(r.stdout) as { kubeletconfig: Record<string, unknown> }).kubeletconfig;
    expect(cfg).to.deep.include({
      kind: 'KubeletConfiguration',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      address: nodeIP,
      port: 10250,
      authorization: {
        mode: 'Webhook',
        webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' },
      },
      clusterDNS: ['10.0.0.10'],
      clusterDomain: 'zpages.local',
      maxPods: 42,
      nodeLeaseDurationSeconds: 50,
      nodeStatusUpdateFrequency: '12s',
      syncFrequency: '1m0s',
      registerWithTaints: [{ key: 'dedicated', value: 'zpages', effect: 'NoSchedule' }],
      containerRuntimeEndpoint: '',
    });
    expect(cfg).to.not.have.property('readOnlyPort');
  });

  it('/flagz: text by default, the Flagz kind by content negotiation', async () => {
    const r = await kubectl(cp, ['get', '--raw', proxied('/flagz')]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.startsWith(`\nkubelet flagz\n${WARNING}\n`)).to.equal(true);
    expect(r.stdout).to.match(new RegExp(`\\nhostname-override(:|: |=| )${NODE}\\n`));
    const flagz = await client.request<{ kind: string; apiVersion: string; flags: Record<string, string> }>({
      method: 'GET',
      path: proxied('/flagz'),
      accept: 'application/json;as=Flagz;g=config.k8s.io;v=v1beta1',
    });
    expect(flagz.kind).to.equal('Flagz');
    expect(flagz.apiVersion).to.equal('config.k8s.io/v1beta1');
    expect(flagz.flags).to.include({
      'node-ip': nodeIP,
      'cluster-dns': '[10.0.0.10]',
      'max-pods': '42',
      'register-with-taints': 'dedicated=zpages:NoSchedule',
    });
  });

  it('/statusz: text, the Statusz kind, and 406 for an Accept it cannot serve', async () => {
    const r = await kubectl(cp, ['get', '--raw', proxied('/statusz')]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.startsWith(`\nkubelet statusz\n${WARNING}\n\nStarted`)).to.equal(true);
    expect(r.stdout).to.match(/\nPaths(:|: |=| ) \/configz \/flagz \/healthz \/metrics\n$/);
    const st = await client.request<Record<string, unknown>>({
      method: 'GET',
      path: proxied('/statusz'),
      accept: 'application/json;as=Statusz;g=config.k8s.io;v=v1beta1',
    });
    expect(st).to.deep.include({
      kind: 'Statusz',
      apiVersion: 'config.k8s.io/v1beta1',
      metadata: { name: 'kubelet' },
      binaryVersion: KUBELET_VERSION.slice(1),
      emulationVersion: '1.37',
      paths: ['/configz', '/flagz', '/healthz', '/metrics'],
    });
    expect(Date.parse(st.startTime as string)).to.be.within(Date.now() - 10 * 60_000, Date.now());
    // Through the proxy the node's 406 Status reaches the client as it left the node.
    const refused = await client
      .request({ method: 'GET', path: proxied('/statusz'), accept: 'application/json' })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(refused).to.be.instanceOf(KindError);
    expect((refused as KindError).context).to.include({ code: 406, reason: 'NotAcceptable' });
    expect((refused as KindError).message).to.contain(
      'only the following media types are accepted: application/json, application/yaml, text/plain',
    );
  });

  it('a ServiceAccount with only nodes/statusz reads /statusz, not /configz or /flagz', async () => {
    const token = await saToken(cp, 'statusz-reader');
    await grantGet(cp, 'statusz', 'nodes/statusz', 'statusz-reader');
    const direct = (p: string) => nodeApiGet({ host: nodeIP, port: 10250, ca: servingCa }, p, token);
    const statusz = await direct('/statusz');
    expect(statusz.status, statusz.body).to.equal(200);
    expect(statusz.body).to.contain('kubelet statusz');
    const configz = await direct('/configz');
    expect(configz.status).to.equal(403);
    expect(configz.body).to.equal(
      'Forbidden (user=system:serviceaccount:default:statusz-reader, verb=get, resource=nodes, subresource(s)=[configz proxy])\n',
    );
    const flagz = await direct('/flagz');
    expect(flagz.status).to.equal(403);
    expect(flagz.body).to.contain('subresource(s)=[configz])');
  });
});

/**
 * /logs/ of a VirtualNode (NodeLogQuery, enableSystemLogQuery off) through a real kube-apiserver: `kubectl
 * get --raw /api/v1/nodes/<node>/proxy/logs/` lists the node's log directory (`<stateDir>/nodes/<node>/logs`)
 * as a kubelet lists /var/log, `?query=` is not read (the same listing), a file comes back whole. Directly,
 * the path is authorized as nodes/log: nodes/proxy alone gets 403. The node's address is on a bridge
 * (test/support/podnetwork.ts; kube-apiserver refuses to proxy to loopback), so root is needed.
 */
import { expect } from 'chai';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { kubectl, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { grantGet, saToken } from '../support/kubectl.js';
import { nodeApiGet, startNodeApiEnv, type NodeApiEnv } from '../support/nodeapi.js';
import { createPodNetwork, type PodNetwork } from '../support/podnetwork.js';

const NODE = 'vn-nodelogs';

describe('node API /logs/ through the real API server (NodeLogQuery)', function () {
  this.timeout(5 * 60_000);
  let network: PodNetwork | undefined;
  let env: NodeApiEnv | undefined;
  let cp: ControlPlane;
  let nodeIP: string;
  let logDir: string;
  const proxied = (p: string): string => `/api/v1/nodes/${NODE}/proxy${p}`;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    network = await createPodNetwork();
    nodeIP = await network.nodeIP(0);
    env = await startNodeApiEnv({ node: NODE, ip: nodeIP, spec: { runtime: { type: 'sim' } } });
    cp = env.cp;
    const target = env.registry.nodes().find((n) => n.nodeName === NODE);
    logDir = target!.logDir!;
    expect(logDir.endsWith(`/nodes/${NODE}/logs`), logDir).to.equal(true);
    await mkdir(path.join(logDir, 'pods'), { recursive: true });
    await writeFile(path.join(logDir, 'kubelet.log'), 'I1206 started\n');
    await writeFile(path.join(logDir, 'pods', 'a.log'), 'a\n');
  });

  after(async () => {
    await env?.stop();
    await network?.stop();
  });

  it('lists the log directory, ignores ?query=, and sends a file', async () => {
    const list = await kubectl(cp, ['get', '--raw', proxied('/logs/')]);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.stdout).to.equal(
      [
        '<!doctype html>',
        '<meta name="viewport" content="width=device-width">',
        '<pre>',
        '<a href="kubelet.log">kubelet.log</a>',
        '<a href="pods/">pods/</a>',
        '</pre>',
        '',
      ].join('\n'),
    );
    const query = await kubectl(cp, ['get', '--raw', proxied('/logs/?query=kubelet')]);
    expect(query.stdout).to.equal(list.stdout);
    const file = await kubectl(cp, ['get', '--raw', proxied('/logs/kubelet.log')]);
    expect(file.stdout).to.equal('I1206 started\n');
    const nested = await kubectl(cp, ['get', '--raw', proxied('/logs/pods/a.log')]);
    expect(nested.stdout).to.equal('a\n');
    const missing = await kubectl(cp, ['get', '--raw', proxied('/logs/nothing.log')]);
    expect(missing.code).to.not.equal(0);
    expect(missing.stderr).to.match(/NotFound|not found/i);
  });

  it('is authorized as nodes/log: nodes/proxy alone is refused', async () => {
    const direct = (p: string, token: string): Promise<{ status: number; body: string }> =>
      nodeApiGet({ host: nodeIP, port: 10250, ca: env!.servingCa }, p, token);
    const proxyOnly = await saToken(cp, 'logs-proxy-only');
    expect(
      (await kubectl(cp, ['create', 'clusterrole', 'logs-proxy', '--verb=get', '--resource=nodes/proxy']))
        .code,
    ).to.equal(0);
    expect(
      (
        await kubectl(cp, [
          'create',
          'clusterrolebinding',
          'logs-proxy-only',
          '--clusterrole=logs-proxy',
          '--serviceaccount=default:logs-proxy-only',
        ])
      ).code,
    ).to.equal(0);
    await eventually(async () => (await direct('/healthz', proxyOnly)).status === 200, 20_000, 'proxy in');
    const refused = await direct('/logs/', proxyOnly);
    expect(refused.status).to.equal(403);
    expect(refused.body).to.contain('subresource(s)=[log]');

    const reader = await saToken(cp, 'logs-reader');
    await grantGet(cp, 'logs-reader', 'nodes/log', 'logs-reader');
    const ok = await eventually(
      async () => {
        const r = await direct('/logs/kubelet.log', reader);
        return r.status === 200 ? r : undefined;
      },
      20_000,
      'reader allowed',
    );
    expect(ok.body).to.equal('I1206 started\n');
  });
});

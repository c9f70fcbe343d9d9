/**
 * The node API with a CSR-issued serving certificate, against a real kube-apiserver and the real
 * kube-controller-manager signer (csrsigning, with csrapproving running too: kubelet-serving CSRs are not
 * auto-approved). The operator requests a certificate for its VirtualNode; until someone approves the CSR
 * the node runs, the operator says why on the Node (Event) and the node API refuses TLS for that address.
 * After `kubectl certificate approve`, the kube-controller-manager signs it with the cluster CA, and
 * kube-apiserver (--kubelet-certificate-authority = that CA) reaches our node API: `kubectl logs` works.
 *
 * Also here, directly against our server with ServiceAccount tokens: /metrics (nodes/metrics: 401, 403
 * for a user with only nodes/proxy, 200 with metric text), 400s for malformed log queries, and a
 * followed log of a pod that gets deleted ending cleanly.
 */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { Metrics } from '../../src/metrics.js';
import type { Operator } from '../../src/operator.js';
import { CSR_PATH, type CsrServingCertificates } from '../../src/server/nodeapi/certificate.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import type { NodeApiServer } from '../../src/server/nodeapi/server.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { kubectl, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { grantGet, saToken as createSaToken } from '../support/kubectl.js';
import { listenNodeApi, nodeApiApiserverArgs, nodeApiGet, startCsrCertificates } from '../support/nodeapi.js';
import {
  adminClient,
  createShellPod,
  postVirtualNode,
  startTestOperator,
  waitNodeReady,
} from '../support/operator.js';

const NODE_IP = '127.0.0.24';
const NODE = 'vn-csr';

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; username?: string; usages?: string[] };
  status?: { certificate?: string; conditions?: { type: string }[] };
}

describe('node API with a CSR-issued serving certificate (real apiserver + signer)', function () {
  this.timeout(10 * 60_000);
  let cp: ControlPlane;
  let client: KubeClient;
  let op: Operator;
  let certs: CsrServingCertificates;
  let nodeApi: NodeApiServer;
  let clusterCa: Buffer;
  let csrName: string;

  /** A request straight to our node API, verified against the cluster CA. */
  const direct = (p: string, token?: string): Promise<{ status: number; body: string }> =>
    nodeApiGet({ host: NODE_IP, port: 10250, ca: clusterCa }, p, token);

  /** The certificate our server presents on NODE_IP, or the handshake error. */
  const handshake = (): Promise<X509Certificate> =>
    new Promise((resolve, reject) => {
      const s = tls.connect({ host: NODE_IP, port: 10250, ca: clusterCa }, () => {
        const c = s.getPeerX509Certificate();
        s.end();
        if (c) resolve(c);
        else reject(new Error('no peer certificate'));
      });
      s.on('error', reject);
    });

  const createPod = (name: string, script: string): Promise<Pod> =>
    createShellPod(client, NODE, name, script);
  const saToken = (name: string): Promise<string> => createSaToken(cp, name);

  const grant = (name: string, resource: string, sa: string): Promise<void> =>
    grantGet(cp, name, resource, sa);

  before(async () => {
    cp = await startControlPlane({
      controllerManager: true,
      // The signer, and the approver that auto-approves only kubelet *client* CSRs.
      controllerManagerArgs: ['--controllers=csrsigning,csrapproving'],
      apiserverArgs: nodeApiApiserverArgs('{pki}/ca.crt'),
    });
    clusterCa = await readFile(path.join(cp.dir, 'pki', 'ca.crt'));
    client = await adminClient(cp);
    const clock = new RealClock();
    const metrics = new Metrics(false);
    const registry = new NodeApiRegistry();
    certs = startCsrCertificates(client, clock, registry);
    nodeApi = await listenNodeApi({
      registry,
      client,
      clock,
      logger: silentLogger,
      tls: { source: certs, onRefused: (a) => certs.reportRefused(a), clientCA: clusterCa },
      ip: NODE_IP,
      followPollMs: 100,
      metrics: metrics.registry,
    });
    op = await startTestOperator({ client, clock, logger: silentLogger, nodeApi: registry, metrics });
    await postVirtualNode(client, NODE, { runtime: { type: 'sim' }, internalIP: NODE_IP });
  });

  after(async () => {
    await op?.stop();
    await nodeApi?.close();
    await certs?.stop();
    client?.close();
    await cp?.stop();
  });

  it('waits for approval: the node is Ready, the Node has a CertificatePending event, TLS is refused', async () => {
    await waitNodeReady(client, NODE, 30_000);
    const csr = await eventually(
      async () => {
        const l = await client.request<{ items: Csr[] }>({ method: 'GET', path: CSR_PATH });
        return l.items.find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving');
      },
      30_000,
      'a kubelet-serving CSR',
    );
    csrName = csr.metadata.name;
    expect(csr.spec.usages).to.deep.equal(['digital signature', 'server auth']);
    const ev = await eventually(
      async () => {
        const r = await kubectl(cp, [
          'get',
          'events',
          '-n',
          'default',
          '--field-selector',
          `involvedObject.kind=Node,involvedObject.name=${NODE},reason=CertificatePending`,
          '-o',
          'jsonpath={.items[*].message}',
        ]);
        return r.code === 0 && r.stdout.includes(csrName) ? r.stdout : undefined;
      },
      20_000,
      'the CertificatePending event',
    );
    expect(ev).to.contain(`kubectl certificate approve ${csrName}`);
    // Not auto-approved (csrapproving runs), and nothing is served for the node's address meanwhile.
    await new Promise((r) => setTimeout(r, 2000));
    const still = await client.request<Csr>({ method: 'GET', path: `${CSR_PATH}/${csrName}` });
    expect(still.status?.conditions ?? []).to.deep.equal([]);
    let refused: unknown;
    try {
      await handshake();
    } catch (err) {
      refused = err;
    }
    expect(refused, 'the TLS handshake should fail before approval').to.be.instanceOf(Error);
  });

  it('after kubectl certificate approve, serves the cluster-signed certificate, and kubectl logs works', async () => {
    const approve = await kubectl(cp, ['certificate', 'approve', csrName]);
    expect(approve.code, approve.stderr).to.equal(0);
    await certs.manager(NODE)!.whenServing();
    const cert = await handshake();
    const ca = new X509Certificate(clusterCa);
    expect(cert.checkIssued(ca)).to.equal(true);
    expect(cert.verify(ca.publicKey)).to.equal(true);
    expect(cert.subject).to.contain(`CN=system:node:${NODE}`);
    expect(cert.subject).to.contain('O=system:nodes');
    expect(cert.subjectAltName).to.equal(`DNS:${NODE}, IP Address:${NODE_IP}`);

    await createPod('echo', 'echo one; echo two; sleep 3600');
    // kube-apiserver dials 127.0.0.24:10250 and verifies our certificate with the cluster CA.
    const logs = await kubectl(cp, ['logs', 'echo']);
    expect(logs.code, logs.stderr).to.equal(0);
    expect(logs.stdout).to.equal('one\ntwo\n');
  });

  it('/metrics: invalid token 401, nodes/proxy without nodes/metrics 403, nodes/metrics 200 with metric text', async () => {
    expect((await direct('/metrics', 'not-a-token')).status).to.equal(401);
    expect((await direct('/metrics')).status).to.equal(401);
    const proxyOnly = await saToken('proxy-only');
    const scraper = await saToken('scraper');
    await grant('node-proxy', 'nodes/proxy', 'proxy-only');
    await grant('node-metrics', 'nodes/metrics', 'scraper');
    // proxy-only reads logs (nodes/proxy) but not metrics; scraper reads metrics but not logs.
    const logs = await eventually(
      async () => {
        const r = await direct('/containerLogs/default/echo/app', proxyOnly);
        return r.status === 200 ? r : undefined;
      },
      20_000,
      'proxy-only reads logs',
    );
    expect(logs.body).to.equal('one\ntwo\n');
    const denied = await direct('/metrics', proxyOnly);
    expect(denied.status).to.equal(403);
    expect(denied.body).to.contain('subresource(s)=[metrics]');
    const ok = await eventually(
      async () => {
        const r = await direct('/metrics', scraper);
        return r.status === 200 && r.body.includes(`kubelet_running_pods{node="${NODE}"} 1`) ? r : undefined;
      },
      30_000,
      'scraper reads metrics with the running pod',
    );
    expect(ok.body).to.match(/^# HELP kubelet_pod_start_duration_seconds /m);
    expect((await direct('/containerLogs/default/echo/app', scraper)).status).to.equal(403);
  });

  it('malformed log requests get 400 with a message', async () => {
    const reader = await saToken('reader');
    await grant('reader-proxy', 'nodes/proxy', 'reader');
    await eventually(async () => (await direct('/healthz', reader)).status === 200, 20_000, 'reader allowed');
    const cases: [string, string][] = [
      ['/containerLogs/default', 'malformed path'],
      ['/containerLogs/default/echo/app?tailLines=abc', 'tailLines: invalid integer'],
      ['/containerLogs/default/echo/app?sinceSeconds=-1', 'sinceSeconds: must be greater than or equal to 1'],
      [
        '/containerLogs/default/echo/app?sinceSeconds=10&sinceTime=2024-01-01T00:00:00Z',
        'at most one of sinceTime or sinceSeconds',
      ],
      ['/containerLogs/default/echo/app?limitBytes=0', 'limitBytes: must be greater than or equal to 1'],
    ];
    for (const [p, msg] of cases) {
      const r = await direct(p, reader);
      expect(r.status, p).to.equal(400);
      expect(r.body, p).to.contain(msg);
    }
  });

  it('a followed log of a pod that gets deleted ends cleanly', async () => {
    await createPod('follow', 'echo start; sleep 3600');
    const reader = (await kubectl(cp, ['create', 'token', 'reader'])).stdout.trim();
    let body = '';
    const ended = new Promise<'end' | 'aborted' | Error>((resolve) => {
      const req = https.request(
        {
          host: NODE_IP,
          port: 10250,
          path: '/containerLogs/default/follow/app?follow=true',
          ca: clusterCa,
          headers: { Authorization: `Bearer ${reader}` },
        },
        (res) => {
          expect(res.statusCode).to.equal(200);
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve('end'));
          res.on('aborted', () => resolve('aborted'));
        },
      );
      req.on('error', (err) => resolve(err));
      req.end();
    });
    await eventually(() => body === 'start\n', 20_000, 'followed output');
    const t0 = Date.now();
    await client.request({ method: 'DELETE', path: '/api/v1/namespaces/default/pods/follow' });
    const how = await Promise.race([
      ended,
      new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000)),
    ]);
    expect(how).to.equal('end');
    expect(body).to.equal('start\n');
    console.log(`      follow stream ended ${Date.now() - t0} ms after the pod delete`);
  });
});

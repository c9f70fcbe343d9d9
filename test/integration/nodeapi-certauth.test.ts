/**
 * Certificates of the node API against a real kube-apiserver. Client-certificate authentication: the user's
 * UID comes from the subject's UID attribute and reaches the API server in the SubjectAccessReview (read
 * back from the API server's audit log), a subject with two UIDs is not authenticated
 * (AllowParsingUserUIDFromCertAuth). Certificate files read again when they change, as main.ts wires them
 * (ReloadKubeletServerCertificateFile, ReloadKubeletClientCAFile): the API server reaches the node through
 * nodes/proxy once the client CA file names the CA of its kubelet client certificate, and keeps reaching it
 * over a new serving certificate and over invalid files.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { KubeClient } from '../../src/kube/client.js';
import { WebhookAuth } from '../../src/server/nodeapi/auth.js';
import {
  DynamicFileContent,
  parseCaBundle,
  parseServingPair,
} from '../../src/server/nodeapi/dynamicfiles.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { serveNodeApi } from '../../src/server/nodeapi/serve.js';
import { NodeApiServer } from '../../src/server/nodeapi/server.js';
import type { Runtime } from '../../src/runtime/types.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { kubectl, run, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { createPodNetwork } from '../support/podnetwork.js';
import { nodeApiApiserverArgs, selfSignedCert } from '../support/nodeapi.js';
import { adminClient } from '../support/operator.js';

const NODE = 'vn-certauth';
const NODE_IP = '127.0.0.41';
/** The node whose files are reloaded (a Node object of its own, pointing at the node API's port). */
const RELOAD_NODE = 'vn-certreload';

async function openssl(args: string[]): Promise<void> {
  const r = await run('openssl', args);
  if (r.code !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
}

/** A CA (CN=`name`) in `dir`/`name`.{crt,key}. */
async function makeCa(dir: string, name: string): Promise<{ crt: string; key: string }> {
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  await selfSignedCert({
    keyOut: key,
    certOut: crt,
    subject: `/CN=${name}`,
    days: 1,
    ext: ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign'],
  });
  return { crt, key };
}

/** A certificate with `subject`, signed by `ca`, for client or server auth (with `sans`). */
async function issue(
  dir: string,
  ca: { crt: string; key: string },
  name: string,
  subject: string,
  usage: 'clientAuth' | 'serverAuth',
  sans?: string,
): Promise<{ cert: Buffer; key: Buffer }> {
  const p = (s: string): string => path.join(dir, `${name}.${s}`);
  await openssl([
    'req',
    '-new',
    ...['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-keyout', p('key'), '-out', p('csr'), '-subj', subject],
  ]);
  await writeFile(
    p('ext'),
    `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=${usage}\n` +
      (sans ? `subjectAltName=${sans}\n` : ''),
  );
  await openssl([
    'x509',
    '-req',
    ...['-in', p('csr'), '-CA', ca.crt, '-CAkey', ca.key, '-days', '1', '-extfile', p('ext')],
    ...['-set_serial', `0x${randomBytes(8).toString('hex')}`, '-out', p('crt')],
  ]);
  return { cert: await readFile(p('crt')), key: await readFile(p('key')) };
}

/** GET `p` on the node API with a client certificate; the serving certificate verified with `ca`. */
function getWithCert(
  port: number,
  p: string,
  ca: Buffer,
  client?: { cert: Buffer; key: Buffer },
  host = NODE_IP,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host, port, path: p, ca, ...client, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** The CN of the serving certificate presented at host:port. */
function servedCN(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host, port, rejectUnauthorized: false }, () => {
      const cn = String(sock.getPeerCertificate().subject?.CN);
      sock.destroy();
      resolve(cn);
    });
    sock.once('error', reject);
  });
}

interface AuditedSar {
  user?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

describe('node API certificates against a real kube-apiserver', function () {
  this.timeout(5 * 60_000);
  let dir: string;
  let cp: ControlPlane | undefined;
  let client: KubeClient | undefined;
  let server: NodeApiServer | undefined;
  let port: number;
  let servingCa: Buffer;
  let clientCa: { crt: string; key: string };
  let serving: { crt: string; key: string };
  const auditLog = (): string => path.join(dir, 'audit.log');

  /** The SubjectAccessReviews the API server received, as its audit log holds them. */
  async function auditedSars(): Promise<AuditedSar[]> {
    const text = await readFile(auditLog(), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { stage?: string; requestObject?: { spec?: AuditedSar } })
      .filter((e) => e.stage === 'ResponseComplete' && e.requestObject?.spec)
      .map((e) => e.requestObject!.spec!);
  }

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-certauth-'));
    await writeFile(
      path.join(dir, 'audit-policy.yaml'),
      [
        'apiVersion: audit.k8s.io/v1',
        'kind: Policy',
        'omitStages: [RequestReceived]',
        'rules:',
        '- level: Request',
        '  resources:',
        '  - group: authorization.k8s.io',
        '    resources: [subjectaccessreviews]',
        '- level: None',
        '',
      ].join('\n'),
    );
    serving = await makeCa(dir, 'serving-ca');
    servingCa = await readFile(serving.crt);
    cp = await startControlPlane({
      apiserverArgs: [
        `--audit-policy-file=${path.join(dir, 'audit-policy.yaml')}`,
        `--audit-log-path=${auditLog()}`,
        ...nodeApiApiserverArgs(serving.crt),
      ],
    });
    client = await adminClient(cp);
    // alice may read nodes/healthz; nobody else may.
    await client.request({
      method: 'POST',
      path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'certauth-healthz' },
        rules: [{ apiGroups: [''], resources: ['nodes/healthz'], verbs: ['get'] }],
      },
    });
    await client.request({
      method: 'POST',
      path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'certauth-healthz' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'certauth-healthz' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    });

    const servingCert = await issue(
      dir,
      serving,
      'serving',
      `/CN=system:node:${NODE}`,
      'serverAuth',
      `IP:${NODE_IP}`,
    );
    clientCa = await makeCa(dir, 'client-ca');
    const registry = new NodeApiRegistry();
    registry.register({
      nodeName: NODE,
      internalIP: NODE_IP,
      runtime: {} as Runtime,
      pods: () => [],
      pod: () => undefined,
    });
    const clock = new RealClock();
    server = new NodeApiServer({
      lookup: registry,
      auth: new WebhookAuth(client, clock),
      tls: { ...servingCert, clientCA: await readFile(clientCa.crt) },
      clock,
      logger: silentLogger,
    });
    port = await server.listen(0, NODE_IP);
  });

  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await server?.close();
    client?.close();
    await cp?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes the subject UID and the credential ID in the SubjectAccessReview', async () => {
    const alice = await issue(dir, clientCa, 'alice', '/O=team-a/CN=alice/UID=alice-uid-1', 'clientAuth');
    const r = await getWithCert(port, '/healthz', servingCa, alice);
    expect(r.status, r.body).to.equal(200);
    expect(r.body.trim()).to.equal('ok');
    await eventually(async () => {
      const sars = (await auditedSars()).filter((s) => s.user === 'alice');
      expect(sars).to.have.length.greaterThan(0);
      expect(sars[0]!.uid).to.equal('alice-uid-1');
      expect(sars[0]!.groups).to.deep.equal(['team-a', 'system:authenticated']);
      expect(sars[0]!.extra?.['authentication.kubernetes.io/credential-id']?.[0]).to.match(
        /^X509SHA256=[0-9a-f]{64}$/,
      );
      return true;
    });

    // Without a UID attribute the review has no uid; a user RBAC does not know is refused.
    const bob = await issue(dir, clientCa, 'bob', '/CN=bob', 'clientAuth');
    expect((await getWithCert(port, '/healthz', servingCa, bob)).status).to.equal(403);
    await eventually(async () => {
      const sars = (await auditedSars()).filter((s) => s.user === 'bob');
      expect(sars).to.have.length.greaterThan(0);
      expect(sars[0]!.uid).to.equal(undefined);
      return true;
    });
  });

  it('does not authenticate a subject with two UIDs (401), as no certificate at all', async () => {
    const two = await issue(dir, clientCa, 'two', '/CN=alice/UID=a/UID=b', 'clientAuth');
    expect((await getWithCert(port, '/healthz', servingCa, two)).status).to.equal(401);
    const none = await getWithCert(port, '/healthz', servingCa);
    expect(none.status).to.equal(401);
  });

  it('reads the serving certificate and client CA files again: new valid content is used, invalid kept out', async function () {
    // kube-apiserver proxies nodes/proxy to no loopback address: the node's address is on a bridge (root).
    if (process.getuid?.() !== 0) this.skip();
    const network = await createPodNetwork();
    cleanups.push(() => network.stop());
    const RELOAD_IP = await network.nodeIP(0);
    const c = client!;
    const files = (f: string): string => path.join(dir, `reload-${f}`);
    const first = await issue(dir, serving, 'first', '/CN=first', 'serverAuth', `IP:${RELOAD_IP}`);
    const second = await issue(dir, serving, 'second', '/CN=second', 'serverAuth', `IP:${RELOAD_IP}`);
    await writeFile(files('tls.crt'), first.cert);
    await writeFile(files('tls.key'), first.key);
    // The client CA file starts with a CA that did not sign the API server's kubelet client certificate.
    await writeFile(files('ca.crt'), await readFile(clientCa.crt));

    const clock = new RealClock();
    const servingFiles = await DynamicFileContent.create({
      name: 'serving-cert',
      files: [files('tls.crt'), files('tls.key')],
      parse: ([crt, key]) => parseServingPair(crt!, key!),
      clock,
      logger: silentLogger,
      intervalMs: 200,
    });
    const caFile = await DynamicFileContent.create({
      name: 'client-ca-bundle',
      files: [files('ca.crt')],
      parse: ([pem]) => parseCaBundle(pem!),
      clock,
      logger: silentLogger,
      intervalMs: 200,
    });
    servingFiles.start();
    caFile.start();
    const registry = new NodeApiRegistry();
    registry.register({
      nodeName: RELOAD_NODE,
      internalIP: RELOAD_IP,
      runtime: {} as Runtime,
      pods: () => [],
      pod: () => undefined,
    });
    const served = await serveNodeApi({
      client: c,
      clock,
      logger: silentLogger,
      registry,
      certificates: { mode: 'files', source: { certificateFor: () => servingFiles.current() } },
      clientCA: () => caFile.current(),
      port: 0,
      address: RELOAD_IP,
    });
    try {
      // A Node the API server proxies to: our address and port.
      await c.request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: { apiVersion: 'v1', kind: 'Node', metadata: { name: RELOAD_NODE } },
      });
      await c.request({
        method: 'PATCH',
        path: `/api/v1/nodes/${RELOAD_NODE}/status`,
        contentType: 'application/merge-patch+json',
        body: {
          status: {
            addresses: [{ type: 'InternalIP', address: RELOAD_IP }],
            daemonEndpoints: { kubeletEndpoint: { Port: served.port } },
          },
        },
      });
      const proxied = (): Promise<{ code: number; stdout: string; stderr: string }> =>
        kubectl(cp!, ['get', '--raw', `/api/v1/nodes/${RELOAD_NODE}/proxy/healthz`]);

      expect(await servedCN(RELOAD_IP, served.port)).to.equal('first');
      const refused = await proxied();
      expect(refused.code).to.not.equal(0);
      expect(refused.stderr, refused.stderr).to.match(/provide credentials|Unauthorized/i);

      // The cluster CA (which signed the API server's kubelet client certificate) joins the bundle.
      await writeFile(
        files('ca.crt'),
        Buffer.concat([await readFile(clientCa.crt), await readFile(path.join(cp!.dir, 'pki', 'ca.crt'))]),
      );
      await eventually(
        async () => (await proxied()).stdout.trim() === 'ok',
        15_000,
        'nodes/proxy with the new CA',
      );

      // A new serving certificate (same CA): served to new connections, the API server still gets through.
      await writeFile(files('tls.crt'), second.cert);
      await writeFile(files('tls.key'), second.key);
      await eventually(async () => (await servedCN(RELOAD_IP, served.port)) === 'second', 15_000);
      expect((await proxied()).stdout.trim()).to.equal('ok');

      // Invalid content (a key that is not the certificate's, a CA file without a certificate): the old stays.
      await writeFile(files('tls.key'), first.key);
      await writeFile(files('ca.crt'), 'not a bundle\n');
      await new Promise((r) => setTimeout(r, 1000));
      expect(await servedCN(RELOAD_IP, served.port)).to.equal('second');
      expect((await proxied()).stdout.trim()).to.equal('ok');
      // The client CA bundle in use still verifies a client certificate of the first CA.
      const alice = await issue(dir, clientCa, 'alice2', '/CN=alice/UID=alice-uid-1', 'clientAuth');
      expect((await getWithCert(served.port, '/healthz', servingCa, alice, RELOAD_IP)).status).to.equal(200);

      // The cluster CA leaves the bundle: the API server's next request is refused, on the connection it
      // already holds too (the bundle in use judges each request).
      await writeFile(files('ca.crt'), await readFile(clientCa.crt));
      await eventually(async () => (await proxied()).code !== 0, 15_000, 'nodes/proxy refused again');
    } finally {
      await served.close();
      servingFiles.stop();
      caFile.stop();
    }
  });
});

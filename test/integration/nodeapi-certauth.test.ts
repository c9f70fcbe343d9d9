/**
 * Client-certificate authentication of the node API against a real kube-apiserver: the user's UID comes
 * from the subject's UID attribute and reaches the API server in the SubjectAccessReview (read back from
 * the API server's audit log), a subject with two UIDs is not authenticated (AllowParsingUserUIDFromCertAuth).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../../src/kube/client.js';
import { WebhookAuth } from '../../src/server/nodeapi/auth.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { NodeApiServer } from '../../src/server/nodeapi/server.js';
import type { Runtime } from '../../src/runtime/types.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { run, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { selfSignedCert } from '../support/nodeapi.js';
import { adminClient } from '../support/operator.js';

const NODE = 'vn-certauth';
const NODE_IP = '127.0.0.41';

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
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: NODE_IP, port, path: p, ca, ...client, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

interface AuditedSar {
  user?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

describe('node API client certificates against a real kube-apiserver', function () {
  this.timeout(5 * 60_000);
  let dir: string;
  let cp: ControlPlane | undefined;
  let client: KubeClient | undefined;
  let server: NodeApiServer | undefined;
  let port: number;
  let servingCa: Buffer;
  let clientCa: { crt: string; key: string };
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
    cp = await startControlPlane({
      apiserverArgs: [
        `--audit-policy-file=${path.join(dir, 'audit-policy.yaml')}`,
        `--audit-log-path=${auditLog()}`,
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

    const serving = await makeCa(dir, 'serving-ca');
    servingCa = await readFile(serving.crt);
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

  after(async () => {
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
});

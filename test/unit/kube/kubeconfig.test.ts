import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { connectionOf } from '../../../src/kube/client.js';
import { loadPlainKubeConfig, type KubeConfigEnvironment } from '../../../src/kube/kubeconfig.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'ctx',
    contexts: [
      { name: 'other', context: { cluster: 'c2', user: 'u2' } },
      { name: 'ctx', context: { cluster: 'c', user: 'u' } },
    ],
    clusters: [
      { name: 'c2', cluster: { server: 'https://198.51.100.1:1' } },
      { name: 'c', cluster },
    ],
    users: [
      { name: 'u2', user: { token: 'not-this-one' } },
      { name: 'u', user },
    ],
  });
}

describe('loadPlainKubeConfig', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string): string => {
    const f = path.join(dir, name);
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, text);
    return f;
  };

  /** What client-node's KubeConfig makes of the same file. */
  async function clientNode(file: string) {
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    return connectionOf(kc);
  }

  const plainCases: Record<string, [Record<string, unknown>, Record<string, unknown>]> = {
    'client certificate and CA as data': [
      { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': b64('CA') },
      { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
    ],
    'files relative to the kubeconfig, and absolute': [
      { server: 'https://127.0.0.1:6443', 'certificate-authority': 'pki/ca.crt' },
      { 'client-certificate': 'pki/client.crt', 'client-key': '' },
    ],
    'a bearer token, TLS verification off, a server name': [
      { server: 'https://127.0.0.1:6443', 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes' },
      { token: 'abc.def' },
    ],
    'no credentials at all': [{ server: 'http://127.0.0.1:8080', 'insecure-skip-tls-verify': true }, {}],
  };
  for (const [name, [cluster, user]] of Object.entries(plainCases)) {
    it(`reads ${name} as client-node does`, async () => {
      write('pki/ca.crt', 'CA FILE');
      const abs = write('pki/client.crt', 'CERT FILE');
      const u = user['client-certificate'] ? { ...user, 'client-key': abs } : user;
      const file = write('config', kubeconfig(cluster, u));
      const ours = loadPlainKubeConfig(file);
      expect(ours, 'the fast path reads it').to.not.equal(undefined);
      expect(ours).to.deep.equal(await clientNode(file));
    });
  }

  const leftToClientNode: Record<string, [Record<string, unknown>, Record<string, unknown>]> = {
    'an exec plugin': [
      { server: 'https://127.0.0.1:6443' },
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } },
    ],
    'an auth provider': [
      { server: 'https://127.0.0.1:6443' },
      { 'auth-provider': { name: 'oidc', config: {} } },
    ],
    'basic auth': [{ server: 'https://127.0.0.1:6443' }, { username: 'a', password: 'b' }],
    impersonation: [{ server: 'https://127.0.0.1:6443' }, { token: 't', as: 'someone' }],
    'a token file': [{ server: 'https://127.0.0.1:6443' }, { 'token-file': '/nonexistent' }],
    'a proxy': [{ server: 'https://127.0.0.1:6443', 'proxy-url': 'http://127.0.0.1:3128' }, { token: 't' }],
  };
  for (const [name, [cluster, user]] of Object.entries(leftToClientNode)) {
    it(`leaves ${name} to client-node`, () => {
      expect(loadPlainKubeConfig(write('config', kubeconfig(cluster, user)))).to.equal(undefined);
    });
  }

  it('leaves a missing current context, cluster or user to client-node (its errors are the ones shown)', () => {
    const doc = kubeconfig({ server: 'https://127.0.0.1:6443' }, { token: 't' });
    expect(
      loadPlainKubeConfig(write('a', doc.replace('current-context: ctx', 'current-context: none'))),
    ).to.equal(undefined);
    expect(loadPlainKubeConfig(write('b', doc.replace('cluster: c\n', 'cluster: gone\n')))).to.equal(
      undefined,
    );
    expect(loadPlainKubeConfig(write('c', doc.replace('user: u\n', 'user: gone\n')))).to.equal(undefined);
  });

  it('throws when the named file cannot be read, as client-node does', () => {
    expect(() => loadPlainKubeConfig(path.join(dir, 'missing'))).to.throw(/ENOENT/);
  });

  describe('the default lookup', () => {
    const envOf = (env: NodeJS.ProcessEnv, home?: string): KubeConfigEnvironment => ({
      env,
      home,
      serviceAccountDir: path.join(dir, 'sa'),
    });

    it('takes $KUBECONFIG when it names one file, and leaves several to client-node', () => {
      const file = write('k1', kubeconfig({ server: 'https://127.0.0.1:1' }, { token: 't1' }));
      const other = write('k2', kubeconfig({ server: 'https://127.0.0.1:2' }, { token: 't2' }));
      expect(loadPlainKubeConfig(undefined, envOf({ KUBECONFIG: file }, dir))?.server).to.equal(
        'https://127.0.0.1:1',
      );
      expect(
        loadPlainKubeConfig(undefined, envOf({ KUBECONFIG: [file, other].join(path.delimiter) }, dir)),
      ).to.equal(undefined);
    });

    it('then ~/.kube/config, then the in-cluster service account', async () => {
      write('sa/token', 'sa-token');
      write('sa/ca.crt', 'SA CA');
      const env = { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' };
      const inCluster = loadPlainKubeConfig(undefined, envOf(env, dir));
      const kc = new KubeConfig();
      const saved = { ...process.env };
      Object.assign(process.env, env);
      try {
        kc.loadFromCluster(dir); // reads <dir>/var/run/secrets/...: write the same files there
      } finally {
        for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
      }
      write('var/run/secrets/kubernetes.io/serviceaccount/token', 'sa-token');
      write('var/run/secrets/kubernetes.io/serviceaccount/ca.crt', 'SA CA');
      expect(inCluster).to.deep.equal(await connectionOf(kc));
      expect(inCluster?.server).to.equal('https://[fd00::1]:443');

      write('.kube/config', kubeconfig({ server: 'https://127.0.0.1:3' }, { token: 'home' }));
      expect(loadPlainKubeConfig(undefined, envOf(env, dir))?.server).to.equal('https://127.0.0.1:3');
    });

    it('finds nothing without a kubeconfig or a service account (client-node then uses its default)', () => {
      expect(loadPlainKubeConfig(undefined, envOf({}, path.join(dir, 'nohome')))).to.equal(undefined);
    });
  });
});

/**
 * A private image registry for tests: Debian's docker-registry (the distribution registry) on 127.0.0.1 with
 * TLS from a CA of its own and htpasswd basic auth, installed by scripts/registry.sh. Images are pushed into
 * it from the cached test image tars with skopeo. A containerd trusts it through `registryCAs` (certs.d).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../scripts/registry.sh', import.meta.url));
const CONTAINERD_SCRIPT = fileURLToPath(new URL('../../scripts/containerd.sh', import.meta.url));

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the prefix of its image references and the key of its credentials. */
  host: string;
  /** The CA that signed its serving certificate. */
  caFile: string;
  username: string;
  password: string;
  /** Pushes the test busybox image (OCI layout tar) as `<host>/<repository>:<tag>`; resolves the reference. */
  pushBusybox(repository: string, tag: string): Promise<string>;
  stop(): Promise<void>;
}

function run(cmd: string, args: string[], timeoutMs = 5 * 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${String(stderr).trim() || err.message}`));
      else resolve(String(stdout));
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function tlsFiles(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const f = (n: string) => path.join(dir, n);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=registry-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  ]);
  await run('openssl', [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    f('server.key'),
    '-out',
    f('server.csr'),
  ]);
  await writeFile(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
    '-out',
    f('server.crt'),
  ]);
  return { ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key') };
}

async function waitListening(
  host: string,
  caFile: string,
  child: ChildProcess,
  timeoutMs = 30_000,
): Promise<void> {
  const { request } = await import('node:https');
  const ca = await readFile(caFile);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}`);
    const status = await new Promise<number>((resolve) => {
      const req = request(`https://${host}/v2/`, { ca, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
      req.end();
    });
    // 401: up, and asking for credentials.
    if (status === 401) return;
    if (Date.now() > deadline)
      throw new Error(`the registry at ${host} did not answer (last status ${status})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function startRegistry(
  opts: { username?: string; password?: string } = {},
): Promise<TestRegistry> {
  const binary = (await run('bash', [SCRIPT, 'install'], 15 * 60_000)).trim().split('\n').pop()!;
  const dir = await mkdtemp(path.join(tmpdir(), 'ko-registry-'));
  const username = opts.username ?? 'e2e-user';
  const password = opts.password ?? `pw-${Math.random().toString(36).slice(2, 10)}`;
  const tls = await tlsFiles(dir);
  await writeFile(path.join(dir, 'htpasswd'), await run('htpasswd', ['-Bbn', username, password]));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${path.join(dir, 'data')}`,
    'http:',
    `  addr: ${host}`,
    '  tls:',
    `    certificate: ${tls.cert}`,
    `    key: ${tls.key}`,
    'auth:',
    '  htpasswd:',
    '    realm: kubelet-operator-test',
    `    path: ${path.join(dir, 'htpasswd')}`,
    '',
  ].join('\n');
  await writeFile(path.join(dir, 'config.yml'), config);
  const child = spawn(binary, ['serve', path.join(dir, 'config.yml')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  // A test process that ends without stop() (a failed before hook, ^C) takes its registry with it.
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitListening(host, tls.ca, child);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${stderr}`);
  }
  return {
    host,
    caFile: tls.ca,
    username,
    password,
    async pushBusybox(repository, tag) {
      const out = await mkdtemp(path.join(dir, 'images-'));
      // Lines of "<tar> <names...>": the cached busybox and pause layouts.
      const lines = (await run('bash', [CONTAINERD_SCRIPT, 'images', out])).trim().split('\n');
      const tar = lines.find((l) => l.includes('busybox'))!.split(' ')[0]!;
      const ref = `${host}/${repository}:${tag}`;
      await run('skopeo', [
        'copy',
        '--quiet',
        '--dest-tls-verify=false',
        '--dest-creds',
        `${username}:${password}`,
        `oci-archive:${tar}:latest`,
        `docker://${ref}`,
      ]);
      return ref;
    },
    stop,
  };
}

/**
 * The node API's streaming paths and container logs through the real API server, on a containerd-backed
 * VirtualNode run by the operator: kube-apiserver dials the node's loopback InternalIP on :10250 with its
 * kubelet client certificate, we proxy exec/attach/port-forward to containerd's streaming server, and
 * `kubectl logs` reads the CRI log files containerd writes. kubectl 1.30+ speaks WebSocket to the API
 * server, and since our nodes declare ExtendWebSocketsToKubelet the API server passes that WebSocket through
 * to us (v5 exec/attach, which we translate to containerd's SPDY; port-forward's tunnelled SPDY, which we
 * carry): the node's own count of WebSocket streams and the API server's
 * apiserver_websocket_streaming_requests_total{proxy_type="proxied_to_kubelet"} say so.
 * KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false / KUBECTL_PORT_FORWARD_WEBSOCKETS=false make it SPDY end to end
 * (proxied to containerd as before); a v4 WebSocket straight to our server is proxied to containerd, which
 * speaks it. A simulated-runtime node in the same operator answers exec with a clear error.
 *
 * OPERATOR_TEST_LOG=debug shows the operator's log.
 */
import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod, PodStatus } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { parseCriLogLine } from '../../src/server/nodeapi/logs.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import type { NodeApiServer } from '../../src/server/nodeapi/server.js';
import { RealClock } from '../../src/util/clock.js';
import { criRuntimeSpec, startContainerd, type TestContainerd } from '../support/containerd.js';
import {
  freePort,
  kubectl,
  run,
  startControlPlane,
  type ControlPlane,
  type RunResult,
} from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { spawnKubectl } from '../support/kubectl.js';
import { listenNodeApi, nodeApiApiserverArgs, servingPki, upgradeRequest } from '../support/nodeapi.js';
import {
  adminClient,
  cstatus,
  isGone,
  postVirtualNode,
  startTestOperator,
  testLogger,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const NS = 'stream-e2e';
const CRI_NODE = 'vn-stream';
const CRI_IP = '127.0.0.51';
const SIM_NODE = 'vn-stream-sim';
const SIM_IP = '127.0.0.52';

describe('node API streaming and logs through the real API server (containerd)', function () {
  this.timeout(5 * 60_000);
  let cp: ControlPlane | undefined;
  let ctd: TestContainerd | undefined;
  let client: KubeClient;
  let op: Operator | undefined;
  const servers: NodeApiServer[] = [];
  let dir = '';
  let logRoot = '';
  let servingCa: Buffer;
  let kubeletCert: Buffer;
  let kubeletKey: Buffer;
  let webPort = 0;

  const podPath = (name: string) => `/api/v1/namespaces/${NS}/pods/${name}`;
  const getPod = (name: string) => client.request<Pod>({ method: 'GET', path: podPath(name) });
  const createPod = (name: string, container: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
    client.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        metadata: { name, namespace: NS },
        spec: {
          nodeName: CRI_NODE,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'c', image: 'busybox', imagePullPolicy: 'IfNotPresent', ...container }],
          ...spec,
        },
      },
    });
  const waitPod = (name: string, pred: (s: PodStatus) => boolean, what: string, timeoutMs = 60_000) =>
    waitPodStatus(client, NS, name, pred, what, timeoutMs);
  const running = (name: string) =>
    waitPod(name, (s) => cstatus(s)?.state?.running !== undefined, 'container running');
  const k = (args: string[], input?: string): Promise<RunResult> => kubectl(cp!, ['-n', NS, ...args], input);
  const kSpdy = (args: string[]): Promise<RunResult> =>
    run('kubectl', ['--kubeconfig', cp!.kubeconfigPath, '-n', NS, ...args], {
      env: { ...process.env, KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' },
    });
  const gone = (p: string): Promise<true | undefined> => isGone(client, p);

  before(async function () {
    this.timeout(20 * 60_000); // cold binaries build, package install
    dir = await mkdtemp(path.join(tmpdir(), 'ko-stream-'));
    logRoot = path.join(dir, 'pods');
    const pki = await servingPki(dir, [
      { name: CRI_NODE, ip: CRI_IP },
      { name: SIM_NODE, ip: SIM_IP },
    ]);
    servingCa = await readFile(pki.ca);
    [cp, ctd] = await Promise.all([
      startControlPlane({ apiserverArgs: nodeApiApiserverArgs(pki.ca) }),
      startContainerd(),
    ]);
    kubeletCert = await readFile(path.join(cp.dir, 'pki', 'apiserver-kubelet-client.crt'));
    kubeletKey = await readFile(path.join(cp.dir, 'pki', 'apiserver-kubelet-client.key'));
    client = await adminClient(cp, { namespace: NS, client: { qps: 200, burst: 400 } });

    const clock = new RealClock();
    const logger = testLogger();
    const registry = new NodeApiRegistry();
    const tlsOpts = {
      cert: await readFile(pki.cert),
      key: await readFile(pki.key),
      clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
    };
    for (const ip of [CRI_IP, SIM_IP])
      servers.push(
        await listenNodeApi({ registry, client, clock, logger, tls: tlsOpts, ip, followPollMs: 100 }),
      );
    op = await startTestOperator({ client, clock, logger, nodeApi: registry });
    await postVirtualNode(client, CRI_NODE, { internalIP: CRI_IP, runtime: criRuntimeSpec(ctd, logRoot) });
    await postVirtualNode(client, SIM_NODE, { internalIP: SIM_IP, runtime: { type: 'sim' } });
    for (const n of [CRI_NODE, SIM_NODE]) await waitNodeReady(client, n, 60_000);

    // The pods every test below uses, started together (two cores: a pod start is ~1 s here).
    webPort = await freePort();
    await Promise.all([
      createPod('shell', { command: ['sleep', '3600'] }),
      createPod('logger', {
        command: ['sh', '-c', 'echo one; echo two; sleep 1; echo three >&2; exec sleep 3600'],
      }),
      createPod('web', {
        command: [
          'sh',
          '-c',
          `mkdir -p /www && echo hello-from-httpd > /www/index.html && exec httpd -f -p ${webPort} -h /www`,
        ],
        readinessProbe: { httpGet: { path: '/index.html', port: webPort }, periodSeconds: 1 },
      }),
      client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        body: {
          metadata: { name: 'simpod', namespace: NS },
          spec: {
            nodeName: SIM_NODE,
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: 'c', image: 'busybox', command: ['sh', '-c', 'echo sim-hello; sleep 3600'] },
            ],
          },
        },
      }),
    ]);
    await Promise.all(['shell', 'logger', 'web', 'simpod'].map((n) => running(n)));
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await op?.stop().catch(() => undefined);
    await Promise.allSettled(servers.map((s) => s.close()));
    client?.close();
    await Promise.allSettled([cp?.stop(), ctd?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** WebSocket streams the cri node served itself (ExtendWebSocketsToKubelet), by subresource. */
  const wsServed = () => servers[0]!.webSocketStreamingRequests;

  it('kubectl exec prints the output and exits with the command exit code (WebSocket and SPDY)', async () => {
    const before = wsServed().exec;
    const ws = await k(['exec', 'shell', '--', 'sh', '-c', 'echo hi; echo err >&2; exit 3']);
    expect(ws.stdout, ws.stderr).to.equal('hi\n');
    expect(ws.stderr).to.contain('err\n');
    expect(ws.code, ws.stderr).to.equal(3);
    expect(wsServed().exec, 'kubectl exec reached the node as a WebSocket').to.equal(before + 1);
    const spdy = await kSpdy(['exec', 'shell', '--', 'sh', '-c', 'echo hi; echo err >&2; exit 3']);
    expect(spdy.stdout, spdy.stderr).to.equal('hi\n');
    expect(spdy.stderr).to.contain('err\n');
    expect(spdy.code, spdy.stderr).to.equal(3);
    expect(wsServed().exec, 'SPDY is proxied, not translated').to.equal(before + 1);
    const ok = await k(['exec', 'shell', '--', 'echo', 'zero']);
    expect(ok).to.include({ code: 0, stdout: 'zero\n' });
    expect(wsServed().exec).to.equal(before + 2);
  });

  it('kubectl exec -i passes stdin through, and its end (the v5 close signal) ends the command', async () => {
    const before = wsServed().exec;
    const input = 'line one\nline two\n'.repeat(200);
    const r = await k(['exec', '-i', 'shell', '--', 'cat'], input);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(input);
    const wc = await k(['exec', '-i', 'shell', '--', 'wc', '-l'], input);
    expect(wc.stdout.trim()).to.equal('400');
    const big = 'x'.repeat(1 << 20);
    const mixed = await k(['exec', '-i', 'shell', '--', 'sh', '-c', 'wc -c; echo bye >&2; exit 4'], big);
    expect(mixed.stdout.trim(), mixed.stderr).to.equal(String(1 << 20));
    expect(mixed.stderr).to.contain('bye\n');
    expect(mixed.code).to.equal(4);
    expect(wsServed().exec).to.equal(before + 3);
  });

  it('a WebSocket exec straight to the node API gets the output and the exit status', async () => {
    const r = await upgradeRequest({
      host: CRI_IP,
      port: 10250,
      path: `/exec/${NS}/shell/c?command=sh&command=-c&command=${encodeURIComponent('echo hi; exit 3')}&output=1&error=1`,
      ca: servingCa,
      cert: kubeletCert,
      key: kubeletKey,
      protocol: 'v4.channel.k8s.io',
    });
    expect(r.status, r.head + r.body).to.equal(101);
    expect(r.head).to.match(/Sec-WebSocket-Protocol: v4\.channel\.k8s\.io/i);
    expect(r.channels.get(1)).to.equal('hi\n');
    const status = JSON.parse(r.channels.get(3) ?? '{}') as {
      status?: string;
      reason?: string;
      details?: { causes?: { reason?: string; message?: string }[] };
    };
    expect(status).to.include({ status: 'Failure', reason: 'NonZeroExitCode' });
    expect(status.details?.causes).to.deep.include({ reason: 'ExitCode', message: '3' });
  });

  it('kubectl attach -i talks to the container’s stdin and stdout', async () => {
    await createPod(
      'attach',
      {
        command: ['sh', '-c', 'echo ready; while read line; do echo "got $line"; done; echo bye'],
        stdin: true,
        stdinOnce: true,
      },
      { restartPolicy: 'Never' },
    );
    await running('attach');
    const before = wsServed().attach;
    const r = await k(['attach', '-i', 'attach', '-c', 'c'], 'ping\npong\n');
    expect(r.stdout, r.stderr).to.contain('got ping\ngot pong\n');
    expect(wsServed().attach, 'kubectl attach reached the node as a WebSocket').to.equal(before + 1);
    // stdin closed with the attach session (stdinOnce): the loop ends and the container exits 0.
    const done = await waitPod('attach', (s) => s.phase === 'Succeeded', 'Succeeded');
    expect(cstatus(done.status)?.state?.terminated?.exitCode).to.equal(0);
    const logs = await k(['logs', 'attach']);
    expect(logs.stdout).to.equal('ready\ngot ping\ngot pong\nbye\n');
  });

  it('kubectl attach (output only) follows a container that prints periodically', async () => {
    await createPod('ticker', {
      command: ['sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done'],
    });
    await running('ticker');
    const a = spawnKubectl(cp!, ['-n', NS, 'attach', 'ticker']);
    try {
      await eventually(() => (/tick \d+\ntick \d+\n/.test(a.out()) ? true : undefined), 30_000, 'two ticks');
      const nums = [...a.out().matchAll(/tick (\d+)/g)].map((m) => Number(m[1]));
      expect(nums[1]! - nums[0]!).to.equal(1);
    } finally {
      a.kill();
    }
  });

  it('kubectl port-forward to an httpd container serves its page (WebSocket and SPDY)', async () => {
    await waitPod(
      'web',
      (s) => s.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      'Ready',
    );
    for (const env of [{}, { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' }]) {
      const before = wsServed().portforward;
      const pf = spawnKubectl(
        cp!,
        ['-n', NS, 'port-forward', '--address', '127.0.0.1', 'pod/web', `:${webPort}`],
        env,
      );
      try {
        const local = await eventually(
          () => /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(pf.out())?.[1],
          30_000,
          `port-forward listening (${JSON.stringify(env)}): ${pf.err()}`,
        );
        for (let i = 0; i < 2; i++) {
          const res = await fetch(`http://127.0.0.1:${local}/index.html`);
          expect(res.status).to.equal(200);
          expect(await res.text()).to.equal('hello-from-httpd\n');
        }
        // One tunnel per kubectl port-forward over WebSocket; SPDY is proxied as before.
        expect(wsServed().portforward, JSON.stringify(env)).to.equal(
          before + ('KUBECTL_PORT_FORWARD_WEBSOCKETS' in env ? 0 : 1),
        );
      } finally {
        pf.kill();
      }
    }
  });

  it('the node declares ExtendWebSocketsToKubelet and the API server passed the WebSockets through', async () => {
    const node = await client.request<{ status?: { declaredFeatures?: string[] } }>({
      method: 'GET',
      path: `/api/v1/nodes/${CRI_NODE}`,
    });
    expect(node.status?.declaredFeatures).to.include('ExtendWebSocketsToKubelet');
    const metrics = await k(['get', '--raw', '/metrics']);
    const series = (proxyType: string, sub: string): number => {
      const line = metrics.stdout
        .split('\n')
        .find(
          (l) =>
            l.startsWith('apiserver_websocket_streaming_requests_total{') &&
            l.includes(`proxy_type="${proxyType}"`) &&
            l.includes(`subresource="${sub}"`),
        );
      return line ? Number(line.split(' ').at(-1)) : 0;
    };
    const served = wsServed();
    for (const sub of ['exec', 'attach', 'portforward'] as const) {
      expect(served[sub], `${sub} WebSockets served by the node`).to.be.above(0);
      expect(series('proxied_to_kubelet', sub), sub).to.be.at.least(served[sub]);
      expect(series('translated_at_apiserver', sub), sub).to.equal(0);
    }
  });

  it('kubectl logs on a containerd pod: plain, --tail, --timestamps, --limit-bytes', async () => {
    const plain = await eventually(
      async () => {
        const r = await k(['logs', 'logger']);
        return r.stdout.split('\n').length >= 4 ? r : undefined;
      },
      20_000,
      'three lines logged',
    );
    expect(plain.stdout, plain.stderr).to.equal('one\ntwo\nthree\n');
    expect((await k(['logs', 'logger', '--tail=2'])).stdout).to.equal('two\nthree\n');
    expect((await k(['logs', 'logger', '--tail=0'])).stdout).to.equal('');
    expect((await k(['logs', 'logger', '--limit-bytes=6'])).stdout).to.equal('one\ntw');
    const ts = await k(['logs', 'logger', '--timestamps']);
    const lines = ts.stdout.trimEnd().split('\n');
    expect(lines).to.have.length(3);
    // The timestamps are containerd's own, exactly as in its CRI log file.
    const pod = await getPod('logger');
    const file = path.join(
      logRoot,
      `${NS}_logger_${pod.metadata.uid}`,
      'c',
      `${cstatus(pod.status)?.restartCount ?? 0}.log`,
    );
    const records = (await readFile(file, 'utf8')).trimEnd().split('\n').map(parseCriLogLine);
    expect(lines).to.deep.equal(records.map((r) => `${r.time} ${r.text}`));
    expect(records.map((r) => r.stream)).to.deep.equal(['stdout', 'stdout', 'stderr']);
  });

  it('kubectl logs --previous reads the container before a liveness restart', async () => {
    await createPod('restarter', {
      command: [
        'sh',
        '-c',
        'echo "run $(cat /proc/sys/kernel/random/uuid)"; touch /tmp/healthy; exec sleep 3600',
      ],
      livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
    });
    const first = await running('restarter');
    const firstLog = await eventually(
      async () => {
        const r = await k(['logs', 'restarter']);
        return /^run [0-9a-f-]{36}\n$/.test(r.stdout) ? r.stdout : undefined;
      },
      20_000,
      'first run logged',
    );
    const none = await k(['logs', 'restarter', '--previous']);
    expect(none.code).to.not.equal(0);
    expect(none.stderr).to.match(/previous terminated container "c" in pod "restarter" not found/);
    // Fail the liveness probe once: the kubelet kills the container and starts a new one.
    const rm1 = await k(['exec', 'restarter', '--', 'rm', '/tmp/healthy']);
    expect(rm1.code, rm1.stderr).to.equal(0);
    const pod = await waitPod(
      'restarter',
      (s) =>
        (cstatus(s)?.restartCount ?? 0) === 1 &&
        cstatus(s)?.state?.running !== undefined &&
        cstatus(s)?.lastState?.terminated !== undefined,
      'restarted once, new container running',
    );
    expect(cstatus(pod.status)?.lastState?.terminated?.containerID).to.equal(
      cstatus(first.status)?.containerID,
    );
    const current = await eventually(
      async () => {
        const r = await k(['logs', 'restarter']);
        return /^run [0-9a-f-]{36}\n$/.test(r.stdout) ? r.stdout : undefined;
      },
      20_000,
      'second run logged',
    );
    const previous = await k(['logs', 'restarter', '--previous']);
    expect(previous.code, previous.stderr).to.equal(0);
    expect(previous.stdout).to.equal(firstLog);
    expect(current).to.not.equal(firstLog);
    const podDir = path.join(logRoot, `${NS}_restarter_${pod.metadata.uid}`, 'c');
    const fileText = async (f: string) =>
      (await readFile(path.join(podDir, f), 'utf8'))
        .trimEnd()
        .split('\n')
        .map((l) => `${parseCriLogLine(l).text}\n`)
        .join('');
    expect(await fileText('0.log')).to.equal(previous.stdout);
    expect(await fileText('1.log')).to.equal(current);
  });

  it('kubectl logs -f streams, and ends cleanly when the pod is deleted', async () => {
    await createPod('follow', {
      command: ['sh', '-c', 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 1; done'],
    });
    await running('follow');
    const f = spawnKubectl(cp!, ['-n', NS, 'logs', '-f', 'follow']);
    try {
      await eventually(
        () => (f.out().split('\n').length >= 4 ? true : undefined),
        30_000,
        'three lines followed',
      );
      await client.request({ method: 'DELETE', path: podPath('follow') });
      const code = await f.exit(60_000);
      expect(code, f.err()).to.equal(0);
      const lines = f.out().trimEnd().split('\n');
      lines.forEach((l, i) => expect(l).to.equal(`line ${i}`));
    } finally {
      f.kill();
    }
    await eventually(() => gone(podPath('follow')), 30_000, 'follow pod gone');
  });

  it('sim pods: logs work, exec is refused with a clear error; malformed requests get 400', async () => {
    const logs = await k(['logs', 'simpod']);
    expect(logs.stdout, logs.stderr).to.equal('sim-hello\n');
    const ex = await k(['exec', 'simpod', '--', 'ls']);
    expect(ex.code).to.not.equal(0);
    expect(ex.stderr).to.contain('the simulated runtime has no streaming server (exec)');
    const direct = (p: string, upgrade?: string) =>
      upgradeRequest({
        host: SIM_IP,
        port: 10250,
        path: p,
        ca: servingCa,
        cert: kubeletCert,
        key: kubeletKey,
        upgrade,
      });
    const cases: [string, number, RegExp][] = [
      [`/exec/${NS}/simpod/c?command=ls&output=1`, 501, /no streaming server/],
      [`/exec/${NS}/simpod?command=ls&output=1`, 400, /malformed path/],
      [`/exec/${NS}/shell/c?command=ls`, 400, /at least 1 of stdin, stdout, stderr/],
      [`/exec/${NS}/shell/c?output=1`, 400, /"command" is required/],
      [`/exec/${NS}/shell/c?command=ls&output=yes`, 400, /output/],
      [`/exec/${NS}/shell/nope?command=ls&output=1`, 404, /container "nope" not found/],
      [`/attach/${NS}/nope/c?output=1`, 404, /pod "stream-e2e\/nope" not found/],
      [`/portForward/${NS}/web`, 400, /"port" is required/],
      [`/portForward/${NS}/web?port=http`, 400, /not a port/],
    ];
    for (const [p, code, msg] of cases) {
      const r = await direct(p);
      expect(r.status, `${p}: ${r.head}`).to.equal(code);
      // A v1 Status: the API server passes it on, and kubectl (1.32 here) shows its message.
      expect((JSON.parse(r.body) as { message?: string }).message, p).to.match(msg);
    }
    // SPDY upgrades are validated the same way.
    const spdy = await direct(`/exec/${NS}/shell/c?command=ls`, 'SPDY/3.1');
    expect(spdy.status).to.equal(400);
  });
});

/**
 * The node API through the real API server path: kube-apiserver dials the VirtualNode's InternalIP
 * (a loopback address of its own) on :10250, verifies our serving certificate with
 * --kubelet-certificate-authority and presents its kubelet client certificate; `kubectl logs` must return
 * exactly what the (simulated) container wrote. Authentication and authorization are checked directly
 * (invalid token 401, a ServiceAccount without nodes/proxy 403, with it 200) and through the API server's
 * nodes/proxy subresource.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { kubectl, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { KubeletResourceMetrics, parseExposition } from '../support/kubelet-metrics.js';
import { grantGet, kubectlOk, saToken as createSaToken } from '../support/kubectl.js';
import { nodeApiGet, startNodeApiEnv, type NodeApiEnv } from '../support/nodeapi.js';
import { createShellPod, isGone } from '../support/operator.js';

const NODE_IP = '127.0.0.23';
const NODE = 'vn-nodeapi';

describe('node API through the real API server (sim runtime)', function () {
  this.timeout(10 * 60_000);
  let env: NodeApiEnv | undefined;
  let cp: ControlPlane;
  let client: KubeClient;
  let servingCa: Buffer;

  /** A request straight to our node API (not through the API server). */
  const direct = (p: string, token?: string): Promise<{ status: number; body: string }> =>
    nodeApiGet({ host: NODE_IP, port: 10250, ca: servingCa }, p, token);
  const createPod = (name: string, script: string): Promise<Pod> =>
    createShellPod(client, NODE, name, script);
  const saToken = (name: string): Promise<string> => createSaToken(cp, name);

  before(async () => {
    env = await startNodeApiEnv({
      node: NODE,
      ip: NODE_IP,
      spec: { runtime: { type: 'sim' } },
      followPollMs: 100,
    });
    ({ cp, client, servingCa } = env);
    await createPod('echo', 'echo one; echo two; echo three >&2; sleep 3600');
  });

  after(async () => {
    await env?.stop();
  });

  it('kubectl logs returns exactly what the container wrote (plain, --tail, --timestamps)', async () => {
    const plain = await kubectlOk(cp, ['logs', 'echo']);
    expect(plain.stdout).to.equal('one\ntwo\nthree\n');
    const tail = await kubectl(cp, ['logs', 'echo', '--tail=2']);
    expect(tail.stdout).to.equal('two\nthree\n');
    const limited = await kubectl(cp, ['logs', 'echo', '--limit-bytes=6']);
    expect(limited.stdout).to.equal('one\ntw');
    const ts = await kubectl(cp, ['logs', 'echo', '--timestamps']);
    const lines = ts.stdout.trimEnd().split('\n');
    expect(lines).to.have.length(3);
    lines.forEach((l, i) =>
      expect(l).to.match(
        new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z ${['one', 'two', 'three'][i]}$`),
      ),
    );
    const since = await kubectl(cp, ['logs', 'echo', '--since=1h']);
    expect(since.stdout).to.equal('one\ntwo\nthree\n');
  });

  it('kubectl logs -f streams, and the stream ends cleanly when the pod is deleted', async () => {
    await createPod('follow', 'echo start; sleep 3600');
    const child = spawn('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'logs', '-f', 'follow'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await eventually(() => out === 'start\n', 20_000, 'followed output');
      await client.request({ method: 'DELETE', path: '/api/v1/namespaces/default/pods/follow' });
      const code = await Promise.race([
        exited,
        new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000)),
      ]);
      expect(code).to.equal(0);
      expect(out).to.equal('start\n');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('kubectl logs --previous reads the container that ran before a restart', async () => {
    const none = await kubectl(cp, ['logs', 'echo', '--previous']);
    expect(none.code).to.not.equal(0);
    expect(none.stderr).to.include('previous terminated container "app" in pod "echo" not found');
    await createPod('restarts', 'echo run; sleep 1; exit 1');
    const p = await eventually(
      async () => {
        const pod = await client.request<Pod>({
          method: 'GET',
          path: '/api/v1/namespaces/default/pods/restarts',
        });
        const cs = pod.status?.containerStatuses?.[0];
        return cs && cs.restartCount >= 1 && cs.lastState?.terminated ? pod : undefined;
      },
      60_000,
      'a restart',
    );
    const finishedAt = Date.parse(p.status!.containerStatuses![0]!.lastState!.terminated!.finishedAt!);
    const stamp = (out: string): number => {
      const lines = out.trimEnd().split('\n');
      expect(lines, out).to.have.length(1);
      const [ts, text] = lines[0]!.split(' ');
      expect(text).to.equal('run');
      return Date.parse(ts!);
    };
    const prev = await kubectlOk(cp, ['logs', 'restarts', '--previous', '--timestamps']);
    // Written by the first run, before it ended; the current run wrote its line after that.
    expect(stamp(prev.stdout)).to.be.at.most(finishedAt);
    const cur = await kubectlOk(cp, ['logs', 'restarts', '--timestamps']);
    expect(stamp(cur.stdout)).to.be.at.least(finishedAt);
    expect((await kubectl(cp, ['logs', 'restarts', '-p'])).stdout).to.equal('run\n');
  });

  it('refuses anonymous and invalid tokens (401), and malformed requests (400), unknown pods (404)', async () => {
    expect((await direct('/containerLogs/default/echo/app')).status).to.equal(401);
    const bad = await direct('/containerLogs/default/echo/app', 'not-a-token');
    expect(bad.status).to.equal(401);
    expect(bad.body).to.contain('Unauthorized');
  });

  it('a ServiceAccount without nodes/proxy gets 403; one with it reads logs', async () => {
    const nobody = await saToken('nobody');
    const denied = await direct('/containerLogs/default/echo/app', nobody);
    expect(denied.status).to.equal(403);
    expect(denied.body).to.contain('system:serviceaccount:default:nobody');

    const reader = await saToken('reader');
    await kubectlOk(cp, ['create', 'clusterrole', 'node-proxy', '--verb=get', '--resource=nodes/proxy']);
    await kubectlOk(cp, [
      'create',
      'clusterrolebinding',
      'reader-node-proxy',
      '--clusterrole=node-proxy',
      '--serviceaccount=default:reader',
      '--user=alice',
    ]);
    const ok = await eventually(
      async () => {
        const r = await direct('/containerLogs/default/echo/app?tailLines=1', reader);
        return r.status === 200 ? r : undefined;
      },
      20_000,
      'reader allowed',
    );
    expect(ok.body).to.equal('three\n');
    const pods = await direct('/pods', reader);
    expect(pods.status).to.equal(200);
    const list = JSON.parse(pods.body) as { kind: string; items: Pod[] };
    expect(list.kind).to.equal('PodList');
    expect(list.items.map((p) => p.metadata.name)).to.include('echo');
    const running = await direct('/runningpods/', reader);
    expect((JSON.parse(running.body) as { items: Pod[] }).items.map((p) => p.metadata.name)).to.include(
      'echo',
    );
    expect((await direct('/healthz', reader)).body).to.equal('ok\n');

    // Malformed and unknown requests, with a caller that is allowed in.
    const malformed = await direct('/containerLogs/default/echo', reader);
    expect(malformed.status).to.equal(400);
    expect(malformed.body).to.match(/malformed path/);
    const badQuery = await direct('/containerLogs/default/echo/app?tailLines=x', reader);
    expect(badQuery.status).to.equal(400);
    expect(badQuery.body).to.contain('tailLines');
    expect((await direct('/containerLogs/default/nope/app', reader)).status).to.equal(404);
    expect((await direct('/containerLogs/default/echo/nope', reader)).status).to.equal(404);
    expect((await direct('/nope', reader)).status).to.equal(404);
  });

  it('stats and metrics: 401 anonymous, 403 without nodes/stats or nodes/metrics, kubelet names with them', async () => {
    for (const p of ['/stats/summary', '/metrics/resource', '/metrics/probes']) {
      expect((await direct(p)).status, p).to.equal(401);
      expect((await direct(p, 'not-a-token')).status, p).to.equal(401);
    }
    // nodes/proxy alone is not enough: the kubelet authorizes these paths as nodes/stats and nodes/metrics.
    const proxyOnly = await saToken('proxy-only');
    await grantGet(cp, 'proxy-only', 'nodes/proxy', 'proxy-only');
    await eventually(
      async () => (await direct('/healthz', proxyOnly)).status === 200,
      20_000,
      'proxy-only in',
    );
    const forbidden = await direct('/stats/summary', proxyOnly);
    expect(forbidden.status).to.equal(403);
    expect(forbidden.body).to.contain('subresource(s)=[stats]');
    expect((await direct('/metrics/resource', proxyOnly)).status).to.equal(403);
    expect((await direct('/metrics/probes', proxyOnly)).status).to.equal(403);

    const scraper = await saToken('scraper');
    await grantGet(cp, 'scraper', 'nodes/stats,nodes/metrics', 'scraper');
    const res = await eventually(
      async () => {
        const r = await direct('/metrics/resource', scraper);
        return r.status === 200 && r.body.includes('pod="echo"') ? r : undefined;
      },
      20_000,
      'scraper reads resource metrics with the echo pod',
    );
    const parsed = parseExposition(res.body);
    for (const fam of KubeletResourceMetrics) {
      expect(parsed.types.get(fam.name), fam.name).to.equal(fam.type);
      const samples = parsed.samples.filter((x) => x.name === fam.name);
      expect(samples, fam.name).to.not.be.empty;
      for (const x of samples) expect(Object.keys(x.labels).sort(), fam.name).to.deep.equal(fam.labels);
    }
    const names = new Set(KubeletResourceMetrics.map((f) => f.name));
    for (const x of parsed.samples) expect(names.has(x.name), `undocumented ${x.name}`).to.equal(true);
    expect(parsed.samples.find((x) => x.name === 'resource_scrape_error')?.value).to.equal(0);
    const start = parsed.samples.find(
      (x) =>
        x.name === 'container_start_time_seconds' && x.labels.pod === 'echo' && x.labels.container === 'app',
    );
    expect(start?.value).to.be.within(Date.now() / 1000 - 600, Date.now() / 1000);
    const nodeMem = parsed.samples.find((x) => x.name === 'node_memory_working_set_bytes');
    expect(nodeMem?.value, 'the node includes its share of the operator').to.be.greaterThan(0);

    const summary = await direct('/stats/summary', scraper);
    expect(summary.status).to.equal(200);
    const s = JSON.parse(summary.body) as {
      node: {
        nodeName: string;
        startTime: string;
        memory: { workingSetBytes: number; availableBytes: number };
      };
      pods: {
        podRef: { name: string; namespace: string; uid: string };
        containers: { name: string }[];
        volume?: { name: string }[];
      }[];
    };
    expect(s.node.nodeName).to.equal(NODE);
    expect(s.node.startTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(s.node.memory.availableBytes).to.be.greaterThan(0);
    const echo = s.pods.find((p) => p.podRef.name === 'echo');
    expect(echo?.podRef.namespace).to.equal('default');
    expect(echo?.containers.map((c) => c.name)).to.deep.equal(['app']);
    const only = await direct('/stats/summary?only_cpu_and_memory=true', scraper);
    expect(JSON.parse(only.body)).to.not.have.nested.property('node.systemContainers');
    expect((await direct('/stats/summary?only_cpu_and_memory=maybe', scraper)).status).to.equal(400);

    const probes = await direct('/metrics/probes', scraper);
    expect(probes.status).to.equal(200);
    const pp = parseExposition(probes.body);
    expect(pp.types.get('prober_probe_total')).to.equal('counter');
  });

  it('through the API server: nodes/proxy is enforced, and the proxied node API answers', async () => {
    const asBob = await kubectl(cp, ['--as=bob', 'get', '--raw', `/api/v1/nodes/${NODE}/proxy/pods`]);
    expect(asBob.code).to.not.equal(0);
    expect(asBob.stderr).to.match(/forbidden/i);
    // alice is bound to nodes/proxy get by the previous test: she passes the API server's authorization,
    // which then refuses to proxy to a loopback node address (proxyutil's "address not allowed").
    const asAlice = await eventually(
      async () => {
        const r = await kubectl(cp, ['--as=alice', 'get', '--raw', `/api/v1/nodes/${NODE}/proxy/pods`]);
        return /forbidden/i.test(r.stderr) ? undefined : r;
      },
      20_000,
      'alice allowed',
    );
    expect(asAlice.stderr).to.contain('address not allowed');
    // pods/log goes through the API server's own kubelet client (checked against our client CA).
    const bobLogs = await kubectl(cp, ['--as=bob', 'logs', 'echo']);
    expect(bobLogs.code).to.not.equal(0);
    expect(bobLogs.stderr).to.match(/forbidden/i);
    await kubectlOk(cp, ['create', 'role', 'log-reader', '--verb=get', '--resource=pods,pods/log']);
    await kubectl(cp, ['create', 'rolebinding', 'bob-logs', '--role=log-reader', '--user=bob']);
    const allowed = await eventually(
      async () => {
        const r = await kubectl(cp, ['--as=bob', 'logs', 'echo', '--tail=1']);
        return r.code === 0 ? r : undefined;
      },
      20_000,
      'bob reads logs',
    );
    expect(allowed.stdout).to.equal('three\n');
  });

  it('the deleted pod is gone', async () => {
    await eventually(() => isGone(client, '/api/v1/namespaces/default/pods/follow'), 30_000);
  });
});

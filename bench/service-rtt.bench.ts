// `npm run bench:service-rtt [-- --requests N]`: what a Service costs a pod's request on our cri VirtualNodes.
//
// The cluster of test:upstream (test/upstream/cluster.ts): two cri VirtualNodes, each in a network namespace of
// its own with its own containerd, kube-proxy (iptables mode) and CoreDNS on them. An agnhost netexec server
// runs on cri-1 behind a ClusterIP Service; from inside a pod on cri-2 (a Node.js client run in that pod's
// network namespace, as a process of the pod would be) it sends N HTTP GETs to the server's pod IP and N to
// the Service's ClusterIP, alternating, each on a new TCP connection (so each Service request goes through
// kube-proxy's DNAT on the client's node, as a first request of a connection does), and prints p50, p99 and
// mean of each. kwok has no pod network to compare with: its pods' IPs are made up.
import { execFileSync } from 'node:child_process';
import { kubectl } from '../test/support/controlplane.js';
import { eventually } from '../test/support/eventually.js';
import { startE2eCriCluster, type UpstreamCluster } from '../test/upstream/cluster.js';
import { positiveArg } from './lib/args.js';

const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.66.1';

/** Runs in the client pod's network namespace: alternating GETs, one connection each; prints JSON. */
const CLIENT = `
const http = require('node:http');
const [direct, service, n] = [process.argv[1], process.argv[2], Number(process.argv[3])];
const get = (url) => new Promise((resolve, reject) => {
  const t0 = process.hrtime.bigint();
  http.get(url, { agent: false }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(url + ' ' + res.statusCode))));
  }).on('error', reject);
});
(async () => {
  // kube-proxy programs a new Service within its sync period: until then its ClusterIP refuses.
  for (const deadline = Date.now() + 60000; ; ) {
    try { await get(service); break; } catch (e) { if (Date.now() > deadline) throw e; await new Promise((r) => setTimeout(r, 200)); }
  }
  for (let i = 0; i < 50; i++) { await get(direct); await get(service); }
  const out = { direct: [], service: [] };
  for (let i = 0; i < n; i++) { out.direct.push(await get(direct)); out.service.push(await get(service)); }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(String(e)); process.exit(1); });
`;

function stats(ms: number[]): { p50: number; p99: number; mean: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return { p50: at(0.5), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

async function main(): Promise<void> {
  const requests = positiveArg('--requests', 1000);
  let cluster: UpstreamCluster | undefined;
  try {
    const started = await startE2eCriCluster({ logPrefix: 'ko-bench-svc-', say: (l) => console.error(l) });
    cluster = started.cluster;
    const c = cluster;
    const run = async (args: string[], input?: string): Promise<string> => {
      const r = await kubectl(c.cp, args, input);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
      return r.stdout;
    };
    const [serverNode, clientNode] = c.nodeNames as [string, string];
    const pod = (name: string, node: string, args: string[], labels: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels },
      spec: { nodeName: node, containers: [{ name: 'c', image: AGNHOST, args }] },
    });
    const items = [
      pod('rtt-server', serverNode, ['netexec', '--http-port=8080'], { app: 'rtt' }),
      pod('rtt-client', clientNode, ['pause']),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'rtt' },
        spec: { selector: { app: 'rtt' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
    ];
    await run(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    await run(['wait', '--for=condition=Ready', 'pod/rtt-server', 'pod/rtt-client', '--timeout=120s']);
    const podIP = await run(['get', 'pod', 'rtt-server', '-o', 'jsonpath={.status.podIP}']);
    const clusterIP = await run(['get', 'svc', 'rtt', '-o', 'jsonpath={.spec.clusterIP}']);
    await eventually(
      async () =>
        (await run(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=rtt', '-o', 'name'])) ||
        undefined,
      30_000,
      'the Service has endpoints',
    );
    // The client pod's process, in its node's containerd: its network namespace is the pod's.
    const containerID = (
      await run(['get', 'pod', 'rtt-client', '-o', 'jsonpath={.status.containerStatuses[0].containerID}'])
    ).replace(/^containerd:\/\//, '');
    const tasks = await c.containerds[clientNode]!.ctr(['task', 'ls']);
    const pid = tasks.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((f) => f[0] === containerID)?.[1];
    if (!pid) throw new Error(`no task for container ${containerID} on ${clientNode}: ${tasks.stdout}`);
    const out = execFileSync(
      'nsenter',
      [
        `--net=/proc/${pid}/ns/net`,
        process.execPath,
        '-e',
        CLIENT,
        `http://${podIP}:8080/echo?msg=x`,
        `http://${clusterIP}:80/echo?msg=x`,
        String(requests),
      ],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const r = JSON.parse(out) as { direct: number[]; service: number[] };
    const fmt = (n: number): string => n.toFixed(3).padStart(8);
    const d = stats(r.direct);
    const s = stats(r.service);
    console.log(
      `\nHTTP GET from a pod on ${clientNode} to a pod on ${serverNode}, ${requests} each, a new connection each (ms):`,
    );
    console.log('target                    p50       p99      mean');
    console.log(`pod IP ${podIP.padEnd(16)} ${fmt(d.p50)}  ${fmt(d.p99)}  ${fmt(d.mean)}`);
    console.log(`ClusterIP ${clusterIP.padEnd(13)} ${fmt(s.p50)}  ${fmt(s.p99)}  ${fmt(s.mean)}`);
  } finally {
    await cluster?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:service-rtt failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exit(1);
});

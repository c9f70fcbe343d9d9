// The cluster around our nodes: two cri VirtualNodes, each in a network namespace of its own with its own
// containerd and pod range, kube-proxy (a DaemonSet) and CoreDNS running on them (test/upstream/cluster.ts).
// A pod reaches the API server through the `kubernetes` Service with its mounted token, a ClusterIP Service
// answers by its DNS name from a pod on the other node, a NodePort answers from the host, and stopping the
// cluster leaves no namespace, bridge or process of the run behind. Needs root on Linux.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { kubectl } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { startE2eCriCluster, type UpstreamCluster } from '../upstream/cluster.js';

const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.66.1';
const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.37.0-2';

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

describe('Services, cluster DNS and pod-to-pod traffic on cri VirtualNodes', function () {
  this.timeout(600_000);
  let cluster: UpstreamCluster;
  let binDir: string;
  const run = async (args: string[], input?: string): Promise<string> => {
    const r = await kubectl(cluster.cp, args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
    return r.stdout;
  };

  before(async () => {
    // e2e.test's images (agnhost, busybox) and a kubectl of the control plane's version, built once.
    ({ cluster, binDir } = await startE2eCriCluster({ logPrefix: 'ko-services-' }));
  });

  after(async () => {
    await cluster?.stop();
  });

  it('serves the kubernetes Service to an in-cluster client with its mounted token', async () => {
    // The e2e build's kubectl, from the host into a busybox pod: it finds the API server as every in-cluster
    // client does, through KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount volume.
    await run([
      'create',
      'clusterrolebinding',
      'default-view',
      '--clusterrole=view',
      '--serviceaccount=default:default',
    ]);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'in-cluster-client' },
      spec: {
        nodeName: cluster.nodeNames[0],
        restartPolicy: 'Never',
        containers: [
          {
            name: 'kubectl',
            image: BUSYBOX,
            command: ['/kubectl/kubectl', 'get', 'pods', '-o', 'name'],
            volumeMounts: [{ name: 'kubectl', mountPath: '/kubectl', readOnly: true }],
          },
        ],
        volumes: [{ name: 'kubectl', hostPath: { path: binDir, type: 'Directory' } }],
      },
    };
    await run(['apply', '-f', '-'], JSON.stringify(pod));
    await eventually(
      async () => {
        const phase = await run(['get', 'pod', 'in-cluster-client', '-o', 'jsonpath={.status.phase}']);
        return phase === 'Succeeded' || phase === 'Failed' ? phase : undefined;
      },
      120_000,
      'the in-cluster client finished',
    );
    const logs = await run(['logs', 'in-cluster-client']);
    expect(logs).to.include('pod/in-cluster-client');
    expect(await run(['get', 'pod', 'in-cluster-client', '-o', 'jsonpath={.status.phase}'])).to.equal(
      'Succeeded',
    );
  });

  it('answers a ClusterIP Service by its DNS name from the other node, and a NodePort from the host', async () => {
    const [serverNode, clientNode] = cluster.nodeNames as [string, string];
    const objects = [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'echo', labels: { app: 'echo' } },
        spec: {
          nodeName: serverNode,
          containers: [{ name: 'netexec', image: AGNHOST, args: ['netexec', '--http-port=8080'] }],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo' },
        spec: { selector: { app: 'echo' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'echo-nodeport' },
        spec: { type: 'NodePort', selector: { app: 'echo' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'dns-client' },
        spec: {
          nodeName: clientNode,
          containers: [{ name: 'c', image: BUSYBOX, command: ['sleep', '3600'] }],
        },
      },
    ];
    await run(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    await run(['wait', '--for=condition=Ready', 'pod/echo', 'pod/dns-client', '--timeout=120s']);
    const echoIP = await run(['get', 'pod', 'echo', '-o', 'jsonpath={.status.podIP}']);

    const fromClient = (url: string): Promise<string> =>
      run(['exec', 'dns-client', '--', 'wget', '-q', '-T', '5', '-O', '-', url]);
    // Pod to pod across nodes, then the Service by name (CoreDNS, then kube-proxy's rules on the client's node).
    expect(await fromClient(`http://${echoIP}:8080/hostname`)).to.equal('echo');
    const byName = await eventually(
      () => fromClient('http://echo.default.svc.cluster.local/hostname').catch(() => undefined),
      60_000,
      'the Service answers by its DNS name',
    );
    expect(byName).to.equal('echo');
    const resolv = await run(['exec', 'dns-client', '--', 'cat', '/etc/resolv.conf']);
    expect(resolv).to.match(/^nameserver 10\.0\.0\.10$/m);
    expect(resolv).to.match(/^search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local$/m);

    // A NodePort on either node's address, from the host.
    const nodePort = await run(['get', 'svc', 'echo-nodeport', '-o', 'jsonpath={.spec.ports[0].nodePort}']);
    for (const node of cluster.nodeNames) {
      const url = `http://${cluster.nodeIPs[node]}:${nodePort}/hostname`;
      const res = await eventually(() => httpGet(url).catch(() => undefined), 60_000, `NodePort on ${node}`);
      expect(res, url).to.deep.equal({ status: 200, body: 'echo' });
    }
  });

  it('leaves no namespace, bridge or containerd of the run behind when stopped', async () => {
    const bridge = cluster.network!.bridge;
    const namespaces = Object.values(cluster.nodeIPs).length;
    expect(namespaces).to.equal(2);
    const dirs = Object.values(cluster.containerds).map((c) => c.dir);
    await cluster.stop();
    const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(netns).to.not.include(`kon-${bridge.slice('kob-'.length)}`);
    expect(execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })).to.not.include(bridge);
    for (const d of dirs) expect(existsSync(d), d).to.equal(false);
    const procs = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
    for (const d of dirs) expect(procs).to.not.include(d);
  });
});

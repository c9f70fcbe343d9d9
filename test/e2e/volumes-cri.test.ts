/**
 * A pod's environment on a real containerd, read from inside the containers through the real API server
 * (`kubectl exec`, `kubectl logs`): every volume plugin with items, modes, defaultMode, fsGroup, subPath and
 * subPathExpr; a ConfigMap update and a label change reaching the files; an emptyDir shared by an init
 * container and the app; a Memory emptyDir on tmpfs; the kubelet-managed /etc/hosts with hostAliases, the
 * hostname, resolv.conf per dnsPolicy; termination messages from the file and from the log; an unsupported
 * volume refused with the kubelet's words; a restarted operator that neither remounts nor loses a running
 * pod's volumes; and no pod directory left once the pods are gone.
 *
 * The VirtualNode runs pods in their own network namespaces on a bridge this test creates (CNI), with its
 * node API on the bridge address. Root on Linux is required (containerd, the bridge, tmpfs).
 */
import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PodStatus } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { cstatus, isGone, waitNodeReady } from '../support/operator.js';
import { busybox } from '../support/podspec.js';

const NS = 'vol-e2e';
const NODE = 'vn-vol';
const CLUSTER_DNS = '10.96.0.10';
const FS_GROUP = 2345;

describe('volumes and pod files on containerd (real apiserver, kubectl exec)', function () {
  this.timeout(6 * 60_000);
  let env: CriNodeEnv | undefined;
  let client: KubeClient;
  let stateDir = '';
  let hostDir = '';

  const podsDir = (): string => path.join(stateDir, 'nodes', NODE, 'pods');
  const getPod = (name: string) => env!.getPod(name);
  const createPod = (name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}) =>
    env!.createPod(name, spec, labels);
  const waitPod = (name: string, pred: (s: PodStatus) => boolean, what: string, timeoutMs = 90_000) =>
    env!.waitPod(name, pred, what, timeoutMs);
  const k = (args: string[]): Promise<string> => env!.k(args);
  const sh = (pod: string, script: string, container = 'c'): Promise<string> =>
    k(['exec', pod, '-c', container, '--', 'sh', '-c', script]);
  const events = (name: string): Promise<CoreEvent[]> => eventsOf(client, NS, name);
  const mountsOf = async (): Promise<string> => readFile('/proc/self/mountinfo', 'utf8');

  before(async function () {
    this.timeout(20 * 60_000);
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      podNetwork: 'cni',
      spec: { kubelet: { clusterDNS: [CLUSTER_DNS], clusterDomain: 'cluster.local' } },
    });
    ({ client, stateDir } = env);
    hostDir = path.join(env.dir, 'host');

    const post = (kind: 'configmaps' | 'secrets', body: unknown) =>
      client.request({ method: 'POST', path: `/api/v1/namespaces/${NS}/${kind}`, body });
    await post('configmaps', { metadata: { name: 'cm-a' }, data: { k1: 'v1', k2: 'two' } });
    await post('secrets', { metadata: { name: 'sec-a' }, stringData: { s1: 'hush' } });

    const sleeper = (extra: Record<string, unknown> = {}) => busybox('c', ['sleep', '3600'], extra);
    // Every pod is started together (two cores: a pod start is about a second here).
    await Promise.all([
      createPod('files', {
        hostname: 'myhost',
        subdomain: 'mysub',
        hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }],
        securityContext: { fsGroup: FS_GROUP },
        volumes: [
          { name: 'cm', configMap: { name: 'cm-a', items: [{ key: 'k1', path: 'dir/one', mode: 0o600 }] } },
          { name: 'cm-all', configMap: { name: 'cm-a', defaultMode: 0o640 } },
          { name: 'sec', secret: { secretName: 'sec-a', defaultMode: 0o400 } },
          {
            name: 'dapi',
            downwardAPI: {
              items: [
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                {
                  path: 'cpu_limit',
                  resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '1m' },
                },
              ],
            },
          },
          {
            name: 'proj',
            projected: {
              sources: [
                { configMap: { name: 'cm-a', items: [{ key: 'k1', path: 'p/k1' }] } },
                { secret: { name: 'sec-a' } },
                {
                  downwardAPI: {
                    items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }],
                  },
                },
                { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
              ],
            },
          },
          { name: 'scratch', emptyDir: {} },
          { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
          { name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
        ],
        containers: [
          sleeper({
            resources: { limits: { cpu: '500m', memory: '64Mi' } },
            env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            volumeMounts: [
              { name: 'cm', mountPath: '/cfg' },
              { name: 'cm-all', mountPath: '/cfg-all' },
              { name: 'sec', mountPath: '/sec' },
              { name: 'dapi', mountPath: '/dapi' },
              { name: 'proj', mountPath: '/proj' },
              { name: 'scratch', mountPath: '/scratch' },
              { name: 'scratch', mountPath: '/scratch-sub', subPath: 'sub/dir' },
              { name: 'scratch', mountPath: '/scratch-expr', subPathExpr: 'by-pod/$(POD_NAME)' },
              { name: 'mem', mountPath: '/mem' },
              { name: 'host', mountPath: '/host' },
            ],
          }),
        ],
      }),
      createPod('dns-none', {
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['10.9.8.7'],
          searches: ['a.example'],
          options: [{ name: 'ndots', value: '2' }],
        },
        containers: [sleeper()],
      }),
      createPod('dns-default', { dnsPolicy: 'Default', containers: [sleeper()] }),
      createPod('shared', {
        restartPolicy: 'Never',
        volumes: [{ name: 'work', emptyDir: {} }],
        initContainers: [
          busybox('init', ['sh', '-c', 'echo made-by-init > /work/note'], {
            volumeMounts: [{ name: 'work', mountPath: '/work' }],
          }),
        ],
        containers: [
          busybox('c', ['cat', '/work/note'], { volumeMounts: [{ name: 'work', mountPath: '/work' }] }),
        ],
      }),
      createPod('term-file', {
        restartPolicy: 'Never',
        containers: [
          busybox('c', ['sh', '-c', 'printf bye-from-file > /tmp/last-words; exit 1'], {
            terminationMessagePath: '/tmp/last-words',
            securityContext: { runAsUser: 1000 },
          }),
        ],
      }),
      createPod('term-log', {
        restartPolicy: 'Never',
        containers: [
          busybox('c', ['sh', '-c', 'echo first; echo last-words-from-log; exit 2'], {
            terminationMessagePolicy: 'FallbackToLogsOnError',
          }),
        ],
      }),
      createPod('wants-nfs', {
        volumes: [{ name: 'share', nfs: { server: '10.9.9.9', path: '/exports' } }],
        containers: [sleeper({ volumeMounts: [{ name: 'share', mountPath: '/share' }] })],
      }),
    ]);
    for (const p of ['files', 'dns-none', 'dns-default']) {
      await waitPod(p, (s) => cstatus(s)?.state?.running !== undefined, 'running');
    }
  });

  after(async function () {
    this.timeout(3 * 60_000);
    await env?.stop();
  });

  it('projects configMap items with their mode, defaultMode and fsGroup ownership', async () => {
    expect(await sh('files', 'cat /cfg/dir/one')).to.equal('v1');
    // Item mode 0600; the fsGroup adds group read (0440 mask for read-only volumes), as the kubelet does.
    expect(await sh('files', 'stat -L -c "%a %g" /cfg/dir/one')).to.equal(`640 ${FS_GROUP}\n`);
    expect(await sh('files', 'cat /cfg-all/k2; stat -L -c "%a %g" /cfg-all/k2')).to.equal(
      `two640 ${FS_GROUP}\n`,
    );
    // The atomic writer's layout: the visible names are links into ..data.
    expect(await sh('files', 'readlink /cfg-all/k1')).to.equal('..data/k1\n');
    // Read-only, whatever the container tries.
    expect(await sh('files', 'touch /cfg-all/x 2>&1 || echo refused')).to.match(/refused/);
  });

  it('projects secrets (mode 0400 plus fsGroup read) on a tmpfs', async () => {
    expect(await sh('files', 'cat /sec/s1; stat -L -c " %a %g" /sec/s1')).to.equal(`hush 440 ${FS_GROUP}\n`);
    expect(await sh('files', "grep ' /sec ' /proc/mounts | cut -d' ' -f3")).to.equal('tmpfs\n');
  });

  it('projects downwardAPI labels and limits, and a projected volume with its service-account token', async () => {
    expect(await sh('files', 'cat /dapi/labels')).to.equal('app="files"');
    expect(await sh('files', 'cat /dapi/cpu_limit')).to.equal('500');
    expect(await sh('files', 'cat /proj/p/k1 /proj/s1 /proj/namespace')).to.equal(`v1hush${NS}`);
    const token = await sh('files', 'cat /proj/token');
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as {
      sub: string;
      'kubernetes.io': { pod: { name: string } };
    };
    expect(claims.sub).to.equal(`system:serviceaccount:${NS}:default`);
    expect(claims['kubernetes.io'].pod.name).to.equal('files');
  });

  it('shares an emptyDir between mounts, resolves subPath and subPathExpr, and mounts Memory as tmpfs', async () => {
    await sh('files', 'echo via-sub > /scratch-sub/f; echo via-expr > /scratch-expr/g');
    expect(await sh('files', 'cat /scratch/sub/dir/f /scratch/by-pod/files/g')).to.equal(
      'via-sub\nvia-expr\n',
    );
    const mem = await sh('files', "grep ' /mem ' /proc/mounts");
    expect(mem).to.match(/^tmpfs \/mem tmpfs .*size=16384k/);
    expect(await sh('files', 'stat -c "%a %g" /scratch')).to.equal(`2777 ${FS_GROUP}\n`);
    expect(await sh('files', 'echo on-the-host > /host/h; cat /host/h')).to.equal('on-the-host\n');
    expect((await readFile(path.join(hostDir, 'h'), 'utf8')).trim()).to.equal('on-the-host');
  });

  it('writes the kubelet-managed /etc/hosts with hostAliases, the hostname and resolv.conf per dnsPolicy', async () => {
    const ip = (await getPod('files')).status?.podIP ?? '';
    expect(ip).to.match(/^10\./);
    const hosts = await sh('files', 'cat /etc/hosts');
    expect(hosts.startsWith('# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n')).to.equal(true);
    expect(hosts).to.contain(`${ip}\tmyhost.mysub.${NS}.svc.cluster.local\tmyhost\n`);
    expect(hosts).to.contain('\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n');
    expect(await sh('files', 'hostname')).to.equal('myhost\n');
    const resolv = await sh('files', 'cat /etc/resolv.conf');
    expect(resolv).to.match(new RegExp(`nameserver ${CLUSTER_DNS.replace(/\./g, '\\.')}`));
    expect(resolv).to.contain(`search ${NS}.svc.cluster.local svc.cluster.local cluster.local`);
    expect(resolv).to.contain('options ndots:5');
    const none = await sh('dns-none', 'cat /etc/resolv.conf');
    expect(none).to.match(/nameserver 10\.9\.8\.7/);
    expect(none).to.contain('search a.example');
    expect(none).to.contain('options ndots:2');
    const host = (await readFile('/etc/resolv.conf', 'utf8'))
      .split('\n')
      .filter((l) => l.startsWith('nameserver'))
      .map((l) => l.split(/\s+/)[1]);
    const def = await sh('dns-default', 'cat /etc/resolv.conf');
    for (const server of host) expect(def).to.contain(`nameserver ${server}`);
  });

  it('runs an app on what its init container left in a shared emptyDir', async () => {
    await waitPod('shared', (s) => s.phase === 'Succeeded', 'Succeeded');
    expect(await k(['logs', 'shared', '-c', 'c'])).to.equal('made-by-init\n');
  });

  it('reports termination messages from the file (non-root, custom path) and from the log', async () => {
    const file = await waitPod('term-file', (s) => s.phase === 'Failed', 'Failed');
    expect(cstatus(file.status)?.state?.terminated?.message).to.equal('bye-from-file');
    const log = await waitPod('term-log', (s) => s.phase === 'Failed', 'Failed');
    expect(cstatus(log.status)?.state?.terminated?.message).to.equal('first\nlast-words-from-log\n');
  });

  it('refuses an nfs volume with the kubelet words; the pod never starts', async () => {
    const e = await eventually(
      async () => (await events('wants-nfs')).find((ev) => ev.reason === 'FailedMount'),
      30_000,
      'FailedMount',
    );
    expect(e.message).to.contain('failed to process volumes=[share]: failed to get Plugin from volumeSpec');
    expect((await getPod('wants-nfs')).status?.containerStatuses?.[0]?.state?.waiting?.reason).to.equal(
      'ContainerCreating',
    );
  });

  it('brings ConfigMap updates and label changes into the files within 90 s', async () => {
    await client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${NS}/configmaps/cm-a`,
      contentType: 'application/merge-patch+json',
      body: { data: { k1: 'v2' } },
    });
    await k(['label', 'pod', 'files', 'extra=yes']);
    await eventually(async () => (await sh('files', 'cat /cfg-all/k1')) === 'v2', 90_000, 'k1 = v2', 2000);
    await eventually(
      async () => (await sh('files', 'cat /dapi/labels')) === 'app="files"\nextra="yes"',
      90_000,
      'the new label in /dapi/labels',
      2000,
    );
  });

  it('keeps a running pod and its volumes through an operator restart, without remounting', async () => {
    const before = await getPod('files');
    const dataBefore = await sh('files', 'readlink /cfg-all/..data');
    const mountsBefore = (await mountsOf()).split('\n').filter((l) => l.includes(podsDir())).length;
    await env!.restartOperator();
    await waitNodeReady(client, NODE, 60_000);
    // Give the new operator a few syncs of the pod.
    await new Promise((r) => setTimeout(r, 5000));
    const after = await getPod('files');
    expect(cstatus(after.status)?.containerID).to.equal(cstatus(before.status)?.containerID);
    expect(cstatus(after.status)?.restartCount).to.equal(0);
    expect(await sh('files', 'cat /scratch/sub/dir/f')).to.equal('via-sub\n');
    expect(await sh('files', 'readlink /cfg-all/..data')).to.equal(dataBefore);
    expect((await mountsOf()).split('\n').filter((l) => l.includes(podsDir())).length).to.equal(mountsBefore);
  });

  it('leaves no pod directory and no mount behind once the pods are gone', async () => {
    const uids = readdirSync(podsDir());
    expect(uids.length).to.be.greaterThan(0);
    await k(['delete', 'pods', '--all', '--wait=false']);
    for (const name of ['files', 'dns-none', 'dns-default', 'shared', 'term-file', 'term-log', 'wants-nfs']) {
      await eventually(() => isGone(client, `/api/v1/namespaces/${NS}/pods/${name}`), 90_000, `${name} gone`);
    }
    await eventually(
      () => (existsSync(podsDir()) ? readdirSync(podsDir()).length === 0 : true),
      30_000,
      'no pod directories left',
    );
    expect((await mountsOf()).includes(podsDir())).to.equal(false);
  });
});

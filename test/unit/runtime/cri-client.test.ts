// CriRuntime (src/runtime/cri/client.ts, connection.ts) against an in-process CRI server on a unix socket:
// requests and answers through our proto, int64 as bigint, deadlines, error kinds, outages and reconnects.
import * as grpc from '@grpc/grpc-js';

import { expect } from 'chai';
import { CriRuntime, type CriLogger } from '../../../src/runtime/cri/client.js';
import type { PodSandboxConfig } from '../../../src/runtime/types.js';
import { errorKind } from '../../../src/util/errors.js';
import { FakeCriServer } from './fakecri.js';
import { kindRejection } from '../../support/throws.js';

class LogSpy implements CriLogger {
  warns: string[] = [];
  infos: string[] = [];
  warn(message: string): void {
    this.warns.push(message);
  }
  info(message: string): void {
    this.infos.push(message);
  }
}

const sandboxConfig: PodSandboxConfig = {
  metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 0 },
  labels: {},
  annotations: {},
};

const wireContainerStatus = {
  id: 'c1',
  metadata: { name: 'app', attempt: 0 },
  state: 'CONTAINER_EXITED',
  created_at: '1767225600123456789',
  started_at: '1767225601000000001',
  // int64's largest value: a double would round it.
  finished_at: '9223372036854775807',
  exit_code: 3,
  image: { image: 'busybox:1.36' },
  image_ref: 'sha256:abc',
  reason: 'Error',
  message: '',
  labels: {},
  annotations: {},
  mounts: [],
  log_path: '/var/log/pods/ns_web_u1/app/0.log',
};

describe('runtime/cri client against an in-process CRI server', () => {
  let server: FakeCriServer;
  let rt: CriRuntime;
  let log: LogSpy;

  before(async () => {
    server = await FakeCriServer.start();
  });
  after(async () => {
    await server.close();
  });
  beforeEach(async () => {
    await server.start();
    server.handlers = {};
    server.calls.length = 0;
    log = new LogSpy();
    rt = new CriRuntime({
      endpoint: server.endpoint,
      logger: log,
      requestTimeoutMs: 4_000,
      shortTimeoutMs: 2_000,
      execGraceMs: 500,
      pullTimeoutMs: 6_000,
    });
  });
  afterEach(async () => {
    await rt.close();
  });

  it('declares what the kubelet does for it: host log directories and pod cgroups, nothing answered itself', () => {
    expect(rt.kind).to.equal('cri');
    expect(rt.capabilities).to.deep.equal({ hostLogDirectories: true, hostPodCgroups: true });
  });

  it('sends the kubelet version and reads the runtime version and conditions', async () => {
    server.handlers.Version = () => ({
      version: '0.1.0',
      runtime_name: 'containerd',
      runtime_version: '1.7.0',
      runtime_api_version: 'v1',
    });
    server.handlers.Status = () => ({
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'cni' },
        ],
      },
    });
    expect(await rt.version()).to.deep.equal({
      version: '0.1.0',
      runtimeName: 'containerd',
      runtimeVersion: '1.7.0',
      runtimeApiVersion: 'v1',
    });
    expect(server.callsOf('Version')[0]!.request).to.include({ version: '0.1.0' });
    // containerd 1.6's answer: no runtime handlers, no features (its CRI is older than both fields).
    expect(await rt.status()).to.deep.equal({
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'cni' },
      ],
      handlers: [],
    });
  });

  it("reads a newer runtime's handlers and features from Status (CRI field numbers 3 and 4)", async () => {
    server.handlers.Status = () => ({
      status: { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }] },
      runtime_handlers: [
        { name: '', features: { recursive_read_only_mounts: true, user_namespaces: true } },
        { name: 'kata', features: { recursive_read_only_mounts: false, user_namespaces: true } },
        { name: 'bare' },
      ],
      features: { supplemental_groups_policy: true },
    });
    const status = await rt.status();
    expect(status.handlers).to.deep.equal([
      { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
      { name: 'kata', recursiveReadOnlyMounts: false, userNamespaces: true },
      { name: 'bare', recursiveReadOnlyMounts: false, userNamespaces: false },
    ]);
    expect(status.features).to.deep.equal({ supplementalGroupsPolicy: true });
  });

  it('reads int64 nanosecond timestamps as exact bigints and sends int64 seconds as decimal strings', async () => {
    server.handlers.ListPodSandbox = () => ({
      items: [
        {
          id: 'sb1',
          metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 1 },
          state: 'SANDBOX_READY',
          created_at: '1767225600123456789',
          labels: { a: 'b' },
          annotations: {},
        },
      ],
    });
    server.handlers.ContainerStatus = () => ({ status: wireContainerStatus });
    server.handlers.ListContainers = () => ({ containers: [{ id: 'c1', pod_sandbox_id: 'sb1' }] });
    server.handlers.StopContainer = () => ({});

    const [sb] = await rt.listPodSandbox();
    expect(sb!.createdAt).to.equal(1767225600123456789n);
    expect(sb!.state).to.equal('ready');
    const st = await rt.containerStatus('c1');
    expect(st.createdAt).to.equal(1767225600123456789n);
    expect(st.startedAt).to.equal(1767225601000000001n);
    expect(st.finishedAt).to.equal(9223372036854775807n);
    expect(st).to.include({ exitCode: 3, state: 'exited', podSandboxId: 'sb1', reason: 'Error' });
    await rt.stopContainer('c1', 2.2);
    expect(server.callsOf('StopContainer')[0]!.request).to.deep.equal({ container_id: 'c1', timeout: '3' });
  });

  it('sends UpdateContainerResources with int64 decimal strings and reads applied resources back', async () => {
    server.handlers.UpdateContainerResources = () => ({});
    server.handlers.ContainerStatus = () => ({
      status: {
        ...wireContainerStatus,
        resources: {
          linux: {
            cpu_period: '100000',
            cpu_quota: '50000',
            cpu_shares: '512',
            memory_limit_in_bytes: '67108864',
          },
        },
      },
    });
    server.handlers.ListContainers = () => ({ containers: [{ id: 'c1', pod_sandbox_id: 'sb1' }] });
    await rt.updateContainerResources('c1', {
      cpuShares: 1024,
      cpuQuota: 100_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 1 << 27,
    });
    expect(server.callsOf('UpdateContainerResources')[0]!.request).to.deep.include({
      container_id: 'c1',
      linux: {
        cpu_period: '100000',
        cpu_quota: '100000',
        cpu_shares: '1024',
        memory_limit_in_bytes: '134217728',
        oom_score_adj: '0',
        cpuset_cpus: '',
        cpuset_mems: '',
        hugepage_limits: [],
        unified: {},
        memory_swap_limit_in_bytes: '0',
      },
    });
    expect((await rt.containerStatus('c1')).resources).to.deep.equal({
      cpuPeriod: 100_000,
      cpuQuota: 50_000,
      cpuShares: 512,
      memoryLimitInBytes: 67_108_864,
    });
  });

  it('reads memory usage from ContainerStats, and nothing when the runtime reports none', async () => {
    server.handlers.ContainerStats = () => ({
      stats: {
        memory: {
          timestamp: '1',
          usage_bytes: { value: '52428800' },
          working_set_bytes: { value: '41943040' },
        },
      },
    });
    expect(await rt.containerStats('c1')).to.deep.equal({
      memory: { timestamp: 1n, usageBytes: 52_428_800, workingSetBytes: 41_943_040 },
    });
    expect(server.callsOf('ContainerStats')[0]!.request).to.deep.equal({ container_id: 'c1' });
    server.handlers.ContainerStats = () => ({ stats: {} });
    expect(await rt.containerStats('c1')).to.deep.equal({});
  });

  it('gives each call its deadline: short reads, grace on top of stops, exec timeout plus grace, pulls', async () => {
    for (const m of ['Version', 'StopContainer', 'RunPodSandbox', 'ExecSync', 'PullImage']) {
      server.handlers[m] = () => ({});
    }
    await rt.version();
    await rt.stopContainer('c1', 1);
    await rt.runPodSandbox(sandboxConfig);
    await rt.execSync('c1', ['true'], 1);
    await rt.execSync('c1', ['true'], 0);
    await rt.pullImage('busybox:1.36');
    const remaining = server.calls.map((c) => [c.method, c.remainingMs] as const);
    const within = (ms: number, want: number): boolean => ms <= want && ms > want - 1_000;
    const expected = [2_000, 1_000 + 4_000, 4_000, 1_000 + 500, 4_000, 6_000];
    expect(remaining.map(([m]) => m)).to.deep.equal([
      'Version',
      'StopContainer',
      'RunPodSandbox',
      'ExecSync',
      'ExecSync',
      'PullImage',
    ]);
    remaining.forEach(([m, ms], i) => expect(within(ms, expected[i]!), `${m}: ${ms} ms`).to.equal(true));
    expect(server.callsOf('ExecSync').map((c) => c.request.timeout)).to.deep.equal(['1', '0']);
  });

  it('fails DeadlineExceeded, naming the deadline, when the runtime does not answer in time', async () => {
    await rt.close();
    rt = new CriRuntime({ endpoint: server.endpoint, shortTimeoutMs: 200 });
    server.handlers.Version = () => 'never';
    const started = Date.now();
    const err = await kindRejection(rt.version());
    expect(err.kind).to.equal('DeadlineExceeded');
    expect(err.message).to.match(/^CRI Version: deadline exceeded \(200 ms\): Deadline exceeded/);
    expect(Date.now() - started).to.be.lessThan(2_000);
  });

  it('maps gRPC codes to error kinds, with the method, endpoint and subject in the context', async () => {
    server.handlers.ContainerStatus = () => ({
      error: { code: grpc.status.NOT_FOUND, details: 'an error occurred when try to find container "c9"' },
    });
    server.handlers.ListContainers = () => ({ containers: [] });
    const nf = await kindRejection(rt.containerStatus('c9'));
    expect(nf.kind).to.equal('NotFound');
    expect(nf.message).to.equal('CRI ContainerStatus: an error occurred when try to find container "c9"');
    expect(nf.context).to.include({
      container: 'c9',
      method: 'ContainerStatus',
      endpoint: server.endpoint,
      grpcCode: 'NOT_FOUND',
    });

    server.handlers.CreateContainer = () => ({
      error: {
        code: grpc.status.UNKNOWN,
        details:
          'failed to reserve container name "app_web_ns_u1_0": name "app_web_ns_u1_0" is reserved for "c1"',
      },
    });
    const reserved = await kindRejection(
      rt.createContainer(
        'sb1',
        { metadata: { name: 'app', attempt: 0 }, image: 'busybox', labels: {}, annotations: {} },
        sandboxConfig,
      ),
    );
    expect(reserved.kind).to.equal('AlreadyExists');
    expect(reserved.context).to.include({ sandbox: 'sb1', container: 'app', attempt: 0 });

    server.handlers.PullImage = () => ({
      error: {
        code: grpc.status.NOT_FOUND,
        details: 'failed to pull and unpack image "docker.io/library/nope:1": not found',
      },
    });
    const pull = await kindRejection(rt.pullImage('nope:1'));
    expect(pull.kind).to.equal('NotFound');
    // The kubelet shows a pull failure as the runtime worded it.
    expect(pull.message).to.equal('failed to pull and unpack image "docker.io/library/nope:1": not found');

    server.handlers.ExecSync = () => ({
      error: { code: grpc.status.INVALID_ARGUMENT, details: 'empty cmd' },
    });
    expect((await kindRejection(rt.execSync('c1', [], 1))).kind).to.equal('InvalidArgument');
    // No handler: the server does not implement the RPC.
    expect((await kindRejection(rt.listImages())).kind).to.equal('Unimplemented');
  });

  it('treats removing or stopping what is already gone as done, but not stopping a container', async () => {
    const gone = () => ({ error: { code: grpc.status.NOT_FOUND, details: 'not found' } });
    server.handlers.RemoveContainer = gone;
    server.handlers.RemovePodSandbox = gone;
    server.handlers.StopPodSandbox = gone;
    server.handlers.RemoveImage = gone;
    server.handlers.StopContainer = gone;
    await rt.removeContainer('c1');
    await rt.removePodSandbox('sb1');
    await rt.stopPodSandbox('sb1');
    await rt.removeImage('busybox');
    expect((await kindRejection(rt.stopContainer('c1', 0))).kind).to.equal('NotFound');
  });

  it("takes a container's sandbox ID from a listing once, then from what it has seen", async () => {
    server.handlers.ContainerStatus = () => ({ status: wireContainerStatus });
    server.handlers.ListContainers = () => ({ containers: [{ id: 'c1', pod_sandbox_id: 'sb1' }] });
    expect((await rt.containerStatus('c1')).podSandboxId).to.equal('sb1');
    expect((await rt.containerStatus('c1')).podSandboxId).to.equal('sb1');
    expect(server.callsOf('ListContainers')).to.have.length(1);
    expect(server.callsOf('ListContainers')[0]!.request.filter).to.deep.include({ id: 'c1' });
  });

  it('reads a missing image as null and an image USER as uid or username', async () => {
    server.handlers.ImageStatus = (req) =>
      (req.image as { image: string }).image === 'busybox:1.36'
        ? {
            image: {
              id: 'sha256:1',
              repo_tags: ['busybox:1.36'],
              repo_digests: [],
              size: '4096',
              uid: { value: '1000' },
            },
          }
        : { image: null };
    expect(await rt.imageStatus('busybox:1.36')).to.deep.equal({
      id: 'sha256:1',
      repoTags: ['busybox:1.36'],
      repoDigests: [],
      size: 4096,
      uid: 1000,
    });
    expect(await rt.imageStatus('nope')).to.equal(null);
  });

  it('lists pinned images and reads ImageFsInfo (image and container filesystems)', async () => {
    server.handlers.ListImages = () => ({
      images: [
        {
          id: 'sha256:p',
          repo_tags: ['registry.k8s.io/pause:3.10'],
          repo_digests: [],
          size: '700',
          pinned: true,
        },
        { id: 'sha256:b', repo_tags: ['busybox:1'], repo_digests: [], size: '900' },
      ],
    });
    expect((await rt.listImages()).map((i) => [i.id, i.pinned === true])).to.deep.equal([
      ['sha256:p', true],
      ['sha256:b', false],
    ]);
    const fs = {
      timestamp: '1700000000000000000',
      fs_id: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
      used_bytes: { value: '12345' },
      inodes_used: { value: '67' },
    };
    server.handlers.ImageFsInfo = () => ({ image_filesystems: [fs], container_filesystems: [fs] });
    const want = {
      timestamp: 1700000000000000000n,
      mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs',
      usedBytes: 12345,
      inodesUsed: 67,
    };
    expect(await rt.imageFsInfo()).to.deep.equal({ imageFilesystems: [want], containerFilesystems: [want] });
    // containerd 1.6 names no container filesystem.
    server.handlers.ImageFsInfo = () => ({ image_filesystems: [fs] });
    expect((await rt.imageFsInfo()).containerFilesystems).to.deep.equal([]);
  });

  it('fails Unavailable at once on a dead socket, and logs the outage once', async () => {
    const dead = new CriRuntime({
      endpoint: `unix://${server.dir}/nothing-here.sock`,
      logger: log,
      shortTimeoutMs: 10_000,
    });
    try {
      const started = Date.now();
      const first = await kindRejection(dead.version());
      const second = await kindRejection(dead.status());
      expect(first.kind).to.equal('Unavailable');
      expect(second.kind).to.equal('Unavailable');
      expect(first.message).to.match(/^CRI Version: runtime unavailable at unix:\/\/.*nothing-here\.sock: /);
      // No waiting for a connection: far sooner than the 10 s deadline.
      expect(Date.now() - started).to.be.lessThan(3_000);
      expect(log.warns).to.deep.equal([`CRI runtime unreachable at ${server.dir}/nothing-here.sock`]);
      expect(log.infos).to.deep.equal([]);
    } finally {
      await dead.close();
    }
  });

  it('reconnects by itself when the socket comes back, and logs the recovery once', async () => {
    server.handlers.Version = () => ({ version: '0.1.0', runtime_name: 'containerd' });
    await rt.version();
    await server.stop();
    expect((await kindRejection(rt.version())).kind).to.equal('Unavailable');
    expect((await kindRejection(rt.version())).kind).to.equal('Unavailable');
    await server.start();
    const until = Date.now() + 10_000;
    let ok = false;
    while (!ok && Date.now() < until) {
      ok = await rt.version().then(
        () => true,
        () => new Promise<boolean>((r) => setTimeout(() => r(false), 100)),
      );
    }
    expect(ok, 'a call succeeds once the runtime is back').to.equal(true);
    expect(log.warns).to.have.length(1);
    expect(log.infos).to.deep.equal([`CRI runtime reachable again at ${server.socketPath}`]);
  });

  it('fails every call Unavailable after close, without calling the runtime', async () => {
    server.handlers.Version = () => ({});
    await rt.close();
    await rt.close();
    const err = await kindRejection(rt.version());
    expect(err.kind).to.equal('Unavailable');
    expect(err.message).to.equal(`CRI Version: client for ${server.endpoint} is closed`);
    expect(server.calls).to.deep.equal([]);
  });

  it('refuses a malformed endpoint or timeout before dialling', () => {
    const build = (opts: ConstructorParameters<typeof CriRuntime>[0]) => {
      try {
        new CriRuntime(opts);
      } catch (err) {
        return errorKind(err);
      }
      return 'built';
    };
    expect(build({ endpoint: 'tcp://127.0.0.1:1' })).to.equal('InvalidArgument');
    expect(build({ endpoint: 'unix://relative.sock' })).to.equal('InvalidArgument');
    expect(build({ endpoint: server.endpoint, requestTimeoutMs: 0 })).to.equal('InvalidArgument');
    expect(build({ endpoint: server.endpoint, pullTimeoutMs: Number.NaN })).to.equal('InvalidArgument');
  });
});

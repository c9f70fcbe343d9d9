import { expect } from 'chai';
import { status } from '@grpc/grpc-js';
import { parseEndpoint } from '../../../src/runtime/cri/connection.js';
import {
  bigintToInt64,
  containerConfigToWire,
  containerFilterToWire,
  containerFromWire,
  containerStatusFromWire,
  execSyncFromWire,
  imageFromWire,
  int64ToBigint,
  sandboxConfigToWire,
  sandboxFilterToWire,
  sandboxFromWire,
  sandboxStatusFromWire,
  securityProfileToWire,
  versionFromWire,
} from '../../../src/runtime/cri/convert.js';
import { criError, grpcCodeName, kindForGrpcError } from '../../../src/runtime/cri/errors.js';
import type { WireContainerStatus, WirePodSandboxStatus } from '../../../src/runtime/cri/messages.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { KindError, errorKind } from '../../../src/util/errors.js';
import { catchErr } from '../../support/throws.js';
import { runtimeServiceCodecs } from '../../support/rawcri.js';

const sandbox: PodSandboxConfig = {
  metadata: { name: 'web', uid: 'u-1', namespace: 'default', attempt: 2 },
  hostname: 'web',
  logDirectory: '/var/log/pods/default_web_u-1',
  dnsConfig: { servers: ['10.0.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
  portMappings: [
    { protocol: 'TCP', containerPort: 80, hostPort: 8080 },
    { protocol: 'UDP', containerPort: 53 },
  ],
  labels: { app: 'web' },
  annotations: { note: 'x' },
  linux: {
    cgroupParent: '/kubepods/podu-1',
    securityContext: { namespaceOptions: { network: 'NODE' }, runAsUser: 0, supplementalGroups: [5] },
    sysctls: { 'net.ipv4.ip_forward': '1' },
  },
};

const container: ContainerConfig = {
  metadata: { name: 'app', attempt: 3 },
  image: 'docker.io/library/busybox:latest',
  command: ['sh', '-c'],
  args: ['sleep 1'],
  envs: [{ key: 'A', value: '1' }],
  mounts: [{ containerPath: '/data', hostPath: '/tmp/data', readonly: true }],
  labels: { l: '1' },
  annotations: { a: '2' },
  logPath: 'app/3.log',
  linux: {
    resources: { cpuShares: 102, cpuPeriod: 100000, cpuQuota: 50000, memoryLimitInBytes: 10 * 1024 * 1024 },
    securityContext: { runAsUser: 1000, capabilities: { addCapabilities: ['NET_ADMIN'] } },
  },
};

describe('runtime/cri convert', () => {
  describe('int64 values', () => {
    it('reads nanosecond timestamps beyond 2^53 exactly', () => {
      const ns = '1795384705296398046';
      expect(int64ToBigint(ns)).to.equal(1795384705296398046n);
      expect(bigintToInt64(int64ToBigint(ns))).to.equal(ns);
      expect(int64ToBigint('0')).to.equal(0n);
      expect(int64ToBigint('')).to.equal(0n);
      expect(int64ToBigint(null)).to.equal(0n);
      expect(int64ToBigint('-5')).to.equal(-5n);
    });

    it('refuses values that lost or would lose precision', () => {
      expect(errorKind(catchErr(() => int64ToBigint(2 ** 60)))).to.equal('Internal');
      expect(errorKind(catchErr(() => int64ToBigint('12abc')))).to.equal('Internal');
      expect(errorKind(catchErr(() => bigintToInt64(2n ** 63n)))).to.equal('InvalidArgument');
      expect(bigintToInt64(-(2n ** 63n))).to.equal('-9223372036854775808');
      expect(errorKind(catchErr(() => bigintToInt64(1.5)))).to.equal('InvalidArgument');
    });
  });

  describe('PodSandboxConfig', () => {
    it('maps every field to its CRI name', () => {
      const w = sandboxConfigToWire(sandbox);
      expect(w.metadata).to.deep.equal({ name: 'web', uid: 'u-1', namespace: 'default', attempt: 2 });
      // Host network: the node's UTS namespace, so no hostname (runc would refuse it).
      expect(w.hostname).to.equal('');
      const podNet = {
        ...sandbox,
        linux: { securityContext: { namespaceOptions: { network: 'POD' as const } } },
      };
      expect(sandboxConfigToWire(podNet).hostname).to.equal('web');
      expect(w.log_directory).to.equal('/var/log/pods/default_web_u-1');
      expect(w.dns_config).to.deep.equal({
        servers: ['10.0.0.10'],
        searches: ['default.svc.cluster.local'],
        options: ['ndots:5'],
      });
      expect(w.port_mappings).to.deep.equal([
        { protocol: 'TCP', container_port: 80, host_port: 8080, host_ip: '' },
        { protocol: 'UDP', container_port: 53, host_port: 0, host_ip: '' },
      ]);
      expect(w.labels).to.deep.equal({ app: 'web' });
      expect(w.annotations).to.deep.equal({ note: 'x' });
      expect(w.linux.cgroup_parent).to.equal('/kubepods/podu-1');
      expect(w.linux.sysctls).to.deep.equal({ 'net.ipv4.ip_forward': '1' });
      const sc = w.linux.security_context;
      // run_as_user 0 (root) is present, not dropped as a zero value.
      expect(sc.run_as_user).to.deep.equal({ value: '0' });
      expect(sc).to.not.have.property('run_as_group');
      expect(sc.supplemental_groups).to.deep.equal(['5']);
    });

    it('sends the sandbox resources as LinuxPodSandboxConfig.resources, none when unset', () => {
      const resources = { cpuShares: 512, cpuPeriod: 100000, cpuQuota: 50000, memoryLimitInBytes: 1024 };
      const w = sandboxConfigToWire({ ...sandbox, linux: { ...sandbox.linux, resources } });
      expect(w.linux.resources).to.deep.equal({
        cpu_period: '100000',
        cpu_quota: '50000',
        cpu_shares: '512',
        memory_limit_in_bytes: '1024',
        oom_score_adj: '0',
      });
      expect(
        sandboxConfigToWire({ metadata: sandbox.metadata, labels: {}, annotations: {} }).linux,
      ).to.not.have.property('resources');
    });

    it('sends RuntimeDefault seccomp explicitly and the kubelet namespace defaults', () => {
      const w = sandboxConfigToWire({ metadata: sandbox.metadata, labels: {}, annotations: {} });
      expect(w.linux.security_context.seccomp).to.deep.equal({
        profile_type: 'RuntimeDefault',
        localhost_ref: '',
      });
      expect(w.linux.security_context.namespace_options).to.deep.equal({
        network: 'POD',
        pid: 'CONTAINER',
        ipc: 'POD',
      });
      expect(w.hostname).to.equal('');
      expect(w.log_directory).to.equal('');
      expect(w).to.not.have.property('dns_config');
      const nodeNet = sandboxConfigToWire(sandbox).linux.security_context.namespace_options;
      expect(nodeNet).to.deep.equal({ network: 'NODE', pid: 'CONTAINER', ipc: 'POD' });
    });

    it('does not share objects with its input', () => {
      const w = sandboxConfigToWire(sandbox);
      w.labels.app = 'changed';
      expect(sandbox.labels.app).to.equal('web');
    });

    it('rejects incomplete metadata and non-integer numbers as InvalidArgument', () => {
      const bad = { ...sandbox, metadata: { ...sandbox.metadata, uid: '' } };
      expect(errorKind(catchErr(() => sandboxConfigToWire(bad)))).to.equal('InvalidArgument');
      const badAttempt = { ...sandbox, metadata: { ...sandbox.metadata, attempt: -1 } };
      expect(errorKind(catchErr(() => sandboxConfigToWire(badAttempt)))).to.equal('InvalidArgument');
      const badPort = { ...sandbox, portMappings: [{ protocol: 'TCP' as const, containerPort: 1.5 }] };
      expect(errorKind(catchErr(() => sandboxConfigToWire(badPort)))).to.equal('InvalidArgument');
    });

    it('maps seccomp profiles, Localhost needing a reference', () => {
      expect(securityProfileToWire({ profileType: 'Unconfined' })).to.deep.equal({
        profile_type: 'Unconfined',
        localhost_ref: '',
      });
      expect(securityProfileToWire({ profileType: 'Localhost', localhostRef: 'p.json' })).to.deep.equal({
        profile_type: 'Localhost',
        localhost_ref: 'p.json',
      });
      expect(errorKind(catchErr(() => securityProfileToWire({ profileType: 'Localhost' })))).to.equal(
        'InvalidArgument',
      );
    });
  });

  describe('ContainerConfig', () => {
    it('maps every field, resources as int64 strings', () => {
      const w = containerConfigToWire(container, sandbox);
      expect(w.metadata).to.deep.equal({ name: 'app', attempt: 3 });
      expect(w.image).to.deep.equal({ image: 'docker.io/library/busybox:latest' });
      expect(w.command).to.deep.equal(['sh', '-c']);
      expect(w.args).to.deep.equal(['sleep 1']);
      expect(w.envs).to.deep.equal([{ key: 'A', value: '1' }]);
      expect(w.mounts).to.deep.equal([
        {
          container_path: '/data',
          host_path: '/tmp/data',
          readonly: true,
          selinux_relabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ]);
      expect(w.log_path).to.equal('app/3.log');
      expect(w.linux.resources).to.deep.equal({
        cpu_period: '100000',
        cpu_quota: '50000',
        cpu_shares: '102',
        memory_limit_in_bytes: '10485760',
        oom_score_adj: '0',
      });
      const sc = w.linux.security_context;
      expect(sc.run_as_user).to.deep.equal({ value: '1000' });
      expect(sc.capabilities).to.deep.equal({ add_capabilities: ['NET_ADMIN'], drop_capabilities: [] });
      expect(sc.seccomp.profile_type).to.equal('RuntimeDefault');
    });

    it("inherits the sandbox's namespace modes unless it names its own", () => {
      const w = containerConfigToWire(container, sandbox);
      expect(w.linux.security_context.namespace_options).to.deep.equal({
        network: 'NODE',
        pid: 'CONTAINER',
        ipc: 'POD',
      });
      const own = containerConfigToWire(
        { ...container, linux: { securityContext: { namespaceOptions: { pid: 'POD' } } } },
        sandbox,
      );
      expect(own.linux.security_context.namespace_options).to.deep.equal({
        network: 'NODE',
        pid: 'POD',
        ipc: 'POD',
      });
    });

    it('sends masked and read-only paths as given, an empty list too, and none when absent', () => {
      const paths = (maskedPaths?: string[], readonlyPaths?: string[]) =>
        containerConfigToWire(
          {
            ...container,
            linux: {
              securityContext: {
                ...(maskedPaths ? { maskedPaths } : {}),
                ...(readonlyPaths ? { readonlyPaths } : {}),
              },
            },
          },
          sandbox,
        ).linux.security_context;
      expect(paths(['/proc/kcore'], ['/proc/sys'])).to.deep.include({
        masked_paths: ['/proc/kcore'],
        readonly_paths: ['/proc/sys'],
      });
      expect(paths([], [])).to.deep.include({ masked_paths: [], readonly_paths: [] });
      expect(paths()).to.not.have.property('masked_paths');
    });

    it('leaves resources out when none are given', () => {
      const w = containerConfigToWire(
        { metadata: { name: 'a', attempt: 0 }, image: 'i', labels: {}, annotations: {} },
        sandbox,
      );
      expect(w.linux).to.not.have.property('resources');
      expect(w.linux.security_context.seccomp.profile_type).to.equal('RuntimeDefault');
      expect(w.stdin).to.equal(false);
    });

    it('rejects a container without name or image', () => {
      const noImage = { ...container, image: '' };
      expect(errorKind(catchErr(() => containerConfigToWire(noImage, sandbox)))).to.equal('InvalidArgument');
      const noName = { ...container, metadata: { name: '', attempt: 0 } };
      expect(errorKind(catchErr(() => containerConfigToWire(noName, sandbox)))).to.equal('InvalidArgument');
    });
  });

  describe('filters', () => {
    it('sends only what is set, states as CRI enum names', () => {
      expect(sandboxFilterToWire(undefined)).to.deep.equal({});
      expect(sandboxFilterToWire({ state: 'ready', labelSelector: { a: 'b' }, id: 'x' })).to.deep.equal({
        id: 'x',
        state: { state: 'SANDBOX_READY' },
        label_selector: { a: 'b' },
      });
      expect(containerFilterToWire({ state: 'exited', podSandboxId: 's' })).to.deep.equal({
        pod_sandbox_id: 's',
        state: { state: 'CONTAINER_EXITED' },
      });
      expect(containerFilterToWire({ state: 'unknown' }).state).to.deep.equal({ state: 'CONTAINER_UNKNOWN' });
    });
  });

  describe('responses', () => {
    const wireStatus: WirePodSandboxStatus = {
      id: 'sb',
      metadata: { name: 'web', uid: 'u-1', namespace: 'default', attempt: 1 },
      state: 'SANDBOX_NOTREADY',
      created_at: '1795384705085539421',
      labels: { a: '1' },
      annotations: { b: '2' },
      network: null,
      linux: { namespaces: { options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };

    it('maps sandboxes and sandbox status (no network status = absent)', () => {
      const s = sandboxStatusFromWire(wireStatus);
      expect(s).to.deep.equal({
        id: 'sb',
        metadata: { name: 'web', uid: 'u-1', namespace: 'default', attempt: 1 },
        state: 'notready',
        createdAt: 1795384705085539421n,
        labels: { a: '1' },
        annotations: { b: '2' },
        networkMode: 'NODE',
      });
      const withNet = sandboxStatusFromWire({
        ...wireStatus,
        state: 'SANDBOX_READY',
        network: { ip: '10.1.0.5', additional_ips: [{ ip: 'fd00::5' }] },
        linux: null,
      });
      expect(withNet.network).to.deep.equal({ ip: '10.1.0.5', additionalIps: ['fd00::5'] });
      expect(withNet.networkMode).to.equal('POD');
      expect(withNet.state).to.equal('ready');
      expect(sandboxFromWire({ ...wireStatus, metadata: null }).metadata).to.deep.equal({
        name: '',
        uid: '',
        namespace: '',
        attempt: 0,
      });
    });

    it('maps containers and container status, the log path as the runtime gives it', () => {
      const c = containerFromWire({
        id: 'c1',
        pod_sandbox_id: 'sb',
        metadata: { name: 'app', attempt: 1 },
        image: { image: 'sha256:abc' },
        image_ref: 'sha256:abc',
        state: 'CONTAINER_RUNNING',
        created_at: '1795384705296398046',
        labels: {},
        annotations: {},
      });
      expect(c.state).to.equal('running');
      expect(c.createdAt).to.equal(1795384705296398046n);
      expect(c.podSandboxId).to.equal('sb');
      expect(c.image).to.equal('sha256:abc');

      const wire: WireContainerStatus = {
        id: 'c1',
        metadata: { name: 'app', attempt: 1 },
        state: 'CONTAINER_EXITED',
        created_at: '1795384705296398046',
        started_at: '1795384705440575893',
        finished_at: '1795384705737548368',
        exit_code: 137,
        image: { image: 'docker.io/library/busybox:1.36' },
        image_ref: 'sha256:6d63',
        reason: 'OOMKilled',
        message: '',
        labels: { l: '1' },
        annotations: { a: '1' },
        log_path: '/var/log/pods/default_web_u-1/app/1.log',
      };
      const s = containerStatusFromWire(wire, 'sb');
      expect(s).to.deep.include({
        id: 'c1',
        podSandboxId: 'sb',
        state: 'exited',
        exitCode: 137,
        reason: 'OOMKilled',
        startedAt: 1795384705440575893n,
        finishedAt: 1795384705737548368n,
        logPath: '/var/log/pods/default_web_u-1/app/1.log',
      });
      expect(containerStatusFromWire({ ...wire, state: 'CONTAINER_CREATED' }).podSandboxId).to.equal('');
      expect(containerStatusFromWire({ ...wire, state: 'BOGUS' as never }).state).to.equal('unknown');
    });

    it('maps images, version and exec results', () => {
      expect(
        imageFromWire({ id: 'sha256:x', repo_tags: ['a:1'], repo_digests: [], size: '1234567' }),
      ).to.deep.equal({
        id: 'sha256:x',
        repoTags: ['a:1'],
        repoDigests: [],
        size: 1234567,
      });
      // The image's USER: uid when numeric, username when a name, neither (root) when unset.
      const image = { id: 'sha256:x', repo_tags: [], repo_digests: [], size: '1' };
      expect(imageFromWire({ ...image, uid: { value: '1234' }, username: '' })).to.include({ uid: 1234 });
      expect(imageFromWire({ ...image, uid: { value: '0' }, username: '' })).to.include({ uid: 0 });
      expect(imageFromWire({ ...image, uid: null, username: 'nonroot' })).to.include({ username: 'nonroot' });
      const root = imageFromWire({ ...image, uid: null, username: '' });
      expect(root).to.not.have.any.keys('uid', 'username');
      expect(
        versionFromWire({
          version: '0.1.0',
          runtime_name: 'containerd',
          runtime_version: '1.6.20',
          runtime_api_version: 'v1',
        }),
      ).to.deep.equal({
        version: '0.1.0',
        runtimeName: 'containerd',
        runtimeVersion: '1.6.20',
        runtimeApiVersion: 'v1',
      });
      const out = Buffer.from('hi\n');
      const r = execSyncFromWire({ stdout: out, stderr: Buffer.alloc(0), exit_code: 3 });
      expect(r.stdout.toString()).to.equal('hi\n');
      expect(r.exitCode).to.equal(3);
      out.write('X');
      expect(r.stdout.toString(), 'a copy, not a view').to.equal('hi\n');
    });
  });

  describe('through the proto (field names and numbers)', () => {
    const svc = runtimeServiceCodecs();

    it('CreateContainer survives encode/decode with every field we set', () => {
      const method = svc.CreateContainer!;
      const request = {
        pod_sandbox_id: 'sb',
        config: containerConfigToWire(container, sandbox),
        sandbox_config: sandboxConfigToWire(sandbox),
      };
      const back = method.requestDeserialize(method.requestSerialize(request));
      // A misspelled field would vanish on encode: everything we sent must come back.
      assertSubset(back, request, 'CreateContainerRequest');
    });

    it('RunPodSandbox with a default config keeps the explicit RuntimeDefault seccomp', () => {
      const method = svc.RunPodSandbox!;
      const request = {
        config: sandboxConfigToWire({ metadata: sandbox.metadata, labels: {}, annotations: {} }),
      };
      const back = method.requestDeserialize(method.requestSerialize(request)) as {
        config: { linux: { security_context: { seccomp: unknown } } };
      };
      // Present (not null) on the wire: containerd 1.6 reads an absent profile as unconfined.
      expect(back.config.linux.security_context.seccomp).to.deep.equal({
        profile_type: 'RuntimeDefault',
        localhost_ref: '',
      });
    });
  });

  describe('gRPC errors', () => {
    const ctx = { method: 'StartContainer', endpoint: 'unix:///run/c.sock', timeoutMs: 10 };

    it('maps status codes to kinds', () => {
      const table: [number, string][] = [
        [status.UNAVAILABLE, 'Unavailable'],
        [status.DEADLINE_EXCEEDED, 'DeadlineExceeded'],
        [status.NOT_FOUND, 'NotFound'],
        [status.INVALID_ARGUMENT, 'InvalidArgument'],
        [status.ALREADY_EXISTS, 'AlreadyExists'],
        [status.UNIMPLEMENTED, 'Unimplemented'],
        [status.UNKNOWN, 'Unknown'],
        [status.INTERNAL, 'Internal'],
        [status.FAILED_PRECONDITION, 'Conflict'],
        [status.PERMISSION_DENIED, 'Forbidden'],
      ];
      for (const [code, kind] of table)
        expect(kindForGrpcError({ code, details: 'x' }), String(code)).to.equal(kind);
    });

    it("names every code as grpc-js's status enum does (the table is ours, so grpc-js loads lazily)", () => {
      const names = Object.entries(status).filter(([, v]) => typeof v === 'number');
      expect(names.length).to.equal(17);
      for (const [name, code] of names) expect(grpcCodeName(code as number)).to.equal(name);
      expect(grpcCodeName(99)).to.equal('CODE_99');
    });

    it("reads containerd's reserved-name UNKNOWN as AlreadyExists", () => {
      const details =
        'failed to reserve container name "app_web_default_u-1_0": name "app_web_default_u-1_0" is reserved for "abc"';
      const err = criError({ code: status.UNKNOWN, details }, { ...ctx, method: 'CreateContainer' });
      expect(err.kind).to.equal('AlreadyExists');
      expect(err.message).to.contain('is reserved for');
      expect(err.context.grpcCode).to.equal('UNKNOWN');
    });

    it('names the socket on Unavailable and keeps the cause', () => {
      const cause = {
        code: status.UNAVAILABLE,
        details: 'No connection established. Last error: connect ENOENT',
      };
      const err = criError(cause, ctx);
      expect(err).to.be.instanceOf(KindError);
      expect(err.kind).to.equal('Unavailable');
      expect(err.message).to.contain('unix:///run/c.sock');
      expect(err.message).to.contain('ENOENT');
      expect(err.cause).to.equal(cause);
      expect(err.context).to.include({ method: 'StartContainer', grpcCode: 'UNAVAILABLE' });
    });

    it("keeps the runtime's words for a pull failure", () => {
      const details = 'failed to pull and unpack image "docker.io/library/nope:1": ... no such host';
      const err = criError(
        { code: status.UNKNOWN, details },
        { ...ctx, method: 'PullImage', image: 'nope:1' },
      );
      expect(err.message).to.equal(details);
      expect(err.kind).to.equal('Unknown');
      expect(err.context.image).to.equal('nope:1');
    });

    it('passes KindErrors through and copes with non-gRPC throwables', () => {
      const k = new KindError('NotFound', 'x');
      expect(criError(k, ctx)).to.equal(k);
      expect(criError('boom', ctx).kind).to.equal('Unknown');
    });
  });

  describe('endpoint', () => {
    it('accepts unix:///abs and /abs, rejects anything else', () => {
      expect(parseEndpoint('unix:///run/containerd/containerd.sock')).to.deep.equal({
        endpoint: 'unix:///run/containerd/containerd.sock',
        socketPath: '/run/containerd/containerd.sock',
      });
      expect(parseEndpoint('/tmp/x.sock').endpoint).to.equal('unix:///tmp/x.sock');
      for (const bad of ['unix://rel.sock', 'tcp://1.2.3.4:5', 'x.sock', 'unix://', '']) {
        expect(errorKind(catchErr(() => parseEndpoint(bad))), bad).to.equal('InvalidArgument');
      }
    });
  });
});

/** Every leaf of `want` is present and equal in `got` (decoding adds defaults; it must not lose anything). */
function assertSubset(got: unknown, want: unknown, path: string): void {
  if (want !== null && typeof want === 'object' && !Buffer.isBuffer(want)) {
    expect(got, path).to.be.an(Array.isArray(want) ? 'array' : 'object');
    for (const [k, v] of Object.entries(want)) {
      assertSubset((got as Record<string, unknown>)[k], v, `${path}.${k}`);
    }
    return;
  }
  expect(got, path).to.deep.equal(want);
}

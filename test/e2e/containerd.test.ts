// Smoke tests for the real-containerd harness: the daemon, our CRI proto and the cleanup are all real.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type * as grpc from '@grpc/grpc-js';
import { startContainerd, type TestContainerd } from '../support/containerd.js';
import { rawCriClients, rawUnary } from '../support/rawcri.js';

// Just the response fields these tests read; enums are strings and int64 are decimal strings.
interface VersionResponse {
  runtime_name: string;
  runtime_version: string;
  runtime_api_version: string;
}
interface StatusResponse {
  status: { conditions: { type: string; status: boolean; reason: string }[] } | null;
}
interface ImageStatusResponse {
  image: { id: string; repo_tags: string[]; size: string } | null;
}
interface ContainerStatusResponse {
  status: {
    id: string;
    state: string;
    started_at: string;
    finished_at: string;
    exit_code: number;
    reason: string;
    log_path: string;
  };
}
/** Cgroup directories for `path` (cgroupfs syntax) in every mounted hierarchy, v1 and unified. */
function cgroupDirs(path: string): string[] {
  const base = '/sys/fs/cgroup';
  const roots = [base, ...readdirSync(base).map((d) => `${base}/${d}`)];
  return roots.map((r) => `${r}${path}`).filter((d) => existsSync(d));
}

describe('containerd test harness (real containerd over CRI v1)', function () {
  this.timeout(120_000);

  let ctd: TestContainerd;
  let runtime: grpc.Client;
  let images: grpc.Client;

  before(async function () {
    this.timeout(15 * 60_000); // may apt-get install on a fresh machine
    ctd = await startContainerd();
    ({ runtime, images } = rawCriClients(ctd.endpoint));
  });

  after(async function () {
    this.timeout(3 * 60_000);
    runtime?.close();
    images?.close();
    await ctd?.stop();
  });

  it('answers ctr version on the test socket', async () => {
    const r = await ctd.ctr(['version']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/Server:\s*\n\s*Version:\s*\S+/);
    expect(ctd.endpoint).to.equal(`unix://${ctd.socketPath}`);
    expect(ctd.endpoint.startsWith('unix:///')).to.equal(true);
  });

  it('answers CRI Version as containerd, API v1', async () => {
    const v = await rawUnary<VersionResponse>(runtime, 'Version', { version: 'v1' });
    expect(v.runtime_name).to.equal('containerd');
    expect(v.runtime_api_version).to.equal('v1');
    expect(v.runtime_version).to.match(/^\d+\.\d+\.\d+/);
  });

  it('reports RuntimeReady in CRI Status (and NetworkReady=false without CNI)', async () => {
    const s = await rawUnary<StatusResponse>(runtime, 'Status', {});
    const conditions = s.status?.conditions ?? [];
    expect(conditions.find((c) => c.type === 'RuntimeReady')?.status).to.equal(true);
    expect(conditions.find((c) => c.type === 'NetworkReady')?.status).to.equal(false);
  });

  it('has the imported busybox and pause images (ImageStatus)', async () => {
    for (const ref of [ctd.images.busybox, 'docker.io/library/busybox:1.36', ctd.images.pause]) {
      const r = await rawUnary<ImageStatusResponse>(images, 'ImageStatus', { image: { image: ref } });
      expect(r.image, ref).to.not.equal(null);
      expect(r.image!.repo_tags).to.include(ref);
      expect(r.image!.id).to.match(/^sha256:[0-9a-f]{64}$/);
      expect(Number(r.image!.size)).to.be.greaterThan(0);
    }
    const missing = await rawUnary<ImageStatusResponse>(images, 'ImageStatus', {
      image: { image: 'docker.io/library/not-here:1' },
    });
    expect(missing.image).to.equal(null);
  });

  it('runs a host-network pod with busybox sleep, then stops and removes it', async () => {
    const uid = `smoke-${process.pid}-${Date.now()}`;
    const cgroupParent = `${ctd.cgroupParentPrefix}/pod${uid}`;
    const sandboxConfig = {
      metadata: { name: 'smoke', uid, namespace: 'default', attempt: 0 },
      hostname: '',
      log_directory: `${ctd.dir}/pods/default_smoke_${uid}`,
      labels: { 'kubelet-operator/test': 'smoke' },
      annotations: { note: 'kept verbatim' },
      linux: {
        cgroup_parent: cgroupParent,
        security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
      },
    };

    const { pod_sandbox_id: sandboxId } = await rawUnary<{ pod_sandbox_id: string }>(
      runtime,
      'RunPodSandbox',
      {
        config: sandboxConfig,
      },
    );
    expect(sandboxId).to.match(/^[0-9a-f]{64}$/);

    const { container_id: containerId } = await rawUnary<{ container_id: string }>(
      runtime,
      'CreateContainer',
      {
        pod_sandbox_id: sandboxId,
        config: {
          metadata: { name: 'sleeper', attempt: 0 },
          image: { image: ctd.images.busybox },
          command: ['sleep', '3600'],
          log_path: 'sleeper/0.log',
          labels: { 'kubelet-operator/test': 'smoke' },
        },
        sandbox_config: sandboxConfig,
      },
    );
    await rawUnary(runtime, 'StartContainer', { container_id: containerId });

    const running = await rawUnary<ContainerStatusResponse>(runtime, 'ContainerStatus', {
      container_id: containerId,
    });
    expect(running.status.state).to.equal('CONTAINER_RUNNING');
    // int64 nanoseconds beyond 2^53 must arrive as exact decimal strings.
    expect(running.status.started_at).to.match(/^\d{19}$/);
    expect(BigInt(running.status.started_at) > BigInt(Number.MAX_SAFE_INTEGER)).to.equal(true);
    expect(running.status.log_path).to.equal(`${sandboxConfig.log_directory}/sleeper/0.log`);
    expect(existsSync(running.status.log_path)).to.equal(true);
    expect(cgroupDirs(cgroupParent), 'pod cgroup while running').to.not.be.empty;

    const sandboxes = await rawUnary<{ items: unknown[] }>(runtime, 'ListPodSandbox', {
      filter: { label_selector: { 'kubelet-operator/test': 'smoke' } },
    });
    expect(sandboxes.items).to.have.length(1);

    // sleep is PID 1 and ignores SIGTERM: timeout 0 kills at once.
    await rawUnary(runtime, 'StopContainer', { container_id: containerId, timeout: 0 });
    const exited = await rawUnary<ContainerStatusResponse>(runtime, 'ContainerStatus', {
      container_id: containerId,
    });
    expect(exited.status.state).to.equal('CONTAINER_EXITED');
    expect(exited.status.exit_code).to.equal(137);
    expect(exited.status.finished_at).to.not.equal('0');

    await rawUnary(runtime, 'RemoveContainer', { container_id: containerId });
    await rawUnary(runtime, 'StopPodSandbox', { pod_sandbox_id: sandboxId });
    await rawUnary(runtime, 'RemovePodSandbox', { pod_sandbox_id: sandboxId });

    const containers = await rawUnary<{ containers: unknown[] }>(runtime, 'ListContainers', {});
    expect(containers.containers).to.deep.equal([]);
    const after = await rawUnary<{ items: unknown[] }>(runtime, 'ListPodSandbox', {});
    expect(after.items).to.deep.equal([]);
    const ctrList = await ctd.ctr(['containers', 'list', '--quiet']);
    expect(ctrList.stdout.trim()).to.equal('');
    // containerd leaves the pod-level cgroup behind (the kubelet removes it); stop() must take it.
    expect(cgroupDirs(cgroupParent), 'pod cgroup left after RemovePodSandbox').to.not.be.empty;
  });

  it('stop() leaves no process, mount, directory or pod cgroup behind', async () => {
    // A second pod that is still running when stop() comes: the harness must clean it up itself.
    const uid = `leftover-${process.pid}-${Date.now()}`;
    const sandboxConfig = {
      metadata: { name: 'leftover', uid, namespace: 'default', attempt: 0 },
      linux: {
        cgroup_parent: `${ctd.cgroupParentPrefix}/pod${uid}`,
        security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
      },
    };
    const { pod_sandbox_id } = await rawUnary<{ pod_sandbox_id: string }>(runtime, 'RunPodSandbox', {
      config: sandboxConfig,
    });
    const { container_id } = await rawUnary<{ container_id: string }>(runtime, 'CreateContainer', {
      pod_sandbox_id,
      config: {
        metadata: { name: 'sleeper', attempt: 0 },
        image: { image: ctd.images.busybox },
        command: ['sleep', '3600'],
      },
      sandbox_config: sandboxConfig,
    });
    await rawUnary(runtime, 'StartContainer', { container_id });

    await ctd.stop();
    await ctd.stop(); // idempotent

    expect(existsSync(ctd.dir), 'instance dir').to.equal(false);
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(ctd.dir));
    expect(mounts, 'mounts under the instance dir').to.deep.equal([]);
    const procs = readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(ctd.dir);
        } catch {
          return false; // exited meanwhile
        }
      });
    expect(procs, 'processes naming the instance dir').to.deep.equal([]);
    expect(cgroupDirs(ctd.cgroupParentPrefix), 'cgroups under the test prefix').to.deep.equal([]);
  });
});

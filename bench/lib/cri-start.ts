// Starting one pod straight on a CRI runtime (RunPodSandbox + CreateContainer + StartContainer of busybox
// `sleep 3600`, host network) two ways: through our CriRuntime client, and as bare grpc-js calls from the
// same proto (no client layer at all). Shared by bench/cri-runtime.bench.ts and the cri-latency scenario.
import { randomUUID } from 'node:crypto';
import type { CriRuntime } from '../../src/runtime/cri/client.js';
import type { PodSandboxConfig, ContainerConfig } from '../../src/runtime/types.js';
import type { TestContainerd } from '../../test/support/containerd.js';
import { rawCriClients, rawUnary } from '../../test/support/rawcri.js';

/** One way of starting a pod; resolves to the sandbox ID. */
export interface Starter {
  name: string;
  start(i: string): Promise<string>;
  cleanup(sandboxId: string): Promise<void>;
}

// ------------------------------------------------------------------------------------ raw grpc-js

/** Bare grpc-js RuntimeService calls (test/support/rawcri.ts), 120 s deadline each. */
export function rawClient(endpoint: string): {
  call<T>(method: string, req: object): Promise<T>;
  close(): void;
} {
  const { runtime, images } = rawCriClients(endpoint);
  images.close();
  return {
    call: <T>(method: string, req: object) => rawUnary<T>(runtime, method, req, 120_000),
    close: () => runtime.close(),
  };
}

export function rawStarter(ctd: TestContainerd): Starter & { close(): void } {
  const raw = rawClient(ctd.endpoint);
  return {
    name: 'raw grpc-js',
    async start(tag) {
      const uid = randomUUID();
      const sandboxConfig = {
        metadata: { name: `bench-${tag}`, uid, namespace: 'bench', attempt: 0 },
        log_directory: `${ctd.dir}/pods/bench_bench-${tag}_${uid}`,
        labels: { bench: 'cri' },
        annotations: {},
        linux: {
          cgroup_parent: `${ctd.cgroupParentPrefix}/pod${uid}`,
          security_context: {
            namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
            seccomp: { profile_type: 'RuntimeDefault' },
          },
        },
      };
      const { pod_sandbox_id } = await raw.call<{ pod_sandbox_id: string }>('RunPodSandbox', {
        config: sandboxConfig,
      });
      const { container_id } = await raw.call<{ container_id: string }>('CreateContainer', {
        pod_sandbox_id,
        config: {
          metadata: { name: 'main', attempt: 0 },
          image: { image: ctd.images.busybox },
          command: ['sleep', '3600'],
          log_path: 'main/0.log',
          labels: { bench: 'cri' },
          annotations: {},
          linux: {
            security_context: {
              namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
              seccomp: { profile_type: 'RuntimeDefault' },
            },
          },
        },
        sandbox_config: sandboxConfig,
      });
      await raw.call('StartContainer', { container_id });
      return pod_sandbox_id;
    },
    async cleanup(id) {
      await raw.call('StopPodSandbox', { pod_sandbox_id: id });
      await raw.call('RemovePodSandbox', { pod_sandbox_id: id });
    },
    close: () => raw.close(),
  };
}

// ------------------------------------------------------------------------------------ CriRuntime

export function criStarter(ctd: TestContainerd, rt: CriRuntime): Starter {
  return {
    name: 'CriRuntime',
    async start(tag) {
      const uid = randomUUID();
      const sandbox: PodSandboxConfig = {
        metadata: { name: `bench-${tag}`, uid, namespace: 'bench', attempt: 0 },
        logDirectory: `${ctd.dir}/pods/bench_bench-${tag}_${uid}`,
        labels: { bench: 'cri' },
        annotations: {},
        linux: {
          cgroupParent: `${ctd.cgroupParentPrefix}/pod${uid}`,
          securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
        },
      };
      const id = await rt.runPodSandbox(sandbox);
      const container: ContainerConfig = {
        metadata: { name: 'main', attempt: 0 },
        image: ctd.images.busybox,
        command: ['sleep', '3600'],
        logPath: 'main/0.log',
        labels: { bench: 'cri' },
        annotations: {},
      };
      const cid = await rt.createContainer(id, container, sandbox);
      await rt.startContainer(cid);
      return id;
    },
    async cleanup(id) {
      await rt.stopPodSandbox(id);
      await rt.removePodSandbox(id);
    },
  };
}

/** Runs `fn`; resolves to its value and the milliseconds it took. */
export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = process.hrtime.bigint();
  const v = await fn();
  return [v, Number(process.hrtime.bigint() - t0) / 1e6];
}

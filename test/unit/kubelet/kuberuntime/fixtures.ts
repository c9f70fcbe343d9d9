/** Small builders for computePodActions tests (a pod, a runtime view, probe caches) and the config builders' tests. */
import type { Container, Pod, RestartPolicy } from '../../../../src/api/core.js';
import { hashContainer } from '../../../../src/kubelet/container/helpers.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type ContainerState,
  type KubeContainerStatus,
  type RuntimePodStatus,
  type SandboxStatus,
} from '../../../../src/kubelet/container/types.js';
import type { ProbeResult, ProbeResultsReader } from '../../../../src/kubelet/prober/types.js';
import type { NodeSettings } from '../../../../src/kubelet/kuberuntime/sandboxconfig.js';

export function pod(opts: {
  containers?: (string | Container)[];
  init?: (string | Container)[];
  ephemeral?: string[];
  restartPolicy?: RestartPolicy;
  hostNetwork?: boolean;
  deleting?: boolean;
}): Pod {
  const c = (x: string | Container): Container => (typeof x === 'string' ? { name: x, image: 'busybox' } : x);
  const p: Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
    spec: { containers: (opts.containers ?? ['foo1', 'foo2', 'foo3']).map(c) },
  };
  if (opts.init) p.spec.initContainers = opts.init.map(c);
  if (opts.ephemeral) p.spec.ephemeralContainers = opts.ephemeral.map((name) => ({ name, image: 'busybox' }));
  if (opts.restartPolicy) p.spec.restartPolicy = opts.restartPolicy;
  if (opts.hostNetwork) p.spec.hostNetwork = true;
  if (opts.deleting) p.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  return p;
}

export const sidecar = (name: string, probes: { liveness?: boolean; startup?: boolean } = {}): Container => ({
  name,
  image: 'busybox',
  restartPolicy: 'Always',
  ...(probes.liveness ? { livenessProbe: { exec: { command: ['true'] } } } : {}),
  ...(probes.startup ? { startupProbe: { exec: { command: ['true'] } } } : {}),
});

export function sandbox(over: Partial<SandboxStatus> = {}): SandboxStatus {
  return { id: asSandboxID('sb1'), state: 'ready', attempt: 0, ip: '10.0.0.1', netns: 'pod', ...over };
}

/** A record whose hash matches `spec` (or `{name, image: busybox}`) unless `changed`. */
export function record(
  name: string,
  state: ContainerState,
  over: Partial<KubeContainerStatus> & { changed?: boolean; spec?: Container } = {},
): KubeContainerStatus {
  const { changed, spec, ...rest } = over;
  const s = spec ?? { name, image: 'busybox' };
  return {
    id: asContainerID(`id-${name}`),
    name,
    state,
    exitCode: 0,
    restartCount: 0,
    hash: hashContainer(changed ? { ...s, image: 'other' } : s),
    ...rest,
  };
}

export function runtime(sandboxes: SandboxStatus[], containers: KubeContainerStatus[]): RuntimePodStatus {
  return { uid: asPodUID('uid-1'), name: 'web', namespace: 'default', sandboxes, containers, ips: [] };
}

export function probes(
  liveness: Record<string, ProbeResult> = {},
  startup: Record<string, ProbeResult> = {},
): { liveness: ProbeResultsReader; startup: ProbeResultsReader } {
  return {
    liveness: { get: (id) => liveness[id] },
    startup: { get: (id) => startup[id] },
  };
}

export const running3 = () => ['foo1', 'foo2', 'foo3'].map((n) => record(n, 'running'));

/** The node the sandbox and container config tests build for. */
export const CONFIG_NODE: NodeSettings = {
  nodeName: 'vn-1',
  podLogsRoot: '/var/log/pods/',
  cgroupRoot: '/kubepods',
};

/** The pod the sandbox and container config tests start from: `prod/web` with a label and an annotation. */
export function configPod(overrides: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'prod',
      uid: 'uid-1',
      labels: { app: 'web' },
      annotations: { a: 'b' },
      ...meta,
    },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...overrides },
  };
}

/**
 * CriRuntime: the Runtime seam over CRI v1 gRPC (containerd, CRI-O) on a unix socket: the RuntimeService
 * and ImageService calls, each translated to and from our proto's messages (convert.ts) with its deadline
 * (deadlines.ts) over one connection (connection.ts: fail fast, reconnect, no retries, one log line per
 * outage). It knows containers and sandboxes, never pods: the kubelet builds the configs.
 *
 * Contract, beyond src/runtime/types.ts:
 * - Removing an unknown sandbox or container, and stopping an unknown sandbox, succeed (CRI: idempotent).
 * - ContainerStatus carries the container's sandbox ID, which CRI's ContainerStatus lacks: it comes from a
 *   listing (cached; IDs never change meaning).
 * - Capabilities: the kubelet lays out the host's pod log directories (the runtime writes the files there)
 *   and removes the pod cgroups containerd leaves behind; probes go over the network to the pod IPs; container
 *   IDs carry the runtime's own name (containerd://...). No image volumes: containerd 1.6 ignores
 *   Mount.image (2.1 has it) and no CRI call tells whether a runtime mounts images.
 * - Status: the runtime handlers and features as the runtime reports them; containerd 1.6 reports neither
 *   (its CRI is older than both fields), so its nodes show none and refuse what needs them, as a kubelet's.
 */
import { KindError } from '../../util/errors.js';
import type {
  AuthConfig,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  ImageFsInfo,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatus,
  Runtime,
  RuntimeCapabilities,
  RuntimeStatus,
  RuntimeVersion,
  SandboxFilter,
  StreamingRequest,
} from '../types.js';
import {
  containerStatsFilterToWire,
  containerStatsFromWire,
  imageFsInfoFromWire,
  podSandboxStatsFromWire,
  sandboxStatsFilterToWire,
  type WireContainerStats,
  type WirePodSandboxStats,
} from './stats.js';
import { CriConnection, type CriLogger } from './connection.js';
import {
  containerConfigToWire,
  containerFilterToWire,
  containerFromWire,
  containerStatusFromWire,
  execSyncFromWire,
  imageFromWire,
  resourcesToWire,
  runtimeStatusFromWire,
  sandboxConfigToWire,
  sandboxFilterToWire,
  sandboxFromWire,
  sandboxStatusFromWire,
  versionFromWire,
} from './convert.js';
import { CriDeadlines, type CriTimeouts } from './deadlines.js';
import type {
  WireContainer,
  WireContainerStatus,
  WireExecSyncResponse,
  WireImage,
  WirePodSandbox,
  WirePodSandboxStatus,
  WireStatusResponse,
  WireVersionResponse,
} from './messages.js';

export type { CriLogger } from './connection.js';
export {
  DEFAULT_EXEC_GRACE_MS,
  DEFAULT_PULL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SHORT_TIMEOUT_MS,
} from './deadlines.js';

export interface CriRuntimeOptions extends CriTimeouts {
  /** `unix:///absolute/path.sock` (a bare absolute path is accepted too). */
  endpoint: string;
  logger?: CriLogger;
  /** Our CRI proto; defaults to proto/api.proto beside connection.ts. */
  protoPath?: string;
}

/** The version string the kubelet sends in VersionRequest. */
const KUBE_RUNTIME_API_VERSION = '0.1.0';

/** See the module comment. */
const CRI_CAPABILITIES: RuntimeCapabilities = Object.freeze({
  hostLogDirectories: true,
  hostPodCgroups: true,
});

export class CriRuntime implements Runtime {
  readonly kind = 'cri' as const;
  readonly capabilities = CRI_CAPABILITIES;
  readonly endpoint: string;
  readonly socketPath: string;

  private readonly conn: CriConnection;
  private readonly deadlines: CriDeadlines;
  /** Container -> sandbox; CRI's ContainerStatus lacks the sandbox ID, and it never changes. */
  private readonly sandboxOf = new Map<string, string>();

  /** Throws InvalidArgument for a malformed endpoint or timeout (nothing is dialled yet). */
  constructor(opts: CriRuntimeOptions) {
    this.deadlines = new CriDeadlines(opts);
    this.conn = new CriConnection(opts.endpoint, opts.logger, opts.protoPath);
    this.endpoint = this.conn.endpoint;
    this.socketPath = this.conn.socketPath;
  }

  // ---------------------------------------------------------------------------------- runtime

  async version(): Promise<RuntimeVersion> {
    const r = await this.conn.call<WireVersionResponse>(
      'runtime',
      'Version',
      { version: KUBE_RUNTIME_API_VERSION },
      this.deadlines.shortMs,
    );
    return versionFromWire(r);
  }

  async status(): Promise<RuntimeStatus> {
    const r = await this.conn.call<WireStatusResponse>('runtime', 'Status', {}, this.deadlines.shortMs);
    return runtimeStatusFromWire(r);
  }

  async updatePodCIDR(podCIDR: string): Promise<void> {
    await this.conn.call<Record<string, never>>(
      'runtime',
      'UpdateRuntimeConfig',
      { runtime_config: { network_config: { pod_cidr: podCIDR } } },
      this.deadlines.shortMs,
    );
  }

  // ---------------------------------------------------------------------------------- sandboxes

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const wire = sandboxConfigToWire(config);
    const r = await this.conn.call<{ pod_sandbox_id: string }>(
      'runtime',
      'RunPodSandbox',
      { config: wire },
      this.deadlines.requestMs,
      { pod: `${config.metadata.namespace}/${config.metadata.name}`, podUID: config.metadata.uid },
    );
    return r.pod_sandbox_id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.conn.call('runtime', 'StopPodSandbox', { pod_sandbox_id: id }, this.deadlines.requestMs, {
        sandbox: id,
      }),
    );
  }

  async removePodSandbox(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.conn.call('runtime', 'RemovePodSandbox', { pod_sandbox_id: id }, this.deadlines.requestMs, {
        sandbox: id,
      }),
    );
    for (const [c, s] of this.sandboxOf) if (s === id) this.sandboxOf.delete(c);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    const r = await this.conn.call<{ status: WirePodSandboxStatus | null }>(
      'runtime',
      'PodSandboxStatus',
      { pod_sandbox_id: id },
      this.deadlines.shortMs,
      { sandbox: id },
    );
    if (!r.status)
      throw new KindError('NotFound', `CRI PodSandboxStatus: no status for sandbox ${id}`, { sandbox: id });
    return sandboxStatusFromWire(r.status);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]> {
    const r = await this.conn.call<{ items: WirePodSandbox[] }>(
      'runtime',
      'ListPodSandbox',
      { filter: sandboxFilterToWire(filter) },
      this.deadlines.shortMs,
    );
    return (r.items ?? []).map(sandboxFromWire);
  }

  // ---------------------------------------------------------------------------------- containers

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string> {
    const request = {
      pod_sandbox_id: podSandboxId,
      config: containerConfigToWire(config, sandboxConfig),
      // containerd 1.6 panics without it.
      sandbox_config: sandboxConfigToWire(sandboxConfig),
    };
    const r = await this.conn.call<{ container_id: string }>(
      'runtime',
      'CreateContainer',
      request,
      this.deadlines.requestMs,
      { sandbox: podSandboxId, container: config.metadata.name, attempt: config.metadata.attempt },
    );
    this.rememberSandbox(r.container_id, podSandboxId);
    return r.container_id;
  }

  async startContainer(id: string): Promise<void> {
    await this.conn.call('runtime', 'StartContainer', { container_id: id }, this.deadlines.requestMs, {
      container: id,
    });
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const { graceSeconds, timeoutMs } = this.deadlines.stopContainer(timeoutSeconds);
    await this.conn.call(
      'runtime',
      'StopContainer',
      { container_id: id, timeout: String(graceSeconds) },
      timeoutMs,
      { container: id, gracePeriodSeconds: graceSeconds },
    );
  }

  async removeContainer(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.conn.call('runtime', 'RemoveContainer', { container_id: id }, this.deadlines.requestMs, {
        container: id,
      }),
    );
    this.sandboxOf.delete(id);
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const r = await this.conn.call<{ containers: WireContainer[] }>(
      'runtime',
      'ListContainers',
      { filter: containerFilterToWire(filter) },
      this.deadlines.shortMs,
    );
    const containers = (r.containers ?? []).map(containerFromWire);
    for (const c of containers) this.rememberSandbox(c.id, c.podSandboxId);
    return containers;
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    const ctx = { container: id };
    const known = this.sandboxOf.get(id);
    // The sandbox ID comes from the list entry when this client has not seen the container yet.
    const [r, sandboxId] = await Promise.all([
      this.conn.call<{ status: WireContainerStatus | null }>(
        'runtime',
        'ContainerStatus',
        { container_id: id },
        this.deadlines.shortMs,
        ctx,
      ),
      known !== undefined
        ? Promise.resolve(known)
        : this.listContainers({ id }).then((cs) => cs.find((c) => c.id === id)?.podSandboxId ?? ''),
    ]);
    if (!r.status) throw new KindError('NotFound', `CRI ContainerStatus: no status for container ${id}`, ctx);
    return containerStatusFromWire(r.status, sandboxId);
  }

  async updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void> {
    await this.conn.call(
      'runtime',
      'UpdateContainerResources',
      { container_id: id, linux: resourcesToWire(resources) },
      this.deadlines.requestMs,
      { container: id },
    );
  }

  async containerStats(id: string): Promise<ContainerStats> {
    const r = await this.conn.call<{ stats?: WireContainerStats | null }>(
      'runtime',
      'ContainerStats',
      { container_id: id },
      this.deadlines.shortMs,
      { container: id },
    );
    return r.stats ? containerStatsFromWire(r.stats) : {};
  }

  async listContainerStats(filter?: ContainerStatsFilter): Promise<ContainerStats[]> {
    const r = await this.conn.call<{ stats?: WireContainerStats[] | null }>(
      'runtime',
      'ListContainerStats',
      { filter: containerStatsFilterToWire(filter) },
      this.deadlines.requestMs,
    );
    return (r.stats ?? []).map(containerStatsFromWire);
  }

  async listPodSandboxStats(filter?: PodSandboxStatsFilter): Promise<PodSandboxStats[]> {
    const r = await this.conn.call<{ stats?: WirePodSandboxStats[] | null }>(
      'runtime',
      'ListPodSandboxStats',
      { filter: sandboxStatsFilterToWire(filter) },
      this.deadlines.requestMs,
    );
    return (r.stats ?? []).map(podSandboxStatsFromWire);
  }

  // ---------------------------------------------------------------------------------- exec & streaming

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    const { seconds, timeoutMs } = this.deadlines.execSync(timeoutSeconds);
    const r = await this.conn.call<WireExecSyncResponse>(
      'runtime',
      'ExecSync',
      { container_id: id, cmd, timeout: String(seconds) },
      timeoutMs,
      { container: id, cmd: cmd.join(' '), timeoutSeconds: seconds },
    );
    return execSyncFromWire(r);
  }

  async exec(req: StreamingRequest): Promise<{ url: string }> {
    const r = await this.conn.call<{ url: string }>(
      'runtime',
      'Exec',
      {
        container_id: req.containerId,
        cmd: req.cmd ?? [],
        tty: req.tty ?? false,
        stdin: req.stdin ?? false,
        stdout: req.stdout ?? false,
        stderr: req.stderr ?? false,
      },
      this.deadlines.requestMs,
      { container: req.containerId },
    );
    return { url: r.url };
  }

  async attach(req: StreamingRequest): Promise<{ url: string }> {
    const r = await this.conn.call<{ url: string }>(
      'runtime',
      'Attach',
      {
        container_id: req.containerId,
        stdin: req.stdin ?? false,
        tty: req.tty ?? false,
        stdout: req.stdout ?? false,
        stderr: req.stderr ?? false,
      },
      this.deadlines.requestMs,
      { container: req.containerId },
    );
    return { url: r.url };
  }

  async portForward(podSandboxId: string, ports: number[]): Promise<{ url: string }> {
    const r = await this.conn.call<{ url: string }>(
      'runtime',
      'PortForward',
      { pod_sandbox_id: podSandboxId, port: ports },
      this.deadlines.requestMs,
      { sandbox: podSandboxId },
    );
    return { url: r.url };
  }

  // ---------------------------------------------------------------------------------- images

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    const request: Record<string, unknown> = { image: { image } };
    if (sandboxConfig) request.sandbox_config = sandboxConfigToWire(sandboxConfig);
    if (auth) request.auth = authConfigToWire(auth);
    const r = await this.conn.call<{ image_ref: string }>(
      'image',
      'PullImage',
      request,
      this.deadlines.pullMs,
      {
        image,
      },
    );
    return r.image_ref;
  }

  async imageStatus(image: string): Promise<Image | null> {
    const r = await this.conn.call<{ image: WireImage | null }>(
      'image',
      'ImageStatus',
      { image: { image } },
      this.deadlines.shortMs,
      { image },
    );
    return r.image ? imageFromWire(r.image) : null;
  }

  async listImages(): Promise<Image[]> {
    const r = await this.conn.call<{ images: WireImage[] }>(
      'image',
      'ListImages',
      {},
      this.deadlines.shortMs,
    );
    return (r.images ?? []).map(imageFromWire);
  }

  async removeImage(image: string): Promise<void> {
    await this.ignoreNotFound(
      this.conn.call('image', 'RemoveImage', { image: { image } }, this.deadlines.requestMs, { image }),
    );
  }

  async imageFsInfo(): Promise<ImageFsInfo> {
    const r = await this.conn.call<Parameters<typeof imageFsInfoFromWire>[0]>(
      'image',
      'ImageFsInfo',
      {},
      this.deadlines.shortMs,
    );
    return imageFsInfoFromWire(r);
  }

  async close(): Promise<void> {
    this.conn.close();
  }

  // ---------------------------------------------------------------------------------- plumbing

  private rememberSandbox(containerId: string, sandboxId: string): void {
    if (!containerId || !sandboxId) return;
    // IDs never change meaning, so the map only needs a bound, not invalidation.
    if (this.sandboxOf.size >= 100_000) this.sandboxOf.clear();
    this.sandboxOf.set(containerId, sandboxId);
  }

  private async ignoreNotFound(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (err) {
      if (!(err instanceof KindError && err.kind === 'NotFound')) throw err;
    }
  }
}

function authConfigToWire(a: AuthConfig): Record<string, string> {
  const wire: Record<string, string> = {};
  if (a.username) wire.username = a.username;
  if (a.password) wire.password = a.password;
  if (a.auth) wire.auth = a.auth;
  if (a.serverAddress) wire.server_address = a.serverAddress;
  if (a.identityToken) wire.identity_token = a.identityToken;
  if (a.registryToken) wire.registry_token = a.registryToken;
  return wire;
}

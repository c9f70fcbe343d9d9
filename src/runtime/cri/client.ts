/**
 * CriRuntime: the Runtime seam over CRI v1 gRPC (containerd, CRI-O) on a unix socket.
 *
 * Contract, beyond src/runtime/types.ts:
 * - One grpc-js channel for both services. It reconnects on its own when the socket comes back (backoff
 *   100 ms .. 3 s, the kubelet's); no call waits for a connection (waitForReady false), so a dead or
 *   missing socket fails fast with Unavailable instead of hanging until the deadline.
 * - No gRPC retries: RunPodSandbox and CreateContainer are not idempotent, and the kubelet's sync loop is
 *   the retry.
 * - Deadlines: `requestTimeoutMs` (kubelet runtimeRequestTimeout, 2 min) for mutating calls;
 *   `shortTimeoutMs` (10 s) for version/status/list/status-of calls; StopContainer gets its grace period
 *   on top of the request timeout; ExecSync gets its own timeout plus `execGraceMs`; PullImage gets
 *   `pullTimeoutMs`.
 * - An outage is logged once (warn, naming the socket path) when it starts and once (info) when a call
 *   succeeds again, however many calls fail in between.
 * - Removing an unknown sandbox or container, and stopping an unknown sandbox, succeed (CRI: idempotent).
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { KindError } from '../../util/errors.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStatus,
  Runtime,
  RuntimeCondition,
  RuntimeVersion,
  SandboxFilter,
  StreamingRequest,
} from '../types.js';
import {
  conditionFromWire,
  containerConfigToWire,
  containerFilterToWire,
  containerFromWire,
  containerStatusFromWire,
  execSyncFromWire,
  imageFromWire,
  sandboxConfigToWire,
  sandboxFilterToWire,
  sandboxFromWire,
  sandboxStatusFromWire,
  versionFromWire,
} from './convert.js';
import { criError, type CriCallContext } from './errors.js';
import type {
  WireContainer,
  WireContainerStatus,
  WireExecSyncResponse,
  WireImage,
  WirePodSandbox,
  WirePodSandboxStatus,
  WireRuntimeCondition,
  WireVersionResponse,
} from './messages.js';

/** The two log levels the client uses; winston's logger fits, and so does a test spy. */
export interface CriLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

export interface CriRuntimeOptions {
  /** `unix:///absolute/path.sock` (a bare absolute path is accepted too). */
  endpoint: string;
  logger?: CriLogger;
  /** Mutating calls. Default 120 000 (kubelet runtimeRequestTimeout). */
  requestTimeoutMs?: number;
  /** Version, Status, List*, *Status. Default 10 000. */
  shortTimeoutMs?: number;
  /** Added to an ExecSync's own timeout for the call's deadline. Default 10 000. */
  execGraceMs?: number;
  /** PullImage. Default 600 000. */
  pullTimeoutMs?: number;
  /** Our CRI proto; defaults to proto/api.proto beside this module. */
  protoPath?: string;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_SHORT_TIMEOUT_MS = 10_000;
export const DEFAULT_EXEC_GRACE_MS = 10_000;
export const DEFAULT_PULL_TIMEOUT_MS = 600_000;
/** The version string the kubelet sends in VersionRequest. */
const KUBE_RUNTIME_API_VERSION = '0.1.0';
/** The kubelet's limit for CRI messages (a ListContainers on a busy node is large). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const DEFAULT_PROTO = fileURLToPath(new URL('./proto/api.proto', import.meta.url));

export const PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

type UnaryCallback = (err: grpc.ServiceError | null, response?: unknown) => void;
type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: UnaryCallback,
) => grpc.ClientUnaryCall;

interface CriServices {
  RuntimeService: grpc.ServiceClientConstructor;
  ImageService: grpc.ServiceClientConstructor;
}

const loaded = new Map<string, CriServices>();

/** The RuntimeService and ImageService client constructors from our proto (loaded once per path). */
export function loadCriServices(protoPath: string = DEFAULT_PROTO): CriServices {
  let services = loaded.get(protoPath);
  if (!services) {
    const def = protoLoader.loadSync(protoPath, PROTO_LOADER_OPTIONS);
    const root = grpc.loadPackageDefinition(def) as unknown as { runtime?: { v1?: Partial<CriServices> } };
    const v1 = root.runtime?.v1;
    if (!v1?.RuntimeService || !v1.ImageService) {
      throw new KindError(
        'InvalidArgument',
        `${protoPath} does not declare runtime.v1 RuntimeService and ImageService`,
      );
    }
    services = { RuntimeService: v1.RuntimeService, ImageService: v1.ImageService };
    loaded.set(protoPath, services);
  }
  return services;
}

/** Channel options: fail fast, reconnect quickly, no retries; see the module comment. */
export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.enable_retries': 0,
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 3_000,
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
};

/** Validates an endpoint and returns it as `unix:///abs` plus the socket path. */
export function parseEndpoint(endpoint: string): { endpoint: string; socketPath: string } {
  let path: string;
  if (endpoint.startsWith('unix://')) path = endpoint.slice('unix://'.length);
  else if (endpoint.startsWith('/')) path = endpoint;
  else {
    throw new KindError(
      'InvalidArgument',
      `CRI endpoint must be unix:///<absolute path>, got ${JSON.stringify(endpoint)}`,
    );
  }
  if (!path.startsWith('/') || path.length < 2) {
    throw new KindError(
      'InvalidArgument',
      `CRI endpoint must name an absolute socket path, got ${JSON.stringify(endpoint)}`,
    );
  }
  return { endpoint: `unix://${path}`, socketPath: path };
}

function positive(v: number | undefined, fallback: number, what: string): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0) throw new KindError('InvalidArgument', `${what} must be > 0, got ${v}`);
  return v;
}

const noopLogger: CriLogger = { warn: () => {}, info: () => {} };

export class CriRuntime implements Runtime {
  readonly kind = 'cri' as const;
  readonly endpoint: string;
  readonly socketPath: string;

  private readonly logger: CriLogger;
  private readonly requestTimeoutMs: number;
  private readonly shortTimeoutMs: number;
  private readonly execGraceMs: number;
  private readonly pullTimeoutMs: number;
  private readonly runtimeClient: grpc.Client;
  private readonly imageClient: grpc.Client;
  /** 'down' between the first Unavailable and the next success: one log line per outage. */
  private reachability: 'unknown' | 'up' | 'down' = 'unknown';
  private closed = false;
  /** Container -> sandbox; CRI's ContainerStatus lacks the sandbox ID, and it never changes. */
  private readonly sandboxOf = new Map<string, string>();

  constructor(opts: CriRuntimeOptions) {
    const { endpoint, socketPath } = parseEndpoint(opts.endpoint);
    this.endpoint = endpoint;
    this.socketPath = socketPath;
    this.logger = opts.logger ?? noopLogger;
    this.requestTimeoutMs = positive(opts.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS, 'requestTimeoutMs');
    this.shortTimeoutMs = positive(opts.shortTimeoutMs, DEFAULT_SHORT_TIMEOUT_MS, 'shortTimeoutMs');
    this.execGraceMs = positive(opts.execGraceMs, DEFAULT_EXEC_GRACE_MS, 'execGraceMs');
    this.pullTimeoutMs = positive(opts.pullTimeoutMs, DEFAULT_PULL_TIMEOUT_MS, 'pullTimeoutMs');
    const services = loadCriServices(opts.protoPath);
    const creds = grpc.credentials.createInsecure();
    this.runtimeClient = new services.RuntimeService(endpoint, creds, CHANNEL_OPTIONS);
    this.imageClient = new services.ImageService(endpoint, creds, {
      ...CHANNEL_OPTIONS,
      channelOverride: this.runtimeClient.getChannel(),
    });
  }

  // ---------------------------------------------------------------------------------- runtime

  async version(): Promise<RuntimeVersion> {
    const r = await this.call<WireVersionResponse>(
      'runtime',
      'Version',
      { version: KUBE_RUNTIME_API_VERSION },
      this.shortTimeoutMs,
    );
    return versionFromWire(r);
  }

  async status(): Promise<RuntimeCondition[]> {
    const r = await this.call<{ status: { conditions: WireRuntimeCondition[] } | null }>(
      'runtime',
      'Status',
      {},
      this.shortTimeoutMs,
    );
    return (r.status?.conditions ?? []).map(conditionFromWire);
  }

  // ---------------------------------------------------------------------------------- sandboxes

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const wire = sandboxConfigToWire(config);
    const r = await this.call<{ pod_sandbox_id: string }>(
      'runtime',
      'RunPodSandbox',
      { config: wire },
      this.requestTimeoutMs,
      { pod: `${config.metadata.namespace}/${config.metadata.name}`, podUID: config.metadata.uid },
    );
    return r.pod_sandbox_id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.call('runtime', 'StopPodSandbox', { pod_sandbox_id: id }, this.requestTimeoutMs, { sandbox: id }),
    );
  }

  async removePodSandbox(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.call('runtime', 'RemovePodSandbox', { pod_sandbox_id: id }, this.requestTimeoutMs, {
        sandbox: id,
      }),
    );
    for (const [c, s] of this.sandboxOf) if (s === id) this.sandboxOf.delete(c);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    const r = await this.call<{ status: WirePodSandboxStatus | null }>(
      'runtime',
      'PodSandboxStatus',
      { pod_sandbox_id: id },
      this.shortTimeoutMs,
      { sandbox: id },
    );
    if (!r.status)
      throw new KindError('NotFound', `CRI PodSandboxStatus: no status for sandbox ${id}`, { sandbox: id });
    return sandboxStatusFromWire(r.status);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]> {
    const r = await this.call<{ items: WirePodSandbox[] }>(
      'runtime',
      'ListPodSandbox',
      { filter: sandboxFilterToWire(filter) },
      this.shortTimeoutMs,
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
    const r = await this.call<{ container_id: string }>(
      'runtime',
      'CreateContainer',
      request,
      this.requestTimeoutMs,
      { sandbox: podSandboxId, container: config.metadata.name, attempt: config.metadata.attempt },
    );
    this.rememberSandbox(r.container_id, podSandboxId);
    return r.container_id;
  }

  async startContainer(id: string): Promise<void> {
    await this.call('runtime', 'StartContainer', { container_id: id }, this.requestTimeoutMs, {
      container: id,
    });
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const grace = Math.max(0, Math.ceil(timeoutSeconds));
    await this.call(
      'runtime',
      'StopContainer',
      { container_id: id, timeout: String(grace) },
      grace * 1000 + this.requestTimeoutMs,
      { container: id, gracePeriodSeconds: grace },
    );
  }

  async removeContainer(id: string): Promise<void> {
    await this.ignoreNotFound(
      this.call('runtime', 'RemoveContainer', { container_id: id }, this.requestTimeoutMs, { container: id }),
    );
    this.sandboxOf.delete(id);
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const r = await this.call<{ containers: WireContainer[] }>(
      'runtime',
      'ListContainers',
      { filter: containerFilterToWire(filter) },
      this.shortTimeoutMs,
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
      this.call<{ status: WireContainerStatus | null }>(
        'runtime',
        'ContainerStatus',
        { container_id: id },
        this.shortTimeoutMs,
        ctx,
      ),
      known !== undefined
        ? Promise.resolve(known)
        : this.listContainers({ id }).then((cs) => cs.find((c) => c.id === id)?.podSandboxId ?? ''),
    ]);
    if (!r.status) throw new KindError('NotFound', `CRI ContainerStatus: no status for container ${id}`, ctx);
    return containerStatusFromWire(r.status, sandboxId);
  }

  // ---------------------------------------------------------------------------------- exec & streaming

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    const seconds = Math.max(0, Math.ceil(timeoutSeconds));
    const deadline = seconds > 0 ? seconds * 1000 + this.execGraceMs : this.requestTimeoutMs;
    const r = await this.call<WireExecSyncResponse>(
      'runtime',
      'ExecSync',
      { container_id: id, cmd, timeout: String(seconds) },
      deadline,
      { container: id, cmd: cmd.join(' '), timeoutSeconds: seconds },
    );
    return execSyncFromWire(r);
  }

  async exec(req: StreamingRequest): Promise<{ url: string }> {
    const r = await this.call<{ url: string }>(
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
      this.requestTimeoutMs,
      { container: req.containerId },
    );
    return { url: r.url };
  }

  async attach(req: StreamingRequest): Promise<{ url: string }> {
    const r = await this.call<{ url: string }>(
      'runtime',
      'Attach',
      {
        container_id: req.containerId,
        stdin: req.stdin ?? false,
        tty: req.tty ?? false,
        stdout: req.stdout ?? false,
        stderr: req.stderr ?? false,
      },
      this.requestTimeoutMs,
      { container: req.containerId },
    );
    return { url: r.url };
  }

  async portForward(podSandboxId: string, ports: number[]): Promise<{ url: string }> {
    const r = await this.call<{ url: string }>(
      'runtime',
      'PortForward',
      { pod_sandbox_id: podSandboxId, port: ports },
      this.requestTimeoutMs,
      { sandbox: podSandboxId },
    );
    return { url: r.url };
  }

  // ---------------------------------------------------------------------------------- images

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig): Promise<string> {
    const request: Record<string, unknown> = { image: { image } };
    if (sandboxConfig) request.sandbox_config = sandboxConfigToWire(sandboxConfig);
    const r = await this.call<{ image_ref: string }>('image', 'PullImage', request, this.pullTimeoutMs, {
      image,
    });
    return r.image_ref;
  }

  async imageStatus(image: string): Promise<Image | null> {
    const r = await this.call<{ image: WireImage | null }>(
      'image',
      'ImageStatus',
      { image: { image } },
      this.shortTimeoutMs,
      { image },
    );
    return r.image ? imageFromWire(r.image) : null;
  }

  async listImages(): Promise<Image[]> {
    const r = await this.call<{ images: WireImage[] }>('image', 'ListImages', {}, this.shortTimeoutMs);
    return (r.images ?? []).map(imageFromWire);
  }

  async removeImage(image: string): Promise<void> {
    await this.ignoreNotFound(
      this.call('image', 'RemoveImage', { image: { image } }, this.requestTimeoutMs, { image }),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Both clients share one channel; closing it fails calls still in flight with CANCELLED.
    this.imageClient.close();
    this.runtimeClient.close();
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

  private call<T = unknown>(
    service: 'runtime' | 'image',
    method: string,
    request: object,
    timeoutMs: number,
    subject: Record<string, unknown> = {},
  ): Promise<T> {
    const ctx: CriCallContext = { ...subject, method, endpoint: this.endpoint, timeoutMs };
    if (this.closed) {
      return Promise.reject(
        new KindError('Unavailable', `CRI ${method}: client for ${this.endpoint} is closed`, ctx),
      );
    }
    const client = service === 'runtime' ? this.runtimeClient : this.imageClient;
    const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
    if (!fn) return Promise.reject(new KindError('Unimplemented', `CRI ${method} is not in our proto`, ctx));
    return new Promise<T>((resolve, reject) => {
      const metadata = new grpc.Metadata({ waitForReady: false });
      try {
        fn.call(client, request, metadata, { deadline: Date.now() + timeoutMs }, (err, response) => {
          if (err) {
            const kerr = criError(err, ctx);
            if (kerr.kind === 'Unavailable') this.markDown(kerr.message);
            reject(kerr);
            return;
          }
          this.markUp();
          resolve(response as T);
        });
      } catch (err) {
        // protobufjs refuses a malformed request before anything is sent.
        reject(
          new KindError('InvalidArgument', `CRI ${method}: request not encodable: ${String(err)}`, ctx, {
            cause: err,
          }),
        );
      }
    });
  }

  private markDown(message: string): void {
    if (this.reachability === 'down' || this.closed) return;
    this.reachability = 'down';
    this.logger.warn(`CRI runtime unreachable at ${this.socketPath}`, {
      endpoint: this.endpoint,
      socket: this.socketPath,
      error: message,
    });
  }

  private markUp(): void {
    if (this.reachability === 'down') {
      this.logger.info(`CRI runtime reachable again at ${this.socketPath}`, {
        endpoint: this.endpoint,
        socket: this.socketPath,
      });
    }
    this.reachability = 'up';
  }
}

/**
 * The connection under CriRuntime: one grpc-js channel to the runtime's unix socket, shared by the
 * RuntimeService and ImageService clients of our proto, and the one place a CRI call is made.
 *
 * Contract:
 * - It reconnects on its own when the socket comes back (backoff 100 ms .. 3 s, the kubelet's); no call waits
 *   for a connection (waitForReady false), so a dead or missing socket fails fast with Unavailable instead of
 *   hanging until the deadline.
 * - No gRPC retries: RunPodSandbox and CreateContainer are not idempotent, and the kubelet's sync loop is the
 *   retry.
 * - Every call has a deadline, chosen by the caller; failures are KindErrors (errors.ts) naming the method,
 *   the endpoint and the call's subject.
 * - An outage is logged once (warn, naming the socket path) when it starts and once (info) when a call
 *   succeeds again, however many calls fail in between.
 * - After close(), every call fails Unavailable without touching the network.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import { GRPC_PROTO_OPTIONS, grpcJs, grpcProtoLoader } from '../../util/grpcmodules.js';
import { KindError } from '../../util/errors.js';
import { criError, type CriCallContext } from './errors.js';

/** The two log levels the connection uses; winston's logger fits, and so does a test spy. */
export interface CriLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

/** The kubelet's limit for CRI messages (a ListContainers on a busy node is large). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const DEFAULT_PROTO = fileURLToPath(new URL('./proto/api.proto', import.meta.url));

export const PROTO_LOADER_OPTIONS: protoLoader.Options = { ...GRPC_PROTO_OPTIONS, oneofs: true };

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
    const def = grpcProtoLoader().loadSync(protoPath, PROTO_LOADER_OPTIONS);
    const root = grpcJs().loadPackageDefinition(def) as unknown as {
      runtime?: { v1?: Partial<CriServices> };
    };
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

const noopLogger: CriLogger = { warn: () => {}, info: () => {} };

export class CriConnection {
  readonly endpoint: string;
  readonly socketPath: string;
  private readonly logger: CriLogger;
  private readonly runtimeClient: grpc.Client;
  private readonly imageClient: grpc.Client;
  /** 'down' between the first Unavailable and the next success: one log line per outage. */
  private reachability: 'unknown' | 'up' | 'down' = 'unknown';
  private closed = false;

  /** Throws InvalidArgument for a malformed endpoint or a proto without the two services. */
  constructor(endpoint: string, logger: CriLogger = noopLogger, protoPath?: string) {
    const parsed = parseEndpoint(endpoint);
    this.endpoint = parsed.endpoint;
    this.socketPath = parsed.socketPath;
    this.logger = logger;
    const services = loadCriServices(protoPath);
    const creds = grpcJs().credentials.createInsecure();
    this.runtimeClient = new services.RuntimeService(this.endpoint, creds, CHANNEL_OPTIONS);
    this.imageClient = new services.ImageService(this.endpoint, creds, {
      ...CHANNEL_OPTIONS,
      channelOverride: this.runtimeClient.getChannel(),
    });
  }

  /**
   * One unary call of `method` on `service` with a deadline `timeoutMs` from now. Resolves to the response
   * as proto-loader decodes it (snake_case, int64 as decimal strings); rejects with a KindError whose
   * context holds `subject` (what the call is about: sandbox, container, image).
   */
  call<T = unknown>(
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
      const metadata = new (grpcJs().Metadata)({ waitForReady: false });
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

  /** Idempotent. Both clients share one channel; closing it fails calls still in flight with CANCELLED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.imageClient.close();
    this.runtimeClient.close();
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

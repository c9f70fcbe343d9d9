/**
 * Bare grpc-js clients for containerd's CRI services, loaded from our proto with no client layer at all: the
 * harness smoke tests use them to check the proto and the daemon, the CRI benchmark as the baseline.
 * Enums come back as strings and int64 as decimal strings.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { PROTO_LOADER_OPTIONS } from '../../src/runtime/cri/connection.js';

/** Our copy of the CRI proto (src/runtime/cri/proto/api.proto). */
export const CRI_PROTO = fileURLToPath(new URL('../../src/runtime/cri/proto/api.proto', import.meta.url));

/** RuntimeService's request codecs by method name, loaded as our client loads the proto. */
export function runtimeServiceCodecs(): Record<
  string,
  { requestSerialize(v: object): Buffer; requestDeserialize(b: Buffer): Record<string, unknown> }
> {
  const def = protoLoader.loadSync(CRI_PROTO, PROTO_LOADER_OPTIONS);
  return def['runtime.v1.RuntimeService'] as unknown as ReturnType<typeof runtimeServiceCodecs>;
}

type UnaryMethod = (
  request: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response?: unknown) => void,
) => void;

/** RuntimeService and ImageService clients on `endpoint` (unix:///...). */
export function rawCriClients(endpoint: string): { runtime: grpc.Client; images: grpc.Client } {
  const def = protoLoader.loadSync(CRI_PROTO, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const root = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: Record<'RuntimeService' | 'ImageService', grpc.ServiceClientConstructor> };
  };
  const creds = grpc.credentials.createInsecure();
  return {
    runtime: new root.runtime.v1.RuntimeService(endpoint, creds),
    images: new root.runtime.v1.ImageService(endpoint, creds),
  };
}

/** One unary RPC by its proto method name, with a deadline. */
export function rawUnary<T>(
  client: grpc.Client,
  method: string,
  request: object,
  timeoutMs = 60_000,
): Promise<T> {
  const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
  if (!fn) throw new Error(`no RPC ${method} in the proto`);
  return new Promise((resolve, reject) => {
    fn.call(client, request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) =>
      err ? reject(err) : resolve(res as T),
    );
  });
}

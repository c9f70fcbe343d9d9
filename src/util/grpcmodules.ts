/**
 * grpc-js and its proto loader, loaded on first use. A process that serves only simulated nodes and whose pods
 * have no gRPC probes never needs them, and importing them was about 45 ms of every start (both are CommonJS,
 * so a synchronous require does). Types come from `import type`.
 */
import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import type * as ProtoLoader from '@grpc/proto-loader';

const require = createRequire(import.meta.url);
let grpc: typeof Grpc | undefined;
let loader: typeof ProtoLoader | undefined;

export function grpcJs(): typeof Grpc {
  return (grpc ??= require('@grpc/grpc-js') as typeof Grpc);
}

export function grpcProtoLoader(): typeof ProtoLoader {
  return (loader ??= require('@grpc/proto-loader') as typeof ProtoLoader);
}

/**
 * How the project reads its .proto files: field names as written (snake_case), int64 and enums as strings,
 * defaults filled in. The CRI client adds `oneofs`.
 */
export const GRPC_PROTO_OPTIONS: ProtoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
};

const packages = new Map<string, Grpc.GrpcObject>();

/** The gRPC package object of the .proto file at `protoPath`, loaded once per process. */
export function loadProtoPackage(protoPath: string): Grpc.GrpcObject {
  let pkg = packages.get(protoPath);
  if (!pkg) {
    pkg = grpcJs().loadPackageDefinition(grpcProtoLoader().loadSync(protoPath, GRPC_PROTO_OPTIONS));
    packages.set(protoPath, pkg);
  }
  return pkg;
}

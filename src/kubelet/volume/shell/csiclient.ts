/**
 * The CSI volume plugin's gRPC client of one driver's Node service (kubelet: pkg/volume/csi csi_client.go):
 * each call dials the driver's unix socket, makes one unary call with the kubelet's deadline and closes, so a
 * driver that restarts (a new socket) is simply dialled again. Errors are rendered as the Go gRPC status
 * strings the kubelet's events carry.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { loadProtoPackage } from '../../../util/grpcmodules.js';
import { dialUnix, unary } from '../../pluginmanager/shell/manager.js';
import type {
  CSINodeClient,
  CSIVolumeCapability,
  CSIVolumeUsage,
  NodePublishRequest,
  NodeExpandRequest,
  NodeStageRequest,
} from '../csi.js';

/** csiTimeout: the deadline of every node call. */
export const CSITimeoutMs = 2 * 60_000;
const DIAL_TIMEOUT_MS = 10_000;

/** Go's names of the gRPC status codes, by number. */
const CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** A failed CSI call, with its gRPC code (the expander and the allocatable refresh look at it). */
export class CSICallError extends Error {
  constructor(
    readonly code: string,
    desc: string,
  ) {
    super(`rpc error: code = ${code} desc = ${desc}`);
  }
}

function asCallError(err: unknown): Error {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e.code === 'number')
    return new CSICallError(CODE_NAMES[e.code] ?? `Code(${e.code})`, e.details ?? '');
  return err instanceof Error ? err : new Error(String(err));
}

function nodeCtor(): grpc.ServiceClientConstructor {
  const pkg = loadProtoPackage(
    fileURLToPath(new URL('../../pluginmanager/proto/csi_node.proto', import.meta.url)),
  ) as unknown as { csi: { v1: { Node: grpc.ServiceClientConstructor } } };
  return pkg.csi.v1.Node;
}

function capability(c: CSIVolumeCapability): unknown {
  return {
    mount: { fs_type: c.fsType, mount_flags: c.mountFlags, volume_mount_group: c.volumeMountGroup },
    access_mode: { mode: c.accessMode },
  };
}

/** The fields that stage, publish and expand requests share. */
function volumeFields(
  r: Pick<NodeStageRequest, 'volumeId' | 'stagingTargetPath' | 'capability' | 'secrets'>,
): Record<string, unknown> {
  return {
    volume_id: r.volumeId,
    staging_target_path: r.stagingTargetPath,
    volume_capability: capability(r.capability),
    secrets: r.secrets,
  };
}

/** volumeFields and the contexts the controller side handed over (stage and publish carry both). */
function contextFields(
  r: Pick<
    NodeStageRequest,
    'volumeId' | 'stagingTargetPath' | 'capability' | 'secrets' | 'publishContext' | 'volumeContext'
  >,
): Record<string, unknown> {
  return { ...volumeFields(r), publish_context: r.publishContext, volume_context: r.volumeContext };
}

/** The Node service client of the driver serving on `socket` (a path on this host). */
export function grpcCSINodeClient(socket: string, timeoutMs = CSITimeoutMs): CSINodeClient {
  const call = async <T>(method: string, req: unknown): Promise<T> => {
    let client: grpc.Client;
    try {
      client = await dialUnix(nodeCtor(), socket, Math.min(DIAL_TIMEOUT_MS, timeoutMs));
    } catch (err) {
      throw asCallError(err);
    }
    try {
      return await unary<T>(client, method, req, timeoutMs);
    } catch (err) {
      throw asCallError(err);
    } finally {
      client.close();
    }
  };
  return {
    async nodeGetCapabilities() {
      const res = await call<{ capabilities: { rpc?: { type: string } | null }[] }>(
        'NodeGetCapabilities',
        {},
      );
      return new Set(res.capabilities.flatMap((c) => (c.rpc ? [c.rpc.type] : [])));
    },
    async nodeStageVolume(r: NodeStageRequest) {
      await call('NodeStageVolume', contextFields(r));
    },
    async nodeUnstageVolume(volumeId, stagingTargetPath) {
      await call('NodeUnstageVolume', { volume_id: volumeId, staging_target_path: stagingTargetPath });
    },
    async nodePublishVolume(r: NodePublishRequest) {
      await call('NodePublishVolume', {
        ...contextFields(r),
        target_path: r.targetPath,
        readonly: r.readOnly,
      });
    },
    async nodeUnpublishVolume(volumeId, targetPath) {
      await call('NodeUnpublishVolume', { volume_id: volumeId, target_path: targetPath });
    },
    async nodeExpandVolume(r: NodeExpandRequest) {
      await call('NodeExpandVolume', {
        ...volumeFields(r),
        volume_path: r.volumePath,
        capacity_range: { required_bytes: String(r.requiredBytes) },
      });
    },
    async nodeGetVolumeStats(volumeId, volumePath, stagingTargetPath) {
      const res = await call<{
        usage: { available: string; total: string; used: string; unit: string }[];
      }>('NodeGetVolumeStats', {
        volume_id: volumeId,
        volume_path: volumePath,
        staging_target_path: stagingTargetPath,
      });
      return res.usage.map((u): CSIVolumeUsage => ({
        unit: u.unit === 'BYTES' || u.unit === 'INODES' ? u.unit : 'UNKNOWN',
        available: Number(u.available),
        total: Number(u.total),
        used: Number(u.used),
      }));
    },
  };
}

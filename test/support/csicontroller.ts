/**
 * The CSI controller service calls an external-provisioner and -resizer make, made by hand on a driver's socket
 * (test/support/csi_controller.proto): CreateVolume and ControllerExpandVolume; and the host's mounts under a
 * directory, to see a driver's mounts gone.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { dialUnix, unary } from '../../src/kubelet/pluginmanager/shell/manager.js';
import { loadProtoPackage } from '../../src/util/grpcmodules.js';

function controllerCtor(): grpc.ServiceClientConstructor {
  const pkg = loadProtoPackage(
    fileURLToPath(new URL('./csi_controller.proto', import.meta.url)),
  ) as unknown as {
    csi: { v1: { Controller: grpc.ServiceClientConstructor } };
  };
  return pkg.csi.v1.Controller;
}

/** CreateVolume of 1 MiB (a mount volume, single-node writer) on the driver's controller service: its ID. */
export async function createVolume(socket: string, name: string): Promise<string> {
  const c = await dialUnix(controllerCtor(), socket);
  try {
    const res = await unary<{ volume: { volume_id: string } }>(
      c,
      'CreateVolume',
      {
        name,
        capacity_range: { required_bytes: String(1 << 20) },
        volume_capabilities: [{ mount: { fs_type: '' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } }],
      },
      30_000,
    );
    return res.volume.volume_id;
  } finally {
    c.close();
  }
}

/** ControllerExpandVolume on the driver's controller service. */
export async function controllerExpand(socket: string, volumeID: string, bytes: number): Promise<void> {
  const c = await dialUnix(controllerCtor(), socket);
  try {
    await unary(
      c,
      'ControllerExpandVolume',
      {
        volume_id: volumeID,
        capacity_range: { required_bytes: String(bytes) },
        volume_capability: { mount: { fs_type: '' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
      },
      30_000,
    );
  } finally {
    c.close();
  }
}

/** Mount points of this host under `dir`. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`));
}

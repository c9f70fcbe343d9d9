/**
 * The emptyDir plugin (kubelet: pkg/volume/emptydir): a directory under the pod's volumes, mode 0777, owned by
 * the pod's fsGroup when it has one; `medium: Memory` mounts a tmpfs there, sized by the smallest of the
 * volume's sizeLimit, the pod's memory limit and the node's allocatable memory. A `ready` marker under the
 * pod's plugins directory records a finished set-up, so a restarted operator keeps the contents instead of
 * starting over. The same directory set-up (`setUpWrapperDir`) backs configMap, secret, downwardAPI and
 * projected volumes, as the kubelet wraps those in an emptyDir.
 */
import type { Pod } from '../../api/core.js';
import type { EmptyDirVolumeSource } from '../../api/volumes.js';
import { quantityValue } from '../../util/quantity.js';
import { fsGroupFrom } from './fsuser.js';
import { setVolumeOwnership } from './ownership.js';
import { joinPath } from './paths.js';
import { podPluginDir, podVolumeDir, PluginDirs, type PluginDir } from './podpaths.js';
import { mountFailure, type PluginContext, type SetUpResult } from './plugin.js';

/** kubelet emptydir defaultPerm. */
export const EmptyDirPerm = 0o777;
const READY_FILE = 'ready';

/** Whether the medium is one of the kubelet's huge-page media (`HugePages`, `HugePages-2Mi`, ...). */
function isHugePages(medium: string): boolean {
  return medium === 'HugePages' || medium.startsWith('HugePages-');
}

/** The sum of the containers' memory limits when every container has one (the pod's memory limit), else 0. */
function podMemoryLimit(pod: Pod): number {
  let sum = 0;
  for (const c of pod.spec.containers) {
    const l = c.resources?.limits?.memory;
    if (l === undefined) return 0;
    sum += quantityValue(l);
  }
  // An init container with a bigger limit raises the pod's (kubelet: the pod limit is max(sum, each init)).
  for (const c of pod.spec.initContainers ?? []) {
    const l = c.resources?.limits?.memory;
    if (l !== undefined) sum = Math.max(sum, quantityValue(l));
  }
  return sum;
}

/** kubelet calculateEmptyDirMemorySize: node allocatable, lowered by the pod's limit, then the sizeLimit. */
export function emptyDirMemorySize(
  pod: Pod,
  source: EmptyDirVolumeSource,
  allocatable: Readonly<Record<string, string | number>>,
): number | undefined {
  const node = allocatable.memory !== undefined ? quantityValue(allocatable.memory) : 0;
  let size = node > 0 ? node : undefined;
  const podLimit = podMemoryLimit(pod);
  if (podLimit > 0 && (size === undefined || podLimit <= size)) size = podLimit;
  if (source.sizeLimit !== undefined) {
    const limit = quantityValue(source.sizeLimit);
    if (limit > 0 && (size === undefined || limit <= size)) size = limit;
  }
  return size;
}

/**
 * Creates `dir` with the emptyDir mode, and with `medium: 'Memory'` mounts a tmpfs on it (once). Returns an
 * error message, or undefined when done.
 */
export async function setUpWrapperDir(
  ctx: PluginContext,
  dir: string,
  medium: '' | 'Memory',
  sizeBytes: number | undefined,
  mustBeTmpfs: boolean,
): Promise<string | undefined> {
  await ctx.fs.mkdir(dir, EmptyDirPerm);
  const st = await ctx.fs.lstat(dir);
  if (st && (st.mode & 0o7777) !== EmptyDirPerm) await ctx.fs.chmod(dir, EmptyDirPerm);
  if (medium !== 'Memory') return undefined;
  const mounted = await ctx.mounter.mountPoint(dir);
  if (mounted?.fstype === 'tmpfs') return undefined;
  if (ctx.tmpfs.allowed) {
    try {
      // The tmpfs root keeps the kernel's 1777 (sticky), as on a kubelet: setupDir's chmod comes before the mount.
      await ctx.mounter.mountTmpfs(dir, sizeBytes);
      return undefined;
    } catch (err) {
      if (mustBeTmpfs)
        return `failed to mount tmpfs at ${dir}: ${err instanceof Error ? err.message : String(err)}`;
      ctx.tmpfs.allowed = false;
    }
  }
  if (mustBeTmpfs) return `memory storage requested, but this operator cannot mount tmpfs at ${dir}`;
  if (!ctx.tmpfs.refusedLogged) {
    ctx.tmpfs.refusedLogged = true;
    ctx.logger.warn(
      'tmpfs mounts are refused (no CAP_SYS_ADMIN?): secret and projected volumes are plain directories on this node',
      { dir },
    );
  }
  return undefined;
}

async function isReady(ctx: PluginContext, metaDir: string): Promise<boolean> {
  return (await ctx.fs.lstat(joinPath(metaDir, READY_FILE)))?.kind === 'file';
}

async function setReady(ctx: PluginContext, metaDir: string): Promise<void> {
  await ctx.fs.mkdir(metaDir, 0o750);
  await ctx.fs.writeFile(joinPath(metaDir, READY_FILE), Buffer.alloc(0), 0o600);
}

export async function setUpEmptyDir(
  ctx: PluginContext,
  pod: Pod,
  name: string,
  source: EmptyDirVolumeSource,
): Promise<SetUpResult> {
  const uid = pod.metadata.uid ?? '';
  const dir = podVolumeDir(ctx.podsDir, uid, PluginDirs.emptyDir, name);
  const metaDir = podPluginDir(ctx.podsDir, uid, PluginDirs.emptyDir, name);
  const medium = source.medium ?? '';
  const mounted = { hostPath: dir, readOnly: false, selinuxRelabel: true };
  if (medium !== '' && medium !== 'Memory') {
    if (isHugePages(medium))
      return mountFailure(`medium ${medium}: hugePages storage is not supported by this node`);
    return mountFailure(`unknown storage medium ${JSON.stringify(medium)}`);
  }
  if (await isReady(ctx, metaDir)) {
    if (medium === '' && (await ctx.fs.lstat(dir))?.kind === 'dir') return { ok: true, volume: mounted };
    if (medium === 'Memory' && (await ctx.mounter.mountPoint(dir))?.fstype === 'tmpfs')
      return { ok: true, volume: mounted };
  }
  const size = medium === 'Memory' ? emptyDirMemorySize(pod, source, ctx.nodeAllocatable()) : undefined;
  const err = await setUpWrapperDir(ctx, dir, medium, size, true);
  if (err) return mountFailure(err);
  await setVolumeOwnership(ctx.fs, dir, {
    fsGroup: fsGroupFrom(pod),
    readOnly: false,
    ...(pod.spec.securityContext?.fsGroupChangePolicy
      ? { fsGroupChangePolicy: pod.spec.securityContext.fsGroupChangePolicy }
      : {}),
  });
  await setReady(ctx, metaDir);
  return { ok: true, volume: mounted };
}

/** Removes an emptyDir-style volume directory (unmounting its tmpfs first) and its plugin metadata. */
export async function tearDownVolumeDir(
  ctx: PluginContext,
  uid: string,
  plugin: PluginDir,
  name: string,
): Promise<void> {
  const dir = podVolumeDir(ctx.podsDir, uid, plugin, name);
  for (const m of await ctx.mounter.mountsUnder(dir)) await ctx.mounter.unmount(m);
  if (await ctx.mounter.mountPoint(dir)) await ctx.mounter.unmount(dir);
  await ctx.fs.rm(dir);
  await ctx.fs.rm(podPluginDir(ctx.podsDir, uid, plugin, name));
}

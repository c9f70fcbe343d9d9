/**
 * The hostPath plugin (kubelet: pkg/volume/hostpath): the node's own path, used as it is, after the checks its
 * `type` asks for, worded as the kubelet words them. On a cri node the path is on the operator's host (the
 * runtime's host); on a sim node it is in the node's in-memory filesystem, so `DirectoryOrCreate` and
 * `FileOrCreate` work and `Directory` fails as it would on an empty machine. A path at or under
 * `/var/lib/kubelet` is the node's own kubelet root directory (src/kubelet/rootdir.ts resolveKubeletHostPath),
 * so node plugins bound to different VirtualNodes of one host each get their own `plugins_registry/`.
 */
import type { HostPathVolumeSource } from '../../api/volumes.js';
import type { EntryStat } from './fs.js';
import { resolveKubeletHostPath } from '../rootdir.js';
import { dirName } from './paths.js';
import { mountFailure, type PluginContext, type SetUpResult } from './plugin.js';

/** The HostPathType name the kubelet's GetFileType gives an entry. */
function fileType(st: EntryStat): string | undefined {
  if (st.kind === 'dir') return 'Directory';
  if (st.kind === 'file') return 'File';
  switch (st.special) {
    case 'socket':
      return 'Socket';
    case 'charDevice':
      return 'CharDevice';
    case 'blockDevice':
      return 'BlockDevice';
    default:
      return undefined;
  }
}

async function typeMatchedOrError(
  ctx: PluginContext,
  path: string,
  expected: string,
  description: string,
): Promise<string | undefined> {
  const st = await ctx.fs.stat(path);
  if (!st) return `hostPath ${path} doesn't exist`;
  const actual = fileType(st);
  if (actual === undefined) {
    return `hostPath type check failed, ${path} is not a ${description}, unable to determine its type: only recognise file, directory, socket, block device and character device`;
  }
  if (actual !== expected)
    return `hostPath type check failed: ${path} is not a ${description}, it's a ${actual}`;
  return undefined;
}

/** kubelet checkType: undefined when the path is (or was made) what `type` asks for. */
export async function checkHostPathType(
  ctx: PluginContext,
  path: string,
  type: string,
): Promise<string | undefined> {
  switch (type) {
    case 'DirectoryOrCreate':
      if (!(await ctx.fs.stat(path))) {
        await ctx.fs.mkdir(path, 0o755);
        return undefined;
      }
      return typeMatchedOrError(ctx, path, 'Directory', 'directory');
    case 'Directory':
      return typeMatchedOrError(ctx, path, 'Directory', 'directory');
    case 'FileOrCreate':
      if (!(await ctx.fs.stat(path))) {
        // As os.OpenFile(O_CREATE): the parent must exist.
        if ((await ctx.fs.stat(dirName(path)))?.kind !== 'dir')
          return `open ${path}: no such file or directory`;
        await ctx.fs.writeFile(path, Buffer.alloc(0), 0o644);
        return undefined;
      }
      return typeMatchedOrError(ctx, path, 'File', 'file');
    case 'File':
      return typeMatchedOrError(ctx, path, 'File', 'file');
    case 'Socket':
      return typeMatchedOrError(ctx, path, 'Socket', 'socket file');
    case 'CharDevice':
      return typeMatchedOrError(ctx, path, 'CharDevice', 'character device');
    case 'BlockDevice':
      return typeMatchedOrError(ctx, path, 'BlockDevice', 'block device');
    default:
      return `${type} is an invalid volume type`;
  }
}

/** hostPath SetUp: no `..` elements, then the type check (none for an unset type). */
export async function setUpHostPath(
  ctx: PluginContext,
  source: HostPathVolumeSource,
  readOnly = false,
): Promise<SetUpResult> {
  if (source.path.split('/').includes('..'))
    return mountFailure(`invalid HostPath \`${source.path}\`: must not contain '..'`);
  const path = resolveKubeletHostPath(source.path, ctx.kubeletRootDir);
  const type = source.type ?? '';
  if (type !== '') {
    let err: string | undefined;
    try {
      err = await checkHostPathType(ctx, path, type);
    } catch (e) {
      err = e instanceof Error ? e.message : String(e);
    }
    if (err) return mountFailure(err);
  }
  return {
    ok: true,
    volume: {
      hostPath: path,
      readOnly,
      selinuxRelabel: false,
      ...(path !== source.path ? { kubeletPath: source.path } : {}),
    },
  };
}

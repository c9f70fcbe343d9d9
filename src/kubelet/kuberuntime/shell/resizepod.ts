/**
 * Acting on an in-place resize (kubelet: doPodResizeAction): each container the decision (resize.ts) chose is
 * updated through the runtime, with one ResizePodInPlace result for the pod; lowered memory limits are checked
 * against the containers' usage first. With pod-level resources (podlevelresize.ts) the pod cgroup follows:
 * what grows is written before the containers, what shrinks after them, each write recorded as it succeeds;
 * a lowered pod memory limit is checked against the pod's usage too.
 */
import { errorMessage } from '../../../util/errors.js';
import type { ContainerID } from '../../container/types.js';
import type { ManagerContext } from './context.js';
import { withPodCgroupStep, type PodLevelResize } from '../podlevelresize.js';
import { decreasedMemoryLimit, memoryDecreaseError, type ContainerToUpdate } from '../resize.js';
import { failResult, type SyncResultBuilder } from './syncresult.js';

/** The pod cgroup part of a resize: whose, where, what, and the pod's running containers (for its usage). */
export interface PodCgroupResize {
  uid: string;
  /** The pod cgroup's path below each hierarchy's mount. */
  cgroup: string;
  resize: PodLevelResize;
  runningContainers: readonly ContainerID[];
}

/**
 * The pod's memory usage: its cgroup's charge where the node reads it, else the sum of its running containers'
 * (the simulated runtime). Undefined when it cannot be told.
 */
async function podMemoryUsage(
  ctx: Pick<ManagerContext, 'runtime' | 'logger' | 'podCgroups'>,
  podDesc: string,
  pod: PodCgroupResize,
): Promise<number | undefined> {
  try {
    const read = await ctx.podCgroups.read(pod.cgroup);
    if (read?.memoryUsageBytes !== undefined) return read.memoryUsageBytes;
    let sum = 0;
    for (const id of pod.runningContainers) {
      const m = (await ctx.runtime.containerStats(id)).memory;
      const used = m?.usageBytes ?? m?.workingSetBytes;
      if (used === undefined) return undefined;
      sum += used;
    }
    return sum;
  } catch (err) {
    ctx.logger.warn('reading pod memory usage failed', { pod: podDesc, err: errorMessage(err) });
    return undefined;
  }
}

/**
 * Updates each container in place, and the pod cgroup around them, one result entry for the pod. The first
 * error stops the rest; the pod worker's next sync tries again from what was recorded.
 */
export async function doPodResizeAction(
  ctx: Pick<ManagerContext, 'runtime' | 'logger' | 'podCgroups' | 'actuatedPodCgroups'>,
  podDesc: string,
  toUpdate: readonly ContainerToUpdate[],
  b: SyncResultBuilder,
  podCgroup?: PodCgroupResize,
): Promise<void> {
  if (toUpdate.length === 0 && !podCgroup) return;
  const r = b.add('ResizePodInPlace', podDesc);
  // A lower memory limit must stay above what the container uses now, or the kernel would have to reclaim or
  // kill: refused as a whole, retried at the next sync (by then the usage may have dropped).
  const checks: { name: string; limitBytes: number; usageBytes: number | undefined }[] = [];
  for (const c of toUpdate) {
    const limitBytes = decreasedMemoryLimit(c);
    if (limitBytes === undefined) continue;
    let usageBytes: number | undefined;
    try {
      const m = (await ctx.runtime.containerStats(c.id)).memory;
      usageBytes = m?.usageBytes ?? m?.workingSetBytes;
    } catch (err) {
      ctx.logger.warn('reading container memory usage failed', {
        pod: podDesc,
        container: c.name,
        err: errorMessage(err),
      });
    }
    checks.push({ name: c.name, limitBytes, usageBytes });
  }
  let podCheck: { limitBytes: number; usageBytes: number | undefined } | undefined;
  const podLimit = podCgroup?.resize.after.find((s) => s.memoryLimitBytes !== undefined)?.memoryLimitBytes;
  if (podCgroup && podLimit !== undefined && podLimit > 0)
    podCheck = { limitBytes: podLimit, usageBytes: await podMemoryUsage(ctx, podDesc, podCgroup) };
  const refused = memoryDecreaseError(checks, podCheck);
  if (refused) {
    failResult(r, 'ResizePodInPlaceError', refused);
    return;
  }
  // The pod cgroup grows first: its containers never ask for more than it holds.
  if (podCgroup && !(await writePodCgroup(ctx, podDesc, podCgroup, podCgroup.resize.before, r))) return;
  for (const c of toUpdate) {
    try {
      await ctx.runtime.updateContainerResources(c.id, c.resources);
    } catch (err) {
      const message = `failed to update resources of container ${JSON.stringify(c.name)}: ${errorMessage(err)}`;
      failResult(r, 'ResizePodInPlaceError', message);
      ctx.logger.warn('in-place resize failed', { pod: podDesc, container: c.name, err: errorMessage(err) });
      return;
    }
  }
  // And shrinks last, once its containers hold less.
  if (podCgroup) await writePodCgroup(ctx, podDesc, podCgroup, podCgroup.resize.after, r);
}

/** Writes `steps` to the pod cgroup in order, recording each; false (and the result failed) at the first error. */
async function writePodCgroup(
  ctx: Pick<ManagerContext, 'logger' | 'podCgroups' | 'actuatedPodCgroups'>,
  podDesc: string,
  pod: PodCgroupResize,
  steps: PodLevelResize['before'],
  r: Parameters<typeof failResult>[0],
): Promise<boolean> {
  for (const step of steps) {
    try {
      await ctx.podCgroups.set(pod.cgroup, step);
    } catch (err) {
      const message = `failed to set pod cgroup config: ${errorMessage(err)}`;
      failResult(r, 'ResizePodInPlaceError', message);
      ctx.logger.warn('in-place resize of the pod cgroup failed', { pod: podDesc, err: errorMessage(err) });
      return false;
    }
    ctx.actuatedPodCgroups.set(pod.uid, withPodCgroupStep(ctx.actuatedPodCgroups.get(pod.uid), step));
  }
  return true;
}

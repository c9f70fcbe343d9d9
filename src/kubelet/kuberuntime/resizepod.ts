/**
 * Acting on an in-place resize (kubelet: doPodResizeAction): each container the decision (resize.ts) chose is
 * updated through the runtime, with one ResizePodInPlace result for the pod; lowered memory limits are checked
 * against the containers' usage first.
 */
import { errorMessage } from '../../util/errors.js';
import type { ManagerContext } from './context.js';
import { decreasedMemoryLimit, memoryDecreaseError, type ContainerToUpdate } from './resize.js';
import { failResult, type SyncResultBuilder } from './syncresult.js';

/**
 * Updates each container in place, one result entry for the pod. The first runtime
 * error stops the rest; the pod worker's next sync tries again.
 */
export async function doPodResizeAction(
  ctx: Pick<ManagerContext, 'runtime' | 'logger'>,
  podDesc: string,
  toUpdate: readonly ContainerToUpdate[],
  b: SyncResultBuilder,
): Promise<void> {
  if (toUpdate.length === 0) return;
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
  const refused = memoryDecreaseError(checks);
  if (refused) {
    failResult(r, 'ResizePodInPlaceError', refused);
    return;
  }
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
}

/**
 * Acting on an in-place resize (kubelet: doPodResizeAction): each container the decision (resize.ts) chose is
 * updated through the runtime, with one ResizePodInPlace result for the pod.
 */
import { errorMessage } from '../../util/errors.js';
import type { ManagerContext } from './context.js';
import type { ContainerToUpdate } from './resize.js';
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

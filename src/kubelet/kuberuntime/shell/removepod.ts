/**
 * Removing what the runtime holds for a terminated pod: its containers (and their log files), its sandboxes
 * and, once those are gone, the host-side leftovers its runtime's capabilities make ours (the pod's log
 * directory, its cgroup). Works from the caller's view plus a fresh listing, so objects created after that
 * view was read go too. Idempotent; failures are results, never thrown.
 */
import { errorMessage } from '../../../util/errors.js';
import type { RuntimePodStatus } from '../../container/types.js';
import type { ManagerContext } from './context.js';
import { removeContainer } from './killcontainer.js';
import { removePodLeftovers } from './removeleftovers.js';
import { removePodSandbox } from './sandboxes.js';
import { failResult, SyncResultBuilder, type PodSyncResult } from './syncresult.js';

/** `relist` reads the pod afresh from the runtime; a failure there is logged and the removal goes on. */
export async function removePod(
  ctx: ManagerContext,
  running: RuntimePodStatus,
  relist: () => Promise<RuntimePodStatus>,
): Promise<PodSyncResult> {
  const b = new SyncResultBuilder();
  let fresh: RuntimePodStatus | undefined;
  try {
    fresh = await relist();
  } catch (err) {
    ctx.logger.warn('could not list the pod before removal', {
      podUID: running.uid,
      err: errorMessage(err),
    });
  }
  const containers = new Map<string, string>();
  for (const c of [...running.containers, ...(fresh?.containers ?? [])]) containers.set(c.id, c.name);
  const sandboxes = new Set([...running.sandboxes, ...(fresh?.sandboxes ?? [])].map((s) => s.id));

  for (const [id, name] of containers) {
    const r = b.add('RemoveContainer', name);
    try {
      await removeContainer(ctx, id);
    } catch (err) {
      failResult(r, 'RemoveContainerError', errorMessage(err));
    }
  }
  for (const id of sandboxes) {
    const r = b.add('RemovePodSandbox', id);
    try {
      await removePodSandbox(ctx, id);
    } catch (err) {
      failResult(r, 'RemovePodSandboxError', errorMessage(err));
    }
  }
  const result = b.build({ podUID: running.uid });
  if (!result.error) {
    try {
      await removePodLeftovers(ctx, running.namespace, running.name, running.uid);
    } catch (err) {
      ctx.logger.warn('could not clean up pod directories', {
        podUID: running.uid,
        err: errorMessage(err),
      });
    }
  }
  return result;
}

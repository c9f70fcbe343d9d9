/**
 * Removing a pod's host-side leftovers, its log directory and its cgroup, for the pods PodLeftovers holds
 * (see podleftovers.ts for which and when).
 */
import { rm } from 'node:fs/promises';
import { destroyCgroup } from '../../cm/shell/podcgroup.js';
import { errorMessage } from '../../../util/errors.js';
import type { PodLeftovers } from '../podleftovers.js';
import { podCgroupParent, podLogsDirectory } from '../sandboxconfig.js';

/** What of the runtime manager's context the clean-up reads (ManagerContext has it all). */
export interface LeftoversContext {
  manageLogDirectories: boolean;
  removePodCgroups: boolean;
  node: { podLogsRoot: string; cgroupRoot: string };
  logger: { warn(message: string, fields?: Record<string, unknown>): void };
  leftovers: PodLeftovers;
  clock: { now(): number };
}

/** Whether this node makes leftovers at all (a simulated runtime makes none: nothing is recorded then). */
export function makesLeftovers(ctx: LeftoversContext): boolean {
  return ctx.manageLogDirectories || ctx.removePodCgroups;
}

/**
 * Removes the pod's log directory and cgroup, then marks the pod removed (PodLeftovers.removed: forgotten
 * after a second look). Throws when the directory could not go; a cgroup that could not go is logged, and
 * the pod stays recorded as it was, so that housekeeping tries again.
 */
export async function removePodLeftovers(
  ctx: LeftoversContext,
  namespace: string,
  name: string,
  uid: string,
): Promise<void> {
  if (!uid) return;
  if (ctx.manageLogDirectories && namespace && name) {
    await rm(podLogsDirectory(ctx.node.podLogsRoot, namespace, name, uid), { recursive: true, force: true });
  }
  if (await removePodCgroup(ctx, uid)) ctx.leftovers.removed(uid, ctx.clock.now());
}

/**
 * Housekeeping's pass: removes what the recorded pods that may go and that the runtime no longer holds left
 * behind. Returns one line per pod whose leftovers could not go (tried again next time).
 */
export async function removeOrphanedPodLeftovers(
  ctx: LeftoversContext,
  removable: (uid: string) => boolean,
  inRuntime: (uid: string) => boolean,
): Promise<string[]> {
  const errors: string[] = [];
  for (const [uid, ref] of ctx.leftovers.orphaned(removable, inRuntime, ctx.clock.now())) {
    try {
      await removePodLeftovers(ctx, ref.namespace, ref.name, uid);
    } catch (err) {
      errors.push(`failed to clean up pod ${ref.namespace}/${ref.name} (${uid}): ${errorMessage(err)}`);
    }
  }
  return errors;
}

/**
 * Destroys the pod's cgroup (`<cgroupRoot>/pod<uid>`) in every mounted hierarchy, processes still in it killed
 * first (cm/shell/podcgroup.ts): containerd leaves the cgroup behind after RemovePodSandbox, where the kubelet's pod
 * container manager would destroy it. Failures are logged, never thrown, and only the first time for a pod
 * (PodLeftovers.logFailure); false when one hierarchy still holds it.
 */
async function removePodCgroup(ctx: LeftoversContext, uid: string): Promise<boolean> {
  if (!ctx.removePodCgroups) return true;
  const failures = await destroyCgroup(podCgroupParent(ctx.node.cgroupRoot, uid));
  if (failures.length && ctx.leftovers.logFailure(uid)) {
    ctx.logger.warn('could not remove pod cgroup; housekeeping tries again (logged once)', {
      podUID: uid,
      errors: failures,
    });
  }
  return failures.length === 0;
}

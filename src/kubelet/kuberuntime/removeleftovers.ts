/**
 * Removing a pod's host-side leftovers, its log directory and its cgroup, for the pods PodLeftovers holds
 * (see podleftovers.ts for which and when).
 */
import { readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../util/errors.js';
import type { PodLeftovers } from './podleftovers.js';
import { podCgroupParent, podLogsDirectory } from './sandboxconfig.js';

const CGROUP_MOUNT = '/sys/fs/cgroup';

/** What of the runtime manager's context the clean-up reads (ManagerContext has it all). */
export interface LeftoversContext {
  manageLogDirectories: boolean;
  removePodCgroups: boolean;
  node: { podLogsRoot: string; cgroupRoot: string };
  logger: { warn(message: string, fields?: Record<string, unknown>): void };
  leftovers: PodLeftovers;
}

/** Whether this node makes leftovers at all (a simulated runtime makes none: nothing is recorded then). */
export function makesLeftovers(ctx: LeftoversContext): boolean {
  return ctx.manageLogDirectories || ctx.removePodCgroups;
}

/**
 * Removes the pod's log directory and cgroup, then forgets the pod. Throws when the directory could not go;
 * a cgroup that could not go is logged, and the pod stays recorded so that housekeeping tries again.
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
  if (await removePodCgroup(ctx, uid)) ctx.leftovers.forget(uid);
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
  for (const [uid, ref] of ctx.leftovers.orphaned(removable, inRuntime)) {
    try {
      await removePodLeftovers(ctx, ref.namespace, ref.name, uid);
    } catch (err) {
      errors.push(`failed to clean up pod ${ref.namespace}/${ref.name} (${uid}): ${errorMessage(err)}`);
    }
  }
  return errors;
}

/** rmdir a cgroupfs directory, children first (cgroupfs refuses recursive unlink). Missing = done. */
async function rmdirTree(path: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(path, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) {
    if (e.isDirectory()) await rmdirTree(join(path, e.name));
  }
  try {
    await rmdir(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Removes the pod's cgroup (`<cgroupRoot>/pod<uid>`) in every mounted hierarchy: containerd leaves it behind
 * after RemovePodSandbox, where the kubelet's pod cgroup manager would delete it. Failures are logged, never
 * thrown, and only the first time for a pod (PodLeftovers.logFailure); false when one hierarchy still holds it
 * (a busy cgroup).
 */
async function removePodCgroup(ctx: LeftoversContext, uid: string): Promise<boolean> {
  if (!ctx.removePodCgroups) return true;
  const rel = podCgroupParent(ctx.node.cgroupRoot, uid);
  let hierarchies: string[];
  try {
    hierarchies = (await readdir(CGROUP_MOUNT, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => join(CGROUP_MOUNT, e.name));
  } catch {
    return true;
  }
  const failures: string[] = [];
  for (const base of [CGROUP_MOUNT, ...hierarchies]) {
    try {
      await rmdirTree(join(base, rel));
    } catch (err) {
      failures.push(`${join(base, rel)}: ${errorMessage(err)}`);
    }
  }
  if (failures.length && ctx.leftovers.logFailure(uid)) {
    ctx.logger.warn('could not remove pod cgroup; housekeeping tries again (logged once)', {
      podUID: uid,
      errors: failures,
    });
  }
  return failures.length === 0;
}

/**
 * Pod sandboxes (kubelet: kuberuntime_sandbox.go createPodSandbox, plus the host-side leftovers the kubelet's
 * pod cgroup and log managers clean up): create, stop, remove, and the pod's log directory and cgroup.
 */
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../api/core.js';
import type { PodSandboxConfig } from '../../runtime/types.js';
import { errorMessage, isNotFound } from '../../util/errors.js';
import type { ManagerContext } from './context.js';
import { buildPodSandboxConfig, podCgroupParent, podLogsDirectory } from './sandboxconfig.js';

const CGROUP_MOUNT = '/sys/fs/cgroup';

/**
 * The pod as the node runs it: with `podNetwork: host`, every pod gets the node's network namespace, so the
 * sandbox decision, the sandbox config and the downward API all see `hostNetwork: true`. Otherwise the pod
 * itself (never copied needlessly).
 */
export function effectivePod(pod: Pod, podNetwork: 'host' | 'cni'): Pod {
  if (podNetwork !== 'host' || pod.spec.hostNetwork === true) return pod;
  return { ...pod, spec: { ...pod.spec, hostNetwork: true } };
}

export type CreateSandboxOutcome =
  { ok: true; id: string; config: PodSandboxConfig } | { ok: false; error: Error; message: string };

/**
 * Creates the pod's `attempt`-th sandbox (kubelet: createPodSandbox): builds the config, makes the log
 * directory, runs the sandbox. Never throws; a failure carries the kubelet's result message
 * (`Failed to create pod sandbox for pod "<name_ns(uid)>": <err>`).
 */
export async function createPodSandbox(
  ctx: ManagerContext,
  pod: Pod,
  podDesc: string,
  attempt: number,
): Promise<CreateSandboxOutcome> {
  try {
    const config = await podSandboxConfig(ctx, pod, attempt);
    if (ctx.manageLogDirectories && config.logDirectory) {
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
    }
    const id = await ctx.runtime.runPodSandbox(config);
    return { ok: true, id, config };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    return {
      ok: false,
      error,
      message: `Failed to create pod sandbox for pod ${JSON.stringify(podDesc)}: ${error.message}`,
    };
  }
}

/**
 * The config of the pod's `attempt`-th sandbox, with the runtime helper's hostname and DNS. `quiet`
 * (adoption of a sandbox that exists already) records none of the DNS Events a creation would.
 */
export async function podSandboxConfig(
  ctx: ManagerContext,
  pod: Pod,
  attempt: number,
  quiet = false,
): Promise<PodSandboxConfig> {
  const overrides = ctx.runtimeHelper ? await ctx.runtimeHelper.sandboxOptions(pod, { quiet }) : undefined;
  return buildPodSandboxConfig(pod, ctx.node, attempt, overrides);
}

/** Stops a sandbox; an unknown one counts as stopped. */
export async function stopPodSandbox(ctx: ManagerContext, id: string): Promise<void> {
  try {
    await ctx.runtime.stopPodSandbox(id);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Stops (in case it still runs, as the kubelet's GC does) and removes a sandbox. Idempotent.
 */
export async function removePodSandbox(ctx: ManagerContext, id: string): Promise<void> {
  await stopPodSandbox(ctx, id);
  await ctx.runtime.removePodSandbox(id);
}

/** Removes `<podLogsRoot>/<ns>_<name>_<uid>` when this manager owns log directories. Idempotent. */
export async function removePodLogDirectory(
  ctx: ManagerContext,
  namespace: string,
  name: string,
  uid: string,
): Promise<void> {
  if (!ctx.manageLogDirectories || !namespace || !name || !uid) return;
  await rm(podLogsDirectory(ctx.node.podLogsRoot, namespace, name, uid), { recursive: true, force: true });
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
 * after RemovePodSandbox, where the kubelet's pod cgroup manager would delete it. Failures are logged (a busy
 * cgroup is retried by the next removal or GC), never thrown.
 */
export async function removePodCgroup(ctx: ManagerContext, uid: string): Promise<void> {
  if (!ctx.removePodCgroups || !uid) return;
  const rel = podCgroupParent(ctx.node.cgroupRoot, uid);
  let hierarchies: string[];
  try {
    hierarchies = (await readdir(CGROUP_MOUNT, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => join(CGROUP_MOUNT, e.name));
  } catch {
    return;
  }
  for (const base of [CGROUP_MOUNT, ...hierarchies]) {
    try {
      await rmdirTree(join(base, rel));
    } catch (err) {
      ctx.logger.warn('could not remove pod cgroup', { path: join(base, rel), err: errorMessage(err) });
    }
  }
}

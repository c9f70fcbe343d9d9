/**
 * Pod sandboxes (kubelet: kuberuntime_sandbox.go createPodSandbox): create (with the pod's log directory),
 * stop, remove. What a pod leaves on the host is removed by removeleftovers.ts.
 */
import { mkdir } from 'node:fs/promises';
import type { Pod } from '../../../api/core.js';
import type { PodSandboxConfig, UserNamespace } from '../../../runtime/types.js';
import { isNotFound, KindError } from '../../../util/errors.js';
import { userNamespaceRequest } from '../../userns/manager.js';
import type { ManagerContext } from './context.js';
import { makesLeftovers } from './removeleftovers.js';
import { buildPodSandboxConfig, podCgroupParent } from '../sandboxconfig.js';
import { isPodLevelResourcesSet } from '../../../api/resources.js';
import { ensurePodCgroup } from '../../cm/shell/podcgroup.js';
import { resourceConfigForPod } from '../../cm/resourceconfig.js';

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
 * (`Failed to generate sandbox config for pod "<name_ns(uid)>": <err>` when the config cannot be made, e.g.
 * `hostUsers: false` on a runtime without user namespaces; `unable to ensure pod container exists: ...` when
 * the pod cgroup cannot be given its limits; `Failed to create pod sandbox for pod ...` else).
 *
 * On a host whose pod cgroups the node manages (a CRI runtime), a pod with pod-level resources gets its
 * cgroup made with the limits of cm/resourceconfig.ts before the runtime puts the sandbox in it, as the
 * kubelet's pod container manager does. Pods without pod-level resources keep a cgroup without limits of its
 * own (the kubelet would also limit theirs, and resize them with their containers: not done here). The
 * limits written are recorded (ctx.actuatedPodCgroups) for the in-place resize of pod-level resources.
 */
export async function createPodSandbox(
  ctx: ManagerContext,
  pod: Pod,
  podDesc: string,
  attempt: number,
): Promise<CreateSandboxOutcome> {
  const failed = (err: unknown, what: string): CreateSandboxOutcome => {
    const error = err instanceof Error ? err : new Error(String(err));
    return { ok: false, error, message: `${what} for pod ${JSON.stringify(podDesc)}: ${error.message}` };
  };
  let config: PodSandboxConfig;
  try {
    config = await podSandboxConfig(ctx, pod, attempt);
  } catch (err) {
    return failed(err, 'Failed to generate sandbox config');
  }
  try {
    if (makesLeftovers(ctx))
      ctx.leftovers.record(config.metadata.namespace, config.metadata.name, config.metadata.uid);
    if (ctx.manageLogDirectories && config.logDirectory) {
      await mkdir(config.logDirectory, { recursive: true, mode: 0o755 });
    }
    if (isPodLevelResourcesSet(pod.spec)) {
      try {
        const limits = resourceConfigForPod(pod, ctx.node.cpuCFSQuotaPeriodUs);
        if (ctx.removePodCgroups)
          await ensurePodCgroup(podCgroupParent(ctx.node.cgroupRoot, config.metadata.uid), limits);
        // What the pod cgroup now holds (on a node without host pod cgroups, the record is all there is).
        ctx.actuatedPodCgroups.set(config.metadata.uid, limits);
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        return { ok: false, error, message: `unable to ensure pod container exists: ${error.message}` };
      }
    }
    const id = await ctx.runtime.runPodSandbox(config);
    return { ok: true, id, config };
  } catch (err) {
    return failed(err, 'Failed to create pod sandbox');
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
  return withUserNamespace(
    buildPodSandboxConfig(pod, ctx.node, attempt, overrides),
    await podUserNamespace(ctx, pod),
  );
}

/**
 * The config of a sandbox that exists already, as the containers started in it are created with (kubelet:
 * generatePodSandboxConfig in SyncPod's start): no DNS or hostname lookups, the pod's user namespace as the
 * sandbox has it. Rejects as the sandbox's creation would.
 */
export async function existingSandboxConfig(
  ctx: ManagerContext,
  pod: Pod,
  attempt: number,
): Promise<PodSandboxConfig> {
  return withUserNamespace(buildPodSandboxConfig(pod, ctx.node, attempt), await podUserNamespace(ctx, pod));
}

/**
 * The pod's user namespace (kubelet NamespacesForPod's UsernsOptions): the runtime helper allocates one;
 * without a helper only the host's can be given.
 */
async function podUserNamespace(ctx: ManagerContext, pod: Pod): Promise<UserNamespace> {
  const handlers = ctx.runtimeHandlers();
  if (ctx.runtimeHelper?.userNamespace) return ctx.runtimeHelper.userNamespace(pod, handlers);
  const request = userNamespaceRequest(pod, handlers);
  if (request.mode === 'NODE') return { mode: 'NODE' };
  throw new KindError(
    'Unimplemented',
    request.mode === 'refused' ? request.message : 'create user namespace: no user namespace manager',
  );
}

/** The config with the pod's own user namespace, when it has one (the host's is what the runtime does unasked). */
function withUserNamespace(config: PodSandboxConfig, userns: UserNamespace): PodSandboxConfig {
  const sc = config.linux?.securityContext;
  if (userns.mode !== 'POD' || !sc) return config;
  sc.namespaceOptions = { ...sc.namespaceOptions, userNamespace: userns };
  return config;
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

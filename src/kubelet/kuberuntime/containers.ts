/**
 * Starting, killing and removing one container (kubelet: kuberuntime_container.go startContainer,
 * killContainer, executePreStopHook, restoreSpecsFromContainerLabels, removeContainer, terminationOrdering).
 */
import { mkdir, readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  isRestartableInitContainer,
  type Container,
  type LifecycleHandler,
  type Pod,
} from '../../api/core.js';
import { buildContainerConfig, podLogsDirectory } from '../../runtime/cri/podconfig.js';
import {
  ContainerNameLabel,
  ContainerPortsAnnotation,
  ContainerTerminationMessagePathAnnotation,
  PodDeletionGracePeriodAnnotation,
  PodNameLabel,
  PodNamespaceLabel,
  PodTerminationGracePeriodAnnotation,
  PodUIDLabel,
} from '../../runtime/labels.js';
import { SimAnnotationPrefix } from '../../runtime/sim/profile.js';
import type { ContainerConfig, Image, PodSandboxConfig } from '../../runtime/types.js';
import { errorMessage, isNotFound, KindError } from '../../util/errors.js';
import { formatPod } from '../backoff.js';
import { findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import {
  envSourceNames,
  expandContainerCommandAndArgs,
  makeEnvironmentVariables,
  type EnvSources,
  type EnvVarValue,
} from '../envvars.js';
import { containerSpec, recordContainerEvent, recordPodEvent, type ManagerContext } from './context.js';
import { runLifecycleHandler, type HookRunnerDeps } from './hooks.js';
import { imageUserOf, needsImageUser, verifyRunAsNonRoot } from './securitycontext.js';
import { ensureImageExists } from './images.js';
import type { ContainerKillReason } from './podactions.js';
import type { SyncErrorReason } from './syncresult.js';

/** The kubelet never gives a container less than this to shut down (minimumGracePeriodInSeconds). */
export const MinimumGracePeriodSeconds = 2;

/** Where the kubelet records a container's preStop handler, so a kill without the pod can still run it. */
export const PreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';

export type StartOutcome =
  { ok: true; containerId: string } | { ok: false; error: SyncErrorReason; message: string };

export interface StartContainerArgs {
  /** The pod as the node runs it (see effectivePod). */
  pod: Pod;
  container: Container;
  ephemeral: boolean;
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  podStatus: RuntimePodStatus;
  podIP: string;
  podIPs: string[];
  signal: AbortSignal;
}

function hookDeps(ctx: ManagerContext): HookRunnerDeps {
  return {
    runtime: ctx.runtime,
    clock: ctx.clock,
    httpGet: ctx.httpGet,
    httpTimeoutMs: ctx.hookHttpTimeoutMs,
  };
}

/** The restart count implied by the log files `<n>.log` in the container's log directory (calcRestartCountByLogDir). */
async function restartCountFromLogDir(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of names) {
    const m = /^(\d+)\.log(\..*)?$/.exec(name);
    if (m) count = Math.max(count, Number(m[1]) + 1);
  }
  return count;
}

/** Fetches the ConfigMaps and Secrets the container's environment refers to. */
async function fetchEnvSources(
  ctx: ManagerContext,
  namespace: string,
  container: Container,
): Promise<EnvSources> {
  const names = envSourceNames(container);
  const configMaps = new Map<string, Record<string, string> | undefined>();
  const secrets = new Map<string, Record<string, string> | undefined>();
  await Promise.all([
    ...names.configMaps.map(async (n) => configMaps.set(n, await ctx.envSource.getConfigMap(namespace, n))),
    ...names.secrets.map(async (n) => secrets.set(n, await ctx.envSource.getSecret(namespace, n))),
  ]);
  return { configMaps, secrets };
}

/**
 * The container config (kubelet: generateContainerConfig): environment, mounts, the runAsNonRoot check
 * against the image's user, expanded command and args, the preStop annotation, the sim behaviour annotations
 * of the pod, and the container's log directory. Throws with the kubelet's CreateContainerConfigError message.
 */
async function generateContainerConfig(
  ctx: ManagerContext,
  a: StartContainerArgs,
  restartCount: number,
  image: { imageRef: string; image?: Image },
): Promise<ContainerConfig> {
  const { pod, container } = a;
  const namespace = pod.metadata.namespace ?? '';
  const sources = await fetchEnvSources(ctx, namespace, container);
  const nodeIPs = ctx.node.nodeIPs && ctx.node.nodeIPs.length > 0 ? ctx.node.nodeIPs : [ctx.node.nodeIP];
  // A host-network pod has the node's addresses, whatever the sandbox reports.
  const podIPs = a.podIPs.length > 0 ? a.podIPs : pod.spec.hostNetwork ? nodeIPs : [];
  const { env, skipped } = makeEnvironmentVariables(pod, container, sources, {
    podIP: podIPs[0] ?? a.podIP,
    podIPs,
    hostIP: nodeIPs[0] ?? '',
    hostIPs: nodeIPs,
    nodeName: pod.spec.nodeName ?? ctx.node.nodeName,
    serviceAccountName: pod.spec.serviceAccountName ?? '',
    ...(ctx.node.allocatable ? { nodeAllocatable: ctx.node.allocatable } : {}),
    ...(ctx.runtimeHelper ? { serviceEnv: ctx.runtimeHelper.serviceEnv(pod) } : {}),
  });
  for (const s of skipped) {
    recordPodEvent(
      ctx,
      pod,
      'Warning',
      'InvalidEnvironmentVariableNames',
      `Keys [${s.keys.join(', ')}] from the EnvFrom ${s.kind === 'ConfigMap' ? 'configMap' : 'secret'} ${namespace}/${s.name} were skipped since they are considered invalid environment variable names.`,
    );
  }
  const mounts = ctx.runtimeHelper
    ? await ctx.runtimeHelper.containerMounts(pod, container, podIPs, env)
    : undefined;
  // kubelet getImageUser + verifyRunAsNonRoot: only a numeric, non-zero image user passes runAsNonRoot.
  const user = needsImageUser(pod, container)
    ? imageUserOf(image.image ?? (await ctx.runtime.imageStatus(image.imageRef)))
    : { username: '' };
  const denied = verifyRunAsNonRoot(pod, container, user.uid, user.username);
  if (denied) throw new KindError('Forbidden', denied, { container: container.name });
  const config = buildContainerConfig(
    pod,
    container,
    { restartCount, envs: toKeyValues(env), ...(mounts ? { mounts } : {}) },
    ctx.node,
  );
  const expanded = expandContainerCommandAndArgs(container, env);
  if (expanded.command) config.command = expanded.command;
  if (expanded.args) config.args = expanded.args;
  const preStop = container.lifecycle?.preStop;
  if (preStop) config.annotations[PreStopHandlerAnnotation] = JSON.stringify(preStop);
  if (ctx.runtime.kind === 'sim') {
    // The simulated runtime reads behaviour profiles from container annotations; pods carry them.
    for (const [k, v] of Object.entries(pod.metadata.annotations ?? {})) {
      if (k.startsWith(SimAnnotationPrefix)) config.annotations[k] = v;
    }
  }
  if (ctx.manageLogDirectories && a.sandboxConfig.logDirectory) {
    await mkdir(join(a.sandboxConfig.logDirectory, container.name), { recursive: true, mode: 0o755 });
  }
  return config;
}

function toKeyValues(env: readonly EnvVarValue[]): { key: string; value: string }[] {
  return env.map((e) => ({ key: e.name, value: e.value }));
}

/**
 * Starts one container (kubelet: startContainer): image, config, create, start, postStart hook. Never throws:
 * a failure is an outcome with the kubelet's error reason and message, after the kubelet's events
 * (`Error: <reason or message>`, `Created container: <name>`, `Started container <name>`,
 * `FailedPostStartHook`). A failed postStart hook kills the container.
 */
export async function startContainer(ctx: ManagerContext, a: StartContainerArgs): Promise<StartOutcome> {
  const { pod, container } = a;
  const name = container.name;
  const failed = (
    error: SyncErrorReason,
    message: string,
    containerId = '',
    eventMessage = message,
  ): StartOutcome => {
    recordContainerEvent(ctx, pod, name, containerId, 'Warning', 'Failed', `Error: ${eventMessage}`);
    return { ok: false, error, message };
  };

  // Step 1: the image.
  const image = await ensureImageExists(ctx, pod, container, a.sandboxConfig);
  if (!image.ok) return failed(image.error, image.message, '', image.error);

  // Step 2: the container.
  const previous = findContainerStatusByName(a.podStatus, name);
  let restartCount = previous ? previous.restartCount + 1 : 0;
  if (!previous && ctx.manageLogDirectories) {
    // Runtimes that lose their state on a node reboot would restart counting at 0 and overwrite 0.log.
    const { namespace = '', name: podName = '', uid = '' } = pod.metadata;
    restartCount = await restartCountFromLogDir(
      join(podLogsDirectory(ctx.node.podLogsRoot, namespace, podName, uid), name),
    );
  }
  const target = (container as { targetContainerName?: string }).targetContainerName;
  if (a.ephemeral && target && !findContainerStatusByName(a.podStatus, target)) {
    return failed('CreateContainerConfigError', `unable to find target container ${target}`);
  }

  let config: ContainerConfig;
  try {
    config = await generateContainerConfig(ctx, a, restartCount, image);
  } catch (err) {
    return failed('CreateContainerConfigError', errorMessage(err));
  }

  let containerId: string;
  try {
    containerId = await ctx.runtime.createContainer(a.sandboxId, config, a.sandboxConfig);
  } catch (err) {
    return failed('CreateContainerError', errorMessage(err));
  }
  recordContainerEvent(ctx, pod, name, containerId, 'Normal', 'Created', `Created container: ${name}`);

  // Step 3: start it.
  try {
    await ctx.runtime.startContainer(containerId);
  } catch (err) {
    return failed('RunContainerError', errorMessage(err), containerId);
  }
  recordContainerEvent(ctx, pod, name, containerId, 'Normal', 'Started', `Started container ${name}`);

  // Step 4: the postStart hook.
  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    const outcome = await runLifecycleHandler(hookDeps(ctx), {
      containerId,
      pod,
      container,
      handler: postStart,
      podIP: a.podIPs[0] ?? a.podIP,
      signal: a.signal,
    });
    if (!outcome.ok) {
      ctx.logger.warn('Failed to execute PostStartHook', {
        pod: formatPod(pod),
        container: name,
        containerID: containerId,
        err: outcome.error.message,
      });
      // The hook's message may hold secrets: the event does not carry it.
      recordContainerEvent(
        ctx,
        pod,
        name,
        containerId,
        'Warning',
        'FailedPostStartHook',
        'PostStartHook failed',
      );
      try {
        await killContainer(ctx, pod, containerId, name, 'FailedPostStartHook', 'FailedPostStartHook', {
          podIP: a.podIPs[0] ?? a.podIP,
        });
      } catch (err) {
        ctx.logger.warn('Failed to kill container', {
          pod: formatPod(pod),
          container: name,
          err: errorMessage(err),
        });
      }
      return { ok: false, error: 'PostStartHookError', message: outcome.message };
    }
  }
  return { ok: true, containerId };
}

// -------------------------------------------------------------------------------------------- killing

/**
 * The grace period for killing a container of `pod` (kubelet: setTerminationGracePeriod): the deletion grace
 * period, else the probe's own period when a probe failure is the reason, else the pod's, else the minimum.
 */
export function terminationGracePeriod(
  pod: Pod,
  spec: Pick<Container, 'livenessProbe' | 'startupProbe'>,
  reason: ContainerKillReason,
): number {
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) return pod.metadata.deletionGracePeriodSeconds;
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    const probe =
      reason === 'StartupProbe'
        ? spec.startupProbe
        : reason === 'LivenessProbe'
          ? spec.livenessProbe
          : undefined;
    if (probe?.terminationGracePeriodSeconds !== undefined) return probe.terminationGracePeriodSeconds;
    return pod.spec.terminationGracePeriodSeconds;
  }
  return MinimumGracePeriodSeconds;
}

function parseIntOr(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number.parseInt(v, 10);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * What a kill needs when the pod object is gone (kubelet: restoreSpecsFromContainerLabels): identity and grace
 * periods from labels and annotations, the preStop handler from its annotation. Only those fields are set.
 */
export async function restoreSpecsFromContainerLabels(
  ctx: ManagerContext,
  containerId: string,
): Promise<{ pod: Pod; container: Container }> {
  const s = await ctx.runtime.containerStatus(containerId);
  const l = s.labels;
  const an = s.annotations;
  const container: Container = { name: l[ContainerNameLabel] ?? s.metadata.name };
  const ports = an[ContainerPortsAnnotation];
  if (ports) {
    try {
      container.ports = JSON.parse(ports) as Container['ports'];
    } catch {
      // Ports only resolve named httpGet ports of a restored preStop hook.
    }
  }
  const tmp = an[ContainerTerminationMessagePathAnnotation];
  if (tmp !== undefined) container.terminationMessagePath = tmp;
  const preStop = an[PreStopHandlerAnnotation];
  if (preStop) {
    try {
      container.lifecycle = { preStop: JSON.parse(preStop) as LifecycleHandler };
    } catch {
      ctx.logger.warn('unreadable preStop annotation', { containerID: containerId });
    }
  }
  const pod: Pod = {
    metadata: {
      uid: l[PodUIDLabel] ?? '',
      name: l[PodNameLabel] ?? '',
      namespace: l[PodNamespaceLabel] ?? '',
    },
    spec: { containers: [container] },
  };
  const deletionGrace = parseIntOr(an[PodDeletionGracePeriodAnnotation]);
  if (deletionGrace !== undefined) pod.metadata.deletionGracePeriodSeconds = deletionGrace;
  const terminationGrace = parseIntOr(an[PodTerminationGracePeriodAnnotation]);
  if (terminationGrace !== undefined) pod.spec.terminationGracePeriodSeconds = terminationGrace;
  return { pod, container };
}

/**
 * Runs the preStop hook for at most `graceSeconds` and returns the whole seconds it took (kubelet:
 * executePreStopHook). A hook still running when the grace period ends is abandoned, as the kubelet does.
 */
async function executePreStopHook(
  ctx: ManagerContext,
  pod: Pod,
  containerId: string,
  spec: Container,
  graceSeconds: number,
  podIP: string,
): Promise<number> {
  const start = ctx.clock.now();
  const done = new AbortController();
  let timedOut = false;
  const hook = runLifecycleHandler(hookDeps(ctx), {
    containerId,
    pod,
    container: spec,
    handler: spec.lifecycle!.preStop!,
    podIP,
    signal: done.signal,
  }).then((outcome) => {
    if (outcome.ok || timedOut) return;
    ctx.logger.warn('PreStop hook failed', {
      pod: formatPod(pod),
      container: spec.name,
      containerID: containerId,
      err: outcome.error.message,
    });
    recordContainerEvent(
      ctx,
      pod,
      spec.name,
      containerId,
      'Warning',
      'FailedPreStopHook',
      'PreStopHook failed',
    );
  });
  const deadline = ctx.clock.sleep(graceSeconds * 1000, done.signal).then(
    () => {
      timedOut = true;
      ctx.logger.info('PreStop hook not completed in grace period', {
        pod: formatPod(pod),
        container: spec.name,
        gracePeriod: graceSeconds,
      });
    },
    () => undefined,
  );
  await Promise.race([hook, deadline]);
  // Ends the grace timer, or a sleep hook that outlived the grace period.
  done.abort();
  return Math.floor((ctx.clock.now() - start) / 1000);
}

/**
 * Shutdown order of a pod with sidecars (kubelet: terminationOrdering): regular containers stop first; each
 * running sidecar waits for every regular container and for the sidecars after it, within its grace period.
 */
export class TerminationOrdering {
  private readonly terminated = new Map<string, { done: Promise<void>; resolve: () => void }>();
  private readonly prereqs = new Map<string, Promise<void>[]>();

  constructor(
    pod: Pod,
    runningNames: readonly string[],
    private readonly clock: ManagerContext['clock'],
  ) {
    const running = new Set(runningNames);
    const channel = (name: string): Promise<void> => {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      this.terminated.set(name, { done, resolve });
      // Nothing waits on a container that is not running.
      if (!running.has(name)) resolve();
      return done;
    };
    const main = pod.spec.containers.map((c) => channel(c.name));
    let later: string | undefined;
    for (const ic of [...(pod.spec.initContainers ?? [])].reverse()) {
      channel(ic.name);
      if (!isRestartableInitContainer(ic)) continue;
      const deps = [...main];
      if (later !== undefined) deps.push(this.terminated.get(later)!.done);
      this.prereqs.set(ic.name, deps);
      later = ic.name;
    }
  }

  /** Waits until `name` may stop, at most `graceSeconds`; returns the seconds waited. */
  async waitForTurn(name: string, graceSeconds: number): Promise<number> {
    if (graceSeconds <= 0) return 0;
    const deps = this.prereqs.get(name) ?? [];
    if (deps.length === 0) return 0;
    const start = this.clock.now();
    const stop = new AbortController();
    await Promise.race([
      Promise.all(deps),
      this.clock.sleep(graceSeconds * 1000, stop.signal).catch(() => undefined),
    ]);
    stop.abort();
    return (this.clock.now() - start) / 1000;
  }

  containerTerminated(name: string): void {
    this.terminated.get(name)?.resolve();
  }
}

export interface KillOptions {
  /** Replaces the grace period the pod and reason imply (kubelet: gracePeriodOverride). */
  gracePeriodOverride?: number;
  ordering?: TerminationOrdering;
  /** The pod IP for an httpGet preStop hook without a host. */
  podIP?: string;
}

/**
 * Kills one container (kubelet: killContainer): the Killing event (`message`, or `Stopping container <name>`),
 * the preStop hook (its duration is taken from the grace period), the sidecar ordering, then StopContainer
 * with at least MinimumGracePeriodSeconds. Without `pod`, the specs are restored from the container's labels.
 * A container that is already gone counts as killed. Rejects when the runtime refuses the stop.
 */
export async function killContainer(
  ctx: ManagerContext,
  pod: Pod | undefined,
  containerId: string,
  containerName: string,
  message: string,
  reason: ContainerKillReason,
  opts: KillOptions = {},
): Promise<void> {
  let p: Pod;
  let spec: Container;
  if (pod) {
    const found = containerSpec(pod, containerName);
    if (!found) {
      const id = `${await ctx.runtimeType()}://${containerId}`;
      throw new KindError(
        'NotFound',
        `failed to get containerSpec ${JSON.stringify(containerName)} (id=${JSON.stringify(id)}) in pod ${JSON.stringify(formatPod(pod))} when killing container for reason ${JSON.stringify(message)}`,
        { container: containerName, containerID: containerId },
      );
    }
    p = pod;
    spec = found;
  } else {
    try {
      ({ pod: p, container: spec } = await restoreSpecsFromContainerLabels(ctx, containerId));
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  let grace = terminationGracePeriod(p, spec, reason);
  recordContainerEvent(
    ctx,
    p,
    containerName,
    containerId,
    'Normal',
    'Killing',
    message || `Stopping container ${spec.name}`,
  );
  if (opts.gracePeriodOverride !== undefined) grace = opts.gracePeriodOverride;
  if (spec.lifecycle?.preStop && grace > 0) {
    grace -= await executePreStopHook(ctx, p, containerId, spec, grace, opts.podIP ?? '');
  }
  if (opts.ordering && grace > 0) grace -= Math.trunc(await opts.ordering.waitForTurn(containerName, grace));
  // Always a minimal shutdown window, to avoid needless SIGKILLs.
  if (grace < MinimumGracePeriodSeconds) grace = MinimumGracePeriodSeconds;
  try {
    await ctx.runtime.stopContainer(containerId, grace);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  opts.ordering?.containerTerminated(containerName);
}

// ------------------------------------------------------------------------------------------- removing

/**
 * Removes a container and its log files (kubelet: removeContainer; logs first, so a container whose logs could
 * not be removed is retried). A container that is already gone counts as removed.
 */
export async function removeContainer(ctx: ManagerContext, containerId: string): Promise<void> {
  if (ctx.manageLogDirectories) {
    let logPath = '';
    try {
      logPath = (await ctx.runtime.containerStatus(containerId)).logPath;
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    if (logPath) {
      await rm(logPath, { force: true });
      // Rotated files: <path>.<suffix>.
      const dir = dirname(logPath);
      const prefix = `${basename(logPath)}.`;
      let names: string[] = [];
      try {
        names = await readdir(dir);
      } catch {
        // No directory: nothing rotated.
      }
      await Promise.all(
        names.filter((n) => n.startsWith(prefix)).map((n) => rm(join(dir, n), { force: true })),
      );
    }
  }
  await ctx.runtime.removeContainer(containerId);
}

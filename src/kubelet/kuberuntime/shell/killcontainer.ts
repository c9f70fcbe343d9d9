/**
 * Killing and removing one container (kubelet: kuberuntime_container.go killContainer, executePreStopHook,
 * restoreSpecsFromContainerLabels, setTerminationGracePeriod, removeContainer).
 */
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Container, LifecycleHandler, Pod } from '../../../api/core.js';
import {
  ContainerNameLabel,
  ContainerPortsAnnotation,
  ContainerTerminationMessagePathAnnotation,
  PodDeletionGracePeriodAnnotation,
  PodNameLabel,
  PodNamespaceLabel,
  PodTerminationGracePeriodAnnotation,
  PodUIDLabel,
  PreStopHandlerAnnotation,
} from '../../../runtime/labels.js';
import { isNotFound, KindError } from '../../../util/errors.js';
import { formatPod } from '../../backoff.js';
import { containerSpec } from '../../container/ref.js';
import { hookDeps, recordContainerEvent, type ManagerContext } from './context.js';
import { runLifecycleHandler } from './hooks.js';
import type { ContainerKillReason } from '../podactions.js';
import type { TerminationOrdering } from '../terminationorder.js';

/** The kubelet never gives a container less than this to shut down (minimumGracePeriodInSeconds). */
export const MinimumGracePeriodSeconds = 2;

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
 * not be removed is retried). A container that is already gone counts as removed. `keepLogs`: the logs stay
 * until the pod goes (a container removed to restart the pod in place).
 */
export async function removeContainer(
  ctx: ManagerContext,
  containerId: string,
  opts: { keepLogs?: boolean } = {},
): Promise<void> {
  if (ctx.manageLogDirectories && !opts.keepLogs) {
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

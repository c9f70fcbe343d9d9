/**
 * The probe worker's decision, one call at a time (kubelet: pkg/kubelet/prober/worker.go, doProbe), as pure
 * functions over an explicit state. The worker loop (worker.ts) feeds them the latest pod status, runs the
 * probe when told to, and applies the cache writes they return.
 *
 * One doProbe call is `decideProbe`, then, only when it answers `runProbe`, the probe execution and
 * `recordProbeOutcome`. Splitting at the probe keeps both halves pure while the execution (exec, HTTP, TCP,
 * gRPC) stays I/O in the shell.
 */
import {
  type Container,
  type ContainerStatus,
  type Pod,
  type PodStatus,
  type Probe,
  isTerminalPhase,
} from '../../api/core.js';
import { KindError } from '../../util/errors.js';
import { containerShouldRestart } from '../../api/restartrules.js';
import { shouldAllContainersRestart } from '../container/helpers.js';
import type { ProbeResult, ProbeType } from './types.js';

/**
 * What a probe execution reports (kubelet: probe.Result). `warning` counts as success, as in the kubelet's
 * prober (it only adds an event). An execution error is a rejected promise, not an outcome: the result is
 * thrown away.
 */
export type ProbeOutcome = 'success' | 'failure' | 'warning';

/** A probe spec with the API server's defaults applied (kubelet: SetDefaults_Probe). */
export interface ProbeTiming {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/**
 * Applies the API defaults to unset or zero fields (period 10 s, timeout 1 s, success 1, failure 3) as the
 * API server does before the kubelet ever sees a pod. Rejects non-numeric values and a period that is not
 * positive. A negative initial delay is accepted (it means "no delay"); so are thresholds below 1, which
 * make every outcome publish at once.
 */
export function probeTiming(probe: Probe): ProbeTiming {
  const timing: ProbeTiming = {
    initialDelaySeconds: timingField(probe, 'initialDelaySeconds', 0),
    periodSeconds: timingField(probe, 'periodSeconds', 10),
    timeoutSeconds: timingField(probe, 'timeoutSeconds', 1),
    successThreshold: timingField(probe, 'successThreshold', 1),
    failureThreshold: timingField(probe, 'failureThreshold', 3),
  };
  if (timing.periodSeconds <= 0) {
    throw new KindError('InvalidArgument', `probe periodSeconds must be positive: ${timing.periodSeconds}`);
  }
  return timing;
}

/** One field of probeTiming: the value, or `dflt` when unset or zero. A function, not a closure per call. */
export function timingField(probe: Probe, name: keyof ProbeTiming, dflt: number): number {
  const v: unknown = probe[name];
  if (v === undefined || v === null || v === 0) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new KindError('InvalidArgument', `probe ${name} is not a number: ${String(v)}`);
  }
  return v;
}

/** The cached value a worker publishes for a container it has not probed yet. */
export function initialProbeResult(probeType: ProbeType): ProbeResult {
  switch (probeType) {
    case 'readiness':
      return 'failure';
    case 'liveness':
      return 'success';
    case 'startup':
      return 'unknown';
    default: {
      const never: never = probeType;
      throw new KindError('InvalidArgument', `unknown probe type: ${String(never)}`);
    }
  }
}

/** What one worker probes: a probe type of one named container, with its timing. */
export interface ProbeTarget {
  probeType: ProbeType;
  containerName: string;
  timing: ProbeTiming;
}

/**
 * The worker's memory between doProbe calls.
 *
 * Invariants:
 * - `awaitingContainer`: no container ID has been seen yet, so no probe has run and nothing was cached by
 *   this worker. Left as soon as the pod status shows the container with an ID; never re-entered.
 * - `probing`: `containerID` is the last ID seen (API form). `lastResult`/`resultRun` count how many probes
 *   in a row gave the same result; `resultRun >= 0`. They survive a container change, as in the kubelet.
 * - `onHold`: a published liveness failure or a published startup result; no probe runs until a different
 *   container ID appears (which moves back to `probing`). `resultRun` is 0 while on hold.
 */
export type ProbeWorkerState =
  | { readonly phase: 'awaitingContainer' }
  | {
      readonly phase: 'probing';
      readonly containerID: string;
      readonly lastResult: ProbeResult | undefined;
      readonly resultRun: number;
    }
  | { readonly phase: 'onHold'; readonly containerID: string; readonly lastResult: ProbeResult | undefined };

export const initialWorkerState: ProbeWorkerState = { phase: 'awaitingContainer' };

/** The container ID the worker currently tracks, if any. */
export function currentContainerID(state: ProbeWorkerState): string | undefined {
  return state.phase === 'awaitingContainer' ? undefined : state.containerID;
}

/** Consecutive identical outcomes counted so far (0 when none, or on hold). */
export function resultRunOf(state: ProbeWorkerState): number {
  return state.phase === 'probing' ? state.resultRun : 0;
}

/** A change to the results cache of the worker's probe type. */
export type ResultWrite =
  | { readonly op: 'set'; readonly containerID: string; readonly result: ProbeResult }
  | { readonly op: 'remove'; readonly containerID: string };

/** The inputs of one doProbe call. `status` is the status manager's cached status (undefined = none). */
export interface DoProbeInputs {
  pod: Pod;
  status: PodStatus | undefined;
  /** Epoch milliseconds. */
  now: number;
  /**
   * Epoch ms at which this kubelet started, when it keeps container statuses across its own restarts
   * (kubelet 1.35+ default, KEP-4781). A readiness or startup worker then caches no initial value for a
   * container already running before that time: until a probe publishes, the prober manager keeps the
   * container's previous `ready`/`started`. Undefined = the initial value is always cached (1.33).
   */
  adoptedBefore?: number;
}

/**
 * The first half of doProbe. `finish` ends the call (`keepGoing: false` stops the worker); `runProbe` asks
 * the caller to execute the probe against `containerStatus` and then call `recordProbeOutcome`. In both
 * cases `writes` must be applied to the results cache, in order, before anything else.
 */
export type ProbeDecision =
  | {
      readonly action: 'finish';
      readonly state: ProbeWorkerState;
      readonly keepGoing: boolean;
      readonly writes: readonly ResultWrite[];
    }
  | {
      readonly action: 'runProbe';
      readonly state: ProbeWorkerState;
      readonly writes: readonly ResultWrite[];
      readonly containerStatus: ContainerStatus;
      readonly containerID: string;
    };

/** Finds the container by name among regular statuses, then init statuses; only entries with an ID count. */
function findProbedContainer(status: PodStatus, name: string): ContainerStatus | undefined {
  return withID(status.containerStatuses, name) ?? withID(status.initContainerStatuses, name);
}

/** The first status of the named container that has a container ID (a loop: this runs at every probe). */
function withID(list: ContainerStatus[] | undefined, name: string): ContainerStatus | undefined {
  if (!list) return undefined;
  for (const c of list) {
    if (c?.name === name && typeof c.containerID === 'string' && c.containerID !== '') return c;
  }
  return undefined;
}

/** No cache writes: one shared list, since most probes write nothing. */
const NO_WRITES: readonly ResultWrite[] = Object.freeze([]);

/** `writes` with `w` added: a new list when it was the shared empty one (which is never modified). */
function withWrite(writes: readonly ResultWrite[], w: ResultWrite): readonly ResultWrite[] {
  if (writes === NO_WRITES) return [w];
  (writes as ResultWrite[]).push(w);
  return writes;
}

function finish(s: ProbeWorkerState, keepGoing: boolean, writes = NO_WRITES): ProbeDecision {
  return { action: 'finish', state: s, keepGoing, writes };
}

/** Whole seconds since `startedAt`, truncated toward zero. A missing or unparsable time counts as 0. */
function secondsRunning(startedAt: string | undefined, now: number): number {
  const t = typeof startedAt === 'string' ? Date.parse(startedAt) : NaN;
  return Number.isNaN(t) ? 0 : Math.trunc((now - t) / 1000);
}

/** True when the container is running and its start time is before `epochMs`. */
export function startedBefore(c: ContainerStatus, epochMs: number): boolean {
  const t = Date.parse(c.state?.running?.startedAt ?? '');
  return !Number.isNaN(t) && t < epochMs;
}

/** The spec of the probed container (regular or init); none when the spec does not name it. */
function probedSpec(pod: Pod, name: string): Pick<Container, 'restartPolicy' | 'restartPolicyRules'> {
  const spec = pod.spec;
  const all = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])];
  return all.find((x) => x?.name === name) ?? {};
}

/** The steps of doProbe up to the probe execution (SEMANTICS §6.3, steps 1-9). */
export function decideProbe(
  target: ProbeTarget,
  state: ProbeWorkerState,
  inputs: DoProbeInputs,
): ProbeDecision {
  const { status, pod, now } = inputs;
  // 1-2. No status yet: wait. A terminal pod never needs probing again.
  if (!status) return finish(state, true);
  if (isTerminalPhase(status.phase)) return finish(state, false);

  // 3. The container must be known with an ID.
  const c = findProbedContainer(status, target.containerName);
  if (!c || !c.containerID) return finish(state, true);
  const id = c.containerID;

  // 4. A new container restarts the bookkeeping of the cache and lifts a hold.
  let writes = NO_WRITES;
  let s = state;
  if (currentContainerID(s) !== id) {
    const old = currentContainerID(s);
    if (old !== undefined) writes = withWrite(writes, { op: 'remove', containerID: old });
    const adopted =
      target.probeType !== 'liveness' &&
      inputs.adoptedBefore !== undefined &&
      startedBefore(c, inputs.adoptedBefore);
    if (!adopted) {
      writes = withWrite(writes, {
        op: 'set',
        containerID: id,
        result: initialProbeResult(target.probeType),
      });
    }
    s =
      s.phase === 'awaitingContainer'
        ? { phase: 'probing', containerID: id, lastResult: undefined, resultRun: 0 }
        : { phase: 'probing', containerID: id, lastResult: s.lastResult, resultRun: resultRunOf(s) };
  }

  // 5. On hold until the next container.
  if (s.phase === 'onHold') return finish(s, true, writes);

  // 6. A container that is not running fails; it stops the worker only if it will never come back: by its
  // own restart policy and rules, else the pod's (ContainerRestartRules), unless the pod restarts all its
  // containers in place (RestartAllContainersOnContainerExits: the status says so).
  const running = c.state?.running;
  if (!running) {
    writes = withWrite(writes, { op: 'set', containerID: id, result: 'failure' });
    const terminated = c.state?.terminated;
    const willRestart =
      !terminated ||
      containerShouldRestart(
        probedSpec(pod, target.containerName),
        pod.spec ?? {},
        terminated.exitCode ?? 0,
      ) ||
      (pod.spec !== undefined && shouldAllContainersRestart(pod, undefined, status));
    return finish(s, willRestart, writes);
  }

  // 7. Deletion: liveness and startup go quiet so that shutdown does not restart the container.
  if (pod.metadata?.deletionTimestamp && target.probeType !== 'readiness') {
    writes = withWrite(writes, { op: 'set', containerID: id, result: 'success' });
    return finish(s, false, writes);
  }

  // 8. Initial delay: keep the initial value.
  if (secondsRunning(running.startedAt, now) < target.timing.initialDelaySeconds)
    return finish(s, true, writes);

  // 9. Startup gating: startup probes only before `started`, the others only after.
  const started = c.started === true;
  if (started === (target.probeType === 'startup')) return finish(s, true, writes);

  return { action: 'runProbe', state: s, writes, containerStatus: c, containerID: id };
}

/**
 * The steps of doProbe after the probe execution (SEMANTICS §6.3, steps 10-14). `outcome` is what the
 * execution reported, or 'error' when it failed (the result is then thrown away). Only meaningful in the
 * `probing` state that `decideProbe` returned with `runProbe`; in any other state nothing changes.
 */
export function recordProbeOutcome(
  target: ProbeTarget,
  state: ProbeWorkerState,
  outcome: ProbeOutcome | 'error',
): { state: ProbeWorkerState; writes: readonly ResultWrite[] } {
  if (state.phase !== 'probing' || outcome === 'error') return { state, writes: NO_WRITES };
  let result: ProbeResult;
  switch (outcome) {
    case 'success':
    case 'warning':
      result = 'success';
      break;
    case 'failure':
      result = 'failure';
      break;
    default: {
      const never: never = outcome;
      // An outcome outside the contract is treated like an execution error: thrown away.
      void never;
      return { state, writes: NO_WRITES };
    }
  }
  const resultRun = state.lastResult === result ? state.resultRun + 1 : 1;
  const counted: ProbeWorkerState = { ...state, lastResult: result, resultRun };
  const { successThreshold, failureThreshold } = target.timing;
  if (
    (result === 'failure' && resultRun < failureThreshold) ||
    (result === 'success' && resultRun < successThreshold)
  ) {
    return { state: counted, writes: NO_WRITES };
  }
  const writes: readonly ResultWrite[] = [{ op: 'set', containerID: state.containerID, result }];
  const hold = (target.probeType === 'liveness' && result === 'failure') || target.probeType === 'startup';
  if (hold) {
    return { state: { phase: 'onHold', containerID: state.containerID, lastResult: result }, writes };
  }
  return { state: counted, writes };
}

/**
 * One probe worker: probes one container for one probe type (kubelet: pkg/kubelet/prober/worker.go, run /
 * stop / doProbe). The decisions live in doprobe.ts; this file owns the timing (jitter, ticker, manual
 * trigger, stop), the probe execution and the results cache writes.
 *
 * The loop is a set of flags driven by callbacks (timer, trigger, stop, the end of a probe), not a
 * suspended async function, so an idle worker holds only its fields and one timer entry. Time comes only
 * from the injected Clock, through its shared TimerQueue (timerqueue.ts): under a FakeClock the worker
 * runs exactly as in real time.
 */
import type { Container, ContainerStatus, Pod, PodStatus, Probe } from '../../api/core.js';
import type { PodUID } from '../container/types.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { KindError } from '../../util/errors.js';
import {
  currentContainerID,
  decideProbe,
  initialWorkerState,
  probeTiming,
  recordProbeOutcome,
  resultRunOf,
  type ProbeOutcome,
  type ProbeTarget,
  type ProbeWorkerState,
  type ResultWrite,
} from './doprobe.js';
import type { ResultsManager } from './results.js';
import { timerQueueFor } from '../../util/timerqueue.js';
import type { ProbeType } from './types.js';

/**
 * Executes one probe (exec via the runtime, httpGet, tcpSocket or gRPC; implemented in the shell).
 * `pod.status` is the status manager's latest status (the runner finds the pod IP there);
 * `containerID` is the API form `<type>://<id>`. Resolves with the outcome; rejects on an execution error,
 * whose result the worker throws away. Retries within one execution are the runner's business.
 */
export type ProbeRunner = (
  probe: Probe,
  pod: Pod,
  containerStatus: ContainerStatus,
  containerID: string,
  probeType: ProbeType,
) => Promise<ProbeOutcome>;

/**
 * What a worker needs from its surroundings. Nothing in it is specific to one worker, so one object can
 * serve every worker of a probe type (the prober manager shares one per type).
 */
export interface ProbeWorkerDeps {
  clock: Clock;
  /** Uniform random number in [0, 1); used only for the start jitter. */
  random: () => number;
  /** The status manager's cached status for a pod (undefined = none yet, or already gone). */
  getPodStatus: (uid: PodUID) => PodStatus | undefined;
  /** The results cache of this worker's probe type. */
  results: ResultsManager;
  runner: ProbeRunner;
  /** Epoch ms at which the prober (the kubelet) started; workers started within one period jitter first. */
  proberStartedAt: number;
  /** Keep the state of containers running since before this epoch ms (see DoProbeInputs.adoptedBefore). */
  adoptedBefore?: number;
  /** Called once when the worker has exited and cleaned up (the manager forgets the worker here). */
  onExit?: (worker: ProbeWorker) => void;
}

function probeOf(container: Container, probeType: ProbeType): Probe | undefined {
  switch (probeType) {
    case 'liveness':
      return container.livenessProbe;
    case 'readiness':
      return container.readinessProbe;
    case 'startup':
      return container.startupProbe;
    default: {
      const never: never = probeType;
      throw new KindError('InvalidArgument', `unknown probe type: ${String(never)}`);
    }
  }
}

// The worker's flags (one small integer instead of a field each).
/** `start` was called. */
const STARTED = 1;
/** The worker has exited and cleaned up: final. */
const EXITED = 2;
/** `stop` was called: the loop exits at its next look at the flags and never probes again. */
const STOP = 4;
/** The start jitter timer is pending. */
const JITTER = 8;
/** The loop has begun (the ticker runs). */
const LOOPING = 16;
/** Between two probes with nothing pending: the next event is received as soon as it arrives. */
const WAITING = 32;
/** A tick arrived while the loop was busy (a channel of capacity one: a tick arriving now is dropped). */
const TICK = 64;
/** A manual trigger arrived while the loop was busy (never queued twice). */
const TRIGGER = 128;
/** A probe is in flight. */
const PROBING = 256;
/** A look at the flags (`pump`) is queued as a microtask. */
const QUEUED = 512;

/**
 * The worker's lifecycle: idle (constructed, `start` not called) -> running -> exited. `doProbe` may also
 * be called directly (tests, conformance) without starting the worker.
 *
 * The loop, as events: it probes, then takes one pending event (stop, else a trigger, which absorbs a
 * pending tick and restarts the ticker, else a tick) and probes again, or waits (WAITING). A waiting loop
 * takes an event the moment it arrives, so a second tick or trigger can be pending behind it, as with a
 * goroutine blocked on channels of capacity one; what the taken event causes (the probe, or the exit)
 * happens in a later microtask, never inside the caller of `stop` or `manualTrigger` (a trigger comes from
 * status generation, which must not see the probe's cache writes re-enter it).
 *
 * Invariants: at most one probe started by the worker is in flight (PROBING), and nothing starts another
 * before it ends; at most one timer is pending (the jitter, then the ticker) and none after exit; on exit
 * the worker has removed its cached result for its current container ID, resolved `done` and called
 * `onExit` exactly once; an exited worker never probes again.
 */
export class ProbeWorker {
  readonly container: Container;

  private currentPod: Pod;
  private readonly periodMs: number;
  private readonly deps: ProbeWorkerDeps;
  private workerState: ProbeWorkerState = initialWorkerState;
  private flags = 0;
  /** The jitter timer while JITTER, then the ticker's next tick; undefined once exited. */
  private timer: TimerHandle | undefined = undefined;
  /** Created only when someone asks for `done`. */
  private exitWaiter: { promise: Promise<void>; resolve: () => void } | undefined = undefined;

  /** Rejects a container without the probe of `probeType`, or a probe with unusable timing. */
  constructor(pod: Pod, container: Container, probeType: ProbeType, deps: ProbeWorkerDeps) {
    const uid = pod?.metadata?.uid;
    if (!uid) throw new KindError('InvalidArgument', 'probe worker for a pod without a UID');
    if (!container?.name)
      throw new KindError('InvalidArgument', 'probe worker for a container without a name');
    const probe = probeOf(container, probeType);
    if (!probe) {
      throw new KindError('InvalidArgument', `container has no ${probeType} probe`, {
        pod: pod.metadata.name,
        container: container.name,
      });
    }
    for (const k of ['clock', 'random', 'getPodStatus', 'results', 'runner'] as const) {
      if (!deps?.[k]) throw new KindError('InvalidArgument', `probe worker needs ${k}`);
    }
    if (deps.results.probeType !== probeType) {
      throw new KindError(
        'InvalidArgument',
        `${probeType} worker given the ${deps.results.probeType} results`,
      );
    }
    this.currentPod = pod;
    this.container = container;
    this.periodMs = probeTiming(probe).periodSeconds * 1000;
    this.deps = deps;
  }

  /** The pod object the worker currently reads (the latest one given to `setPod`). */
  get pod(): Pod {
    return this.currentPod;
  }
  get podUID(): PodUID {
    return this.currentPod.metadata.uid as PodUID; // setPod accepts only the same UID
  }
  get probeType(): ProbeType {
    return this.deps.results.probeType; // the constructor checked it is the worker's
  }
  /** The probe spec this worker runs (immutable, read from the container). */
  get probe(): Probe {
    return probeOf(this.container, this.probeType)!;
  }
  /**
   * Resolves when the worker has exited and cleaned up (pending until then, also before `start`). Created
   * on first use: a worker nobody waits for keeps no promise.
   */
  get done(): Promise<void> {
    if (!this.exitWaiter) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      if (this.flags & EXITED) resolve();
      this.exitWaiter = { promise, resolve };
    }
    return this.exitWaiter.promise;
  }
  /** The decision state (see ProbeWorkerState for its invariants). */
  get state(): ProbeWorkerState {
    return this.workerState;
  }
  get containerID(): string | undefined {
    return currentContainerID(this.workerState);
  }
  get onHold(): boolean {
    return this.workerState.phase === 'onHold';
  }
  get resultRun(): number {
    return resultRunOf(this.workerState);
  }
  /** Started and not exited yet (still true between `stop` and the exit it causes). */
  get running(): boolean {
    return (this.flags & (STARTED | EXITED)) === STARTED;
  }

  /**
   * Replaces the pod object the worker reads its deletion timestamp and restart policy from (the kubelet's
   * workers share the pod manager's object). Probe specs are not re-read: they are immutable.
   */
  setPod(pod: Pod): void {
    if (pod?.metadata?.uid === this.podUID) this.currentPod = pod;
  }

  /**
   * Probes once (or decides not to) and records the result. Resolves to whether the worker should keep
   * going. Never rejects: an unexpected error counts as "keep going", as the kubelet recovers from panics.
   */
  async doProbe(): Promise<boolean> {
    try {
      const pod = this.currentPod;
      const probe = this.probe;
      // Built per call: the timing is a pure function of the immutable probe, so the worker keeps none.
      const target: ProbeTarget = {
        probeType: this.probeType,
        containerName: this.container.name,
        timing: probeTiming(probe),
      };
      const status = this.deps.getPodStatus(this.podUID);
      const decision = decideProbe(target, this.workerState, {
        pod,
        status,
        now: this.deps.clock.now(),
        adoptedBefore: this.deps.adoptedBefore,
      });
      this.workerState = decision.state;
      this.apply(decision.writes);
      if (decision.action === 'finish') return decision.keepGoing;
      this.adoptIDString(decision.containerID);

      let outcome: ProbeOutcome | 'error';
      try {
        const podWithStatus: Pod = status ? { ...pod, status } : pod;
        outcome = await this.deps.runner(
          probe,
          podWithStatus,
          decision.containerStatus,
          decision.containerID,
          this.probeType,
        );
      } catch {
        outcome = 'error';
      }
      const recorded = recordProbeOutcome(target, this.workerState, outcome);
      this.workerState = recorded.state;
      this.apply(recorded.writes);
      return true;
    } catch {
      return true;
    }
  }

  /**
   * Starts the worker (once; later calls, and calls after `stop`, do nothing). Within one period of the
   * prober's start it first waits a random fraction of a period; otherwise the first probe starts here.
   */
  start(): void {
    if (this.flags & (STARTED | EXITED)) return;
    this.flags |= STARTED;
    const { clock, proberStartedAt } = this.deps;
    // After a restart every worker starts at once; spread them over one period.
    if (this.periodMs > clock.now() - proberStartedAt) {
      const r = this.deps.random();
      const fraction = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
      this.flags |= JITTER;
      this.timer = timerQueueFor(clock).setTimer(fraction * this.periodMs, ProbeWorker.fire, this);
      return;
    }
    this.pump();
  }

  /**
   * Asks the worker to exit: in a microtask when it is in the jitter or waiting, after the current probe
   * otherwise, at once before `start`. Safe to call many times.
   */
  stop(): void {
    if (this.flags & (STOP | EXITED)) return;
    this.flags |= STOP;
    if (!(this.flags & STARTED)) return this.exit();
    if (this.flags & JITTER) {
      this.timer?.cancel();
      this.timer = undefined;
      this.flags &= ~JITTER;
      return this.queue();
    }
    this.wake();
  }

  /**
   * Asks for a probe now instead of at the next tick; the ticker restarts from that probe. Non-blocking:
   * returns false when a trigger is already pending (it is not queued twice) or the worker is stopped.
   */
  manualTrigger(): boolean {
    if (this.flags & (STOP | EXITED | TRIGGER)) return false;
    this.flags |= TRIGGER;
    this.wake();
    return true;
  }

  /**
   * Points the state at `id`, the status's own string for the ID the state already holds (an equal string,
   * possibly another copy): the worker then shares the status manager's string instead of keeping the
   * copy from the first status that showed the container.
   */
  private adoptIDString(id: string): void {
    const s = this.workerState;
    if (s.phase === 'probing' && s.containerID === id) this.workerState = { ...s, containerID: id };
  }

  private apply(writes: readonly ResultWrite[]): void {
    for (const w of writes) {
      if (w.op === 'set') this.deps.results.set(w.containerID, w.result, this.podUID);
      else this.deps.results.remove(w.containerID);
    }
  }

  /** Lets a waiting loop take the event just flagged; a busy loop finds it when its probe ends. */
  private wake(): void {
    if (this.flags & WAITING && this.take()) {
      this.flags &= ~WAITING;
      this.queue();
    }
  }

  /**
   * Takes the most urgent pending event: stop, else a manual trigger (it absorbs a pending tick and
   * restarts the ticker now), else a tick. False when none is pending.
   */
  private take(): boolean {
    const f = this.flags;
    if (f & STOP) return true;
    if (f & TRIGGER) {
      this.flags &= ~(TRIGGER | TICK);
      this.armTicker();
      return true;
    }
    if (f & TICK) {
      this.flags &= ~TICK;
      return true;
    }
    return false;
  }

  /** Runs `pump` in a microtask (once, however often it is asked for before it runs). */
  private queue(): void {
    if (this.flags & QUEUED) return;
    this.flags |= QUEUED;
    queueMicrotask(() => {
      this.flags &= ~QUEUED;
      this.pump();
    });
  }

  /**
   * The top of the loop, reached at `start` (no jitter), after the jitter, and after an event was taken:
   * exits if stopped; otherwise starts the ticker the first time, and one probe. When the probe ends, the
   * loop exits if the worker is done, or takes the next pending event, or waits.
   */
  private pump(): void {
    const f = this.flags;
    if (!(f & STARTED) || f & (EXITED | JITTER | WAITING | PROBING)) return;
    if (f & STOP) return this.exit();
    if (!(f & LOOPING)) {
      this.flags |= LOOPING;
      this.armTicker();
    }
    this.flags |= PROBING;
    void this.doProbe().then((keepGoing) => {
      this.flags &= ~PROBING;
      if (!keepGoing) this.exit();
      else if (this.take()) this.queue();
      else this.flags |= WAITING;
    });
  }

  private armTicker(): void {
    this.timer?.cancel();
    this.timer = timerQueueFor(this.deps.clock).setTimer(this.periodMs, ProbeWorker.fire, this);
  }

  /** The timer callback shared by all workers (no closure per timer): the jitter's end, or a tick. */
  private static fire(this: void, w: ProbeWorker): void {
    w.timer = undefined;
    if (w.flags & JITTER) {
      w.flags &= ~JITTER;
      return w.queue();
    }
    w.flags |= TICK; // already set: this tick is dropped
    w.armTicker();
    w.wake();
  }

  private exit(): void {
    if (this.flags & EXITED) return;
    this.flags = (this.flags | EXITED) & ~(JITTER | WAITING | TICK | TRIGGER);
    this.timer?.cancel();
    this.timer = undefined;
    const id = currentContainerID(this.workerState);
    if (id !== undefined) this.deps.results.remove(id);
    this.exitWaiter?.resolve();
    try {
      this.deps.onExit?.(this);
    } catch {
      // The manager's bookkeeping must not keep the worker from finishing.
    }
  }
}

/**
 * One probe worker: the loop that probes one container for one probe type (kubelet:
 * pkg/kubelet/prober/worker.go, run / stop / doProbe). The decisions live in doprobe.ts; this file owns
 * the timing (jitter, ticker, manual trigger, stop), the probe execution and the results cache writes.
 *
 * Time comes only from the injected Clock: the jitter is a `clock.sleep`, the ticker a chain of
 * `clock.setTimer`, so the loop runs under a FakeClock exactly as it would in real time.
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

/** What a worker needs from its surroundings. */
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
  /** Called once when the loop has exited and cleaned up (the manager forgets the worker here). */
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

/** Why the loop woke up between two probes. */
type Wake = 'stop' | 'tick' | 'manual';

/**
 * The loop's lifecycle: `idle` (constructed, `start` not called) -> `running` -> `stopped`. `doProbe` may
 * also be called directly (tests, conformance) without starting the loop.
 *
 * Invariants: at most one probe runs at a time per worker when only the loop calls `doProbe`; after the
 * loop exits, the worker has removed its cached result for its current container ID and called `onExit`
 * once, and `done` is resolved; a stopped worker never probes again.
 */
export class ProbeWorker {
  readonly pod: Pod;
  readonly podUID: PodUID;
  readonly container: Container;
  readonly probeType: ProbeType;
  readonly probe: Probe;
  /** Resolves when the loop has exited and cleaned up (immediately pending until `start`). */
  readonly done: Promise<void>;

  private currentPod: Pod;
  private readonly target: ProbeTarget;
  private readonly periodMs: number;
  private readonly deps: ProbeWorkerDeps;
  private workerState: ProbeWorkerState = initialWorkerState;
  private lifecycle: 'idle' | 'running' | 'stopped' = 'idle';
  private stopRequested = false;
  private triggerPending = false;
  private tickPending = false;
  private ticker: TimerHandle | undefined;
  private wake: (() => void) | undefined;
  private readonly jitterAbort = new AbortController();
  private resolveDone!: () => void;

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
    this.pod = pod;
    this.currentPod = pod;
    this.podUID = uid as PodUID;
    this.container = container;
    this.probeType = probeType;
    this.probe = probe;
    this.target = { probeType, containerName: container.name, timing: probeTiming(probe) };
    this.periodMs = this.target.timing.periodSeconds * 1000;
    this.deps = deps;
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
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
  get running(): boolean {
    return this.lifecycle === 'running';
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
      const status = this.deps.getPodStatus(this.podUID);
      const decision = decideProbe(this.target, this.workerState, {
        pod,
        status,
        now: this.deps.clock.now(),
        adoptedBefore: this.deps.adoptedBefore,
      });
      this.workerState = decision.state;
      this.apply(decision.writes);
      if (decision.action === 'finish') return decision.keepGoing;

      let outcome: ProbeOutcome | 'error';
      try {
        const podWithStatus: Pod = status ? { ...pod, status } : pod;
        outcome = await this.deps.runner(
          this.probe,
          podWithStatus,
          decision.containerStatus,
          decision.containerID,
          this.probeType,
        );
      } catch {
        outcome = 'error';
      }
      const recorded = recordProbeOutcome(this.target, this.workerState, outcome);
      this.workerState = recorded.state;
      this.apply(recorded.writes);
      return true;
    } catch {
      return true;
    }
  }

  /** Starts the loop (once; later calls do nothing). */
  start(): void {
    if (this.lifecycle !== 'idle') return;
    this.lifecycle = 'running';
    void this.run();
  }

  /** Asks the loop to exit after the current probe. Safe to call many times, and before `start`. */
  stop(): void {
    this.stopRequested = true;
    this.jitterAbort.abort();
    if (this.lifecycle === 'idle') this.finish();
    this.wake?.();
  }

  /**
   * Asks for a probe now instead of at the next tick; the ticker restarts from that probe. Non-blocking:
   * returns false when a trigger is already pending (it is not queued twice) or the worker is stopped.
   */
  manualTrigger(): boolean {
    if (this.lifecycle === 'stopped' || this.stopRequested || this.triggerPending) return false;
    this.triggerPending = true;
    this.wake?.();
    return true;
  }

  private apply(writes: readonly ResultWrite[]): void {
    for (const w of writes) {
      if (w.op === 'set') this.deps.results.set(w.containerID, w.result, this.podUID);
      else this.deps.results.remove(w.containerID);
    }
  }

  private async run(): Promise<void> {
    const { clock } = this.deps;
    // After a restart every worker starts at once; spread them over one period.
    if (this.periodMs > clock.now() - this.deps.proberStartedAt) {
      const r = this.deps.random();
      const fraction = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
      try {
        await clock.sleep(fraction * this.periodMs, this.jitterAbort.signal);
      } catch {
        // Stopped during the jitter.
      }
    }
    if (!this.stopRequested) {
      this.armTicker();
      while (!this.stopRequested && (await this.doProbe())) {
        const why = await this.nextWake();
        if (why === 'stop') break;
      }
    }
    this.finish();
  }

  private armTicker(): void {
    this.ticker?.cancel();
    this.ticker = this.deps.clock.setTimer(this.periodMs, () => {
      this.tickPending = true; // like a ticker channel of capacity one: extra ticks are dropped
      this.armTicker();
      this.wake?.();
    });
  }

  private nextWake(): Promise<Wake> {
    const take = (): Wake | undefined => {
      if (this.stopRequested) return 'stop';
      if (this.triggerPending) {
        this.triggerPending = false;
        this.tickPending = false;
        this.armTicker();
        return 'manual';
      }
      if (this.tickPending) {
        this.tickPending = false;
        return 'tick';
      }
      return undefined;
    };
    const now = take();
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      this.wake = () => {
        const why = take();
        if (why) {
          this.wake = undefined;
          resolve(why);
        }
      };
    });
  }

  private finish(): void {
    if (this.lifecycle === 'stopped') return;
    this.lifecycle = 'stopped';
    this.ticker?.cancel();
    this.ticker = undefined;
    this.wake = undefined;
    const id = currentContainerID(this.workerState);
    if (id !== undefined) this.deps.results.remove(id);
    this.resolveDone();
    try {
      this.deps.onExit?.(this);
    } catch {
      // The manager's bookkeeping must not keep the worker from finishing.
    }
  }
}

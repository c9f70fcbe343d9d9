/**
 * The prober manager (kubelet: pkg/kubelet/prober/prober_manager.go): one worker per (pod UID, container
 * name, probe type), started by AddPod and stopped by RemovePod / StopLivenessAndStartup / CleanupPods,
 * and UpdatePodStatus, which turns cached probe results into the `started` and `ready` fields of a
 * freshly generated API status.
 *
 * Workers are keyed and scheduled here; results live in the three ResultsManagers passed in; the status
 * comes from the status manager through `getPodStatus`.
 */
import {
  isRestartableInitContainer,
  type Container,
  type ContainerStatus,
  type Pod,
  type PodStatus,
} from '../../api/core.js';
import type { PodUID } from '../container/types.js';
import type { Clock } from '../../util/clock.js';
import { KindError } from '../../util/errors.js';
import type { ResultsManager } from './results.js';
import type { ProbeType } from './types.js';
import { startedBefore } from './doprobe.js';
import { WorkerIndex } from './workerindex.js';
import { ProbeWorker, type ProbeRunner, type ProbeWorkerDeps } from './worker.js';

/** The probe types in the order AddPod creates workers for one container. */
const ADD_ORDER: readonly ProbeType[] = ['startup', 'readiness', 'liveness'];

/** Dependencies of the prober manager; all required except `random` (defaults to Math.random). */
export interface ProberManagerDeps {
  clock: Clock;
  random?: () => number;
  /** The status manager's cached status of a pod (undefined = none). */
  getPodStatus: (uid: PodUID) => PodStatus | undefined;
  runner: ProbeRunner;
  results: { liveness: ResultsManager; readiness: ResultsManager; startup: ResultsManager };
  /**
   * Keep `ready` and `started` of containers that were already running when this manager was created (a
   * restarted kubelet adopting them) until their probes publish a result, instead of resetting them to the
   * initial values: the kubelet 1.35+ default (KEP-4781; gate ChangeContainerStatusOnKubeletRestart off).
   * Off = the 1.33 behaviour, where a restart briefly makes every probed container unready.
   */
  keepStatusOnRestart?: boolean;
}

function hasProbe(c: Container, t: ProbeType): boolean {
  switch (t) {
    case 'liveness':
      return c.livenessProbe != null;
    case 'readiness':
      return c.readinessProbe != null;
    case 'startup':
      return c.startupProbe != null;
    default: {
      const never: never = t;
      return never;
    }
  }
}

/** The containers the kubelet probes: regular containers, then restartable (sidecar) init containers. */
function probedContainers(pod: Pod): Container[] {
  const regular = pod.spec?.containers ?? [];
  const sidecars = (pod.spec?.initContainers ?? []).filter((c) => c && isRestartableInitContainer(c));
  return [...regular, ...sidecars].filter((c): c is Container => !!c && typeof c.name === 'string');
}

/**
 * Schedules probe workers and answers `started`/`ready` for status generation.
 *
 * Invariants: at most one live worker per key (pod UID, container name, probe type); a worker leaves the
 * index when it exits (and only itself: a newer worker under the same key is kept); regular init
 * containers are never given workers by AddPod. The workers of one probe type share one deps object.
 */
export class ProberManager {
  /** Epoch ms when the manager was created: workers started within one period of it jitter first. */
  readonly startedAt: number;
  private readonly deps: ProberManagerDeps;
  private readonly workers = new WorkerIndex();
  /** What every worker of a probe type is given: built once, not per worker. */
  private readonly workerDeps: Record<ProbeType, ProbeWorkerDeps>;

  constructor(deps: ProberManagerDeps) {
    for (const k of ['clock', 'getPodStatus', 'runner', 'results'] as const) {
      if (!deps?.[k]) throw new KindError('InvalidArgument', `prober manager needs ${k}`);
    }
    for (const t of ['liveness', 'readiness', 'startup'] as const) {
      if (deps.results[t]?.probeType !== t) {
        throw new KindError('InvalidArgument', `prober manager needs a ${t} results manager`);
      }
    }
    this.deps = deps;
    this.startedAt = deps.clock.now();
    const forType = (results: ResultsManager): ProbeWorkerDeps => ({
      clock: deps.clock,
      random: deps.random ?? Math.random,
      getPodStatus: deps.getPodStatus,
      results,
      runner: deps.runner,
      proberStartedAt: this.startedAt,
      ...(deps.keepStatusOnRestart ? { adoptedBefore: this.startedAt } : {}),
      onExit: (w) => this.workers.remove(w),
    });
    this.workerDeps = {
      liveness: forType(deps.results.liveness),
      readiness: forType(deps.results.readiness),
      startup: forType(deps.results.startup),
    };
  }

  /**
   * Starts a worker for every probe set on the pod's regular and restartable init containers. If a worker
   * already exists for a key, returns at once and leaves the rest of the pod unprocessed (as the kubelet
   * does; AddPod is meant to be called once per pod).
   */
  addPod(pod: Pod): void {
    if (!pod?.metadata?.uid) throw new KindError('InvalidArgument', 'AddPod: pod without a UID');
    for (const c of probedContainers(pod)) {
      for (const t of ADD_ORDER) {
        if (!hasProbe(c, t)) continue;
        if (!this.startWorker(pod, c, t)) return;
      }
    }
  }

  /**
   * Creates and starts one worker: the unit AddPod is made of. Returns false (and starts nothing) when the
   * key is taken. It does not re-check which containers should be probed; AddPod decides that.
   */
  startWorker(pod: Pod, container: Container, probeType: ProbeType): boolean {
    const uid = pod?.metadata?.uid;
    if (!uid) throw new KindError('InvalidArgument', 'startWorker: pod without a UID');
    if (this.workers.get(uid, container?.name, probeType)) return false;
    const worker = new ProbeWorker(pod, container, probeType, this.workerDeps[probeType]);
    this.workers.add(worker);
    worker.start();
    return true;
  }

  /** Lets the pod's workers see a newer pod object (deletion timestamp, restart policy). */
  updatePod(pod: Pod): void {
    const uid = pod?.metadata?.uid;
    if (!uid) return;
    for (const w of this.workers.ofPod(uid)) w.setPod(pod);
  }

  /** Stops the liveness and startup workers of the pod's regular containers (used while terminating). */
  stopLivenessAndStartup(pod: Pod): void {
    this.stopWorkers(pod, pod?.spec?.containers ?? [], ['liveness', 'startup']);
  }

  /** Stops every worker of the pod (regular and restartable init containers). */
  removePod(pod: Pod): void {
    this.stopWorkers(pod, probedContainers(pod), ['readiness', 'liveness', 'startup']);
  }

  /** Stops the workers of every pod whose UID is not in `desiredPods`. */
  cleanupPods(desiredPods: ReadonlySet<string>): void {
    for (const uid of [...this.workers.pods()]) {
      if (!desiredPods.has(uid)) for (const w of this.workers.ofPod(uid)) w.stop();
    }
  }

  /** The live worker for a key, if any. */
  getWorker(uid: string, containerName: string, probeType: ProbeType): ProbeWorker | undefined {
    return this.workers.get(uid, containerName, probeType);
  }

  workerCount(): number {
    return this.workers.size;
  }

  /**
   * Sets `started` and `ready` on the status's container statuses from the probe results, in place
   * (SEMANTICS §6.4). Structurally satisfies the status generator's PodStatusProber.
   *
   * - Regular and restartable init containers: `started` is false unless running; then the startup result
   *   if any, else false when a startup worker exists, else true. `ready` is left alone unless started;
   *   then it is true for a readiness success, or when there is no readiness worker. A readiness worker
   *   without a success is triggered to probe at once.
   * - Regular init containers: `started` as above; `ready` becomes true when terminated with exit 0 and is
   *   otherwise left alone. A status whose name is not an init container of the spec is left alone.
   * - With `keepStatusOnRestart`, a container running since before this manager started whose probe has
   *   no result yet keeps the `started`/`ready` that `pod.status` (the API's) shows for the same container
   *   ID, instead of false.
   */
  updatePodStatus(pod: Pod, status: PodStatus): void {
    const uid = pod?.metadata?.uid;
    if (!uid || !status) return;
    const previous = (list: ContainerStatus[] | undefined, c: ContainerStatus) =>
      this.deps.keepStatusOnRestart && c.containerID && startedBefore(c, this.startedAt)
        ? list?.find((p) => p?.name === c.name && p.containerID === c.containerID)
        : undefined;
    for (const c of status.containerStatuses ?? []) {
      if (!c) continue;
      const prev = previous(pod.status?.containerStatuses, c);
      c.started = this.isContainerStarted(uid, c, prev);
      if (c.started) c.ready = this.isContainerReady(uid, c, prev);
    }
    const initSpecs = new Map((pod.spec?.initContainers ?? []).filter((c) => c).map((c) => [c.name, c]));
    for (const c of status.initContainerStatuses ?? []) {
      if (!c) continue;
      const prev = previous(pod.status?.initContainerStatuses, c);
      c.started = this.isContainerStarted(uid, c, prev);
      const spec = initSpecs.get(c.name);
      if (!spec) continue;
      if (!isRestartableInitContainer(spec)) {
        if (c.state?.terminated && c.state.terminated.exitCode === 0) c.ready = true;
        continue;
      }
      if (c.started) c.ready = this.isContainerReady(uid, c, prev);
    }
  }

  /** `prev`: the API status of the same container from before a restart (keepStatusOnRestart only). */
  private isContainerStarted(uid: string, c: ContainerStatus, prev?: ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = this.deps.results.startup.get(c.containerID ?? '');
    if (result !== undefined) return result === 'success';
    if (!this.getWorker(uid, c.name, 'startup')) return true;
    return prev?.started === true;
  }

  private isContainerReady(uid: string, c: ContainerStatus, prev?: ContainerStatus): boolean {
    if (!c.state?.running) return false;
    const result = this.deps.results.readiness.get(c.containerID ?? '');
    if (result === 'success') return true;
    const w = this.getWorker(uid, c.name, 'readiness');
    if (!w) return true;
    w.manualTrigger();
    return result === undefined && prev?.ready === true;
  }

  private stopWorkers(pod: Pod, containers: readonly Container[], types: readonly ProbeType[]): void {
    const uid = pod?.metadata?.uid;
    if (!uid) return;
    for (const c of containers) {
      if (!c) continue;
      for (const t of types) this.getWorker(uid, c.name, t)?.stop();
    }
  }
}

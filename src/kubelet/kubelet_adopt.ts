/**
 * Adoption without restarts (issue #19): a runtime that keeps its containers in the process (the simulated
 * one: RuntimeCapabilities.adopt) is empty when a Kubelet starts in a new process, after an operator restart
 * or when its VirtualNode moved to another replica. Before the Kubelet first lists the runtime, this rebuilds
 * the runtime's records of every pod from the pod's API status, so the pods are adopted as a CRI runtime's
 * would be (by labels): nothing is created or started twice, no restart count moves, no Created, Started or
 * Pulled Event is recorded, and the first status the Kubelet generates equals the one the API has.
 *
 * For each desired pod that is not terminal, whose statuses carry container IDs of this runtime and that the
 * runtime does not know yet: its volumes are mounted (container mounts and the files exec probes read are
 * real), its sandbox is adopted with the config a first start would use and the pod IP and start time of the
 * status, then every container instance the statuses describe, oldest first, with the config its start used
 * (restartCount as attempt) and the ID, times and exit of the status. A pod that cannot be adopted (an IP the
 * runtime cannot take, a status that does not add up, a volume that does not mount) is logged and rolled back:
 * its pod worker then starts it afresh, as without adoption. Nothing here throws.
 */
import type { Container, ContainerStatus, Pod } from '../api/core.js';
import { isTerminalPhase } from '../api/core.js';
import { PodUIDLabel } from '../runtime/labels.js';
import type { AdoptedContainer, ContainerConfig, Runtime, RuntimeAdopter } from '../runtime/types.js';
import type { Clock } from '../util/clock.js';
import { errorMessage, KindError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { parseRFC3339 } from '../util/rfc3339.js';
import type { KubeletDeps } from './shell/kubelet_config.js';
import type { NodePodEnvironment } from './shell/kubelet_volumes.js';
import type { KubeGenericRuntimeManager } from './kuberuntime/shell/manager.js';
import { DEFAULT_TERMINATION_MESSAGE_PATH, TERMINATION_MESSAGE_FILE_MODE } from './podfiles/termination.js';
import type { VolumeFS } from './volume/fs.js';
import type { VolumeManager } from './volumemanager/volumemanager.js';

/** One container instance to adopt: its spec, its restart count (the CRI attempt) and how it was. */
export interface AdoptedInstance {
  container: Container;
  restartCount: number;
  fixed: AdoptedContainer;
}

export interface PodAdoptionDeps {
  adopter: RuntimeAdopter;
  runtime: Pick<Runtime, 'listPodSandbox' | 'podSandboxStatus' | 'removePodSandbox'>;
  manager: Pick<KubeGenericRuntimeManager, 'adoptedSandboxConfig' | 'adoptedContainerConfig' | 'runtimeType'>;
  volumes: Pick<VolumeManager, 'mountPod'>;
  /** The node's files: the termination message of an adopted exited container is written back there. */
  fs: Pick<VolumeFS, 'writeFile'>;
  clock: Pick<Clock, 'now'>;
  log: Logger;
  /** Awaited between pods (KubeletDeps.yieldToLoop). */
  yieldToLoop?: () => Promise<void>;
}

const bad = (message: string, context: Record<string, unknown> = {}): KindError =>
  new KindError('InvalidArgument', message, context);

function timeOf(s: string | undefined, what: string): number | undefined {
  if (s === undefined || s === '') return undefined;
  const ms = parseRFC3339(s);
  if (ms === undefined) throw bad(`${what}: ${JSON.stringify(s)} is not an RFC3339 time`);
  return ms;
}

/**
 * The instances the statuses of one list describe, oldest first. `state.running` or `state.terminated` is the
 * current instance (restartCount), a `lastState.terminated` with a container ID the one before it
 * (restartCount - 1); `state.waiting` has no instance of its own, its `lastState.terminated` is the newest one
 * (restartCount). `idOf` strips the runtime prefix and rejects another runtime's ID.
 */
function instancesOf(
  statuses: readonly ContainerStatus[] | undefined,
  specs: readonly Container[],
  idOf: (id: string | undefined, what: string) => string | undefined,
): AdoptedInstance[] {
  const out: AdoptedInstance[] = [];
  for (const s of statuses ?? []) {
    const container = specs.find((c) => c.name === s.name);
    if (!container) throw bad(`status of container ${JSON.stringify(s.name)} that the spec does not have`);
    const count = s.restartCount ?? 0;
    if (!Number.isInteger(count) || count < 0) throw bad(`${s.name}: bad restartCount ${String(count)}`);
    const what = `container ${s.name}`;
    const terminated = (t: NonNullable<NonNullable<ContainerStatus['state']>['terminated']>, id: string) =>
      ({
        id,
        state: 'exited',
        startedAtMs: timeOf(t.startedAt, `${what} startedAt`) ?? 0,
        finishedAtMs: timeOf(t.finishedAt, `${what} finishedAt`) ?? 0,
        exitCode: t.exitCode ?? 0,
        reason: t.reason ?? '',
        message: t.message ?? '',
      }) satisfies AdoptedContainer;
    let current: AdoptedContainer | undefined;
    const { running, terminated: ended } = s.state ?? {};
    if (running) {
      const id = idOf(s.containerID, what);
      const startedAtMs = timeOf(running.startedAt, `${what} startedAt`);
      if (!id || startedAtMs === undefined) throw bad(`${what} is running without a container ID or start`);
      current = { id, state: 'running', startedAtMs };
    } else if (ended) {
      const id = idOf(ended.containerID ?? s.containerID, what);
      if (!id) throw bad(`${what} terminated without a container ID`);
      current = terminated(ended, id);
    }
    const last = s.lastState?.terminated;
    const lastID = last && idOf(last.containerID, `${what} lastState`);
    if (last && lastID) {
      if (!current) {
        out.push({ container, restartCount: count, fixed: terminated(last, lastID) });
        continue;
      }
      if (count < 1 || lastID === current.id)
        throw bad(`${what}: lastState does not fit restartCount ${count}`);
      out.push({ container, restartCount: count - 1, fixed: terminated(last, lastID) });
    }
    if (current) out.push({ container, restartCount: count, fixed: current });
  }
  return out;
}

/**
 * Every instance the pod's API status describes on a runtime whose container IDs read `<runtimeType>://`,
 * oldest first (init, regular, ephemeral containers; per container the previous instance first); undefined
 * when no ID is of that runtime. Throws InvalidArgument for a status that does not add up (another runtime's
 * IDs beside ours, a time that does not parse, a lastState without a restart before it).
 */
export function adoptionPlan(pod: Pod, runtimeType: string): AdoptedInstance[] | undefined {
  const prefix = `${runtimeType}://`;
  const status = pod.status ?? {};
  const all = [
    ...(status.initContainerStatuses ?? []),
    ...(status.containerStatuses ?? []),
    ...(status.ephemeralContainerStatuses ?? []),
  ];
  const ours = all.some((s) =>
    [s.containerID, s.state?.terminated?.containerID, s.lastState?.terminated?.containerID].some((id) =>
      id?.startsWith(prefix),
    ),
  );
  if (!ours) return undefined;
  const idOf = (id: string | undefined, what: string): string | undefined => {
    if (id === undefined || id === '') return undefined;
    if (!id.startsWith(prefix) || id.length === prefix.length) {
      throw bad(`${what}: container ID ${JSON.stringify(id)} is not of runtime ${runtimeType}`);
    }
    return id.slice(prefix.length);
  };
  return [
    ...instancesOf(status.initContainerStatuses, pod.spec.initContainers ?? [], idOf),
    ...instancesOf(status.containerStatuses, pod.spec.containers, idOf),
    ...instancesOf(status.ephemeralContainerStatuses, pod.spec.ephemeralContainers ?? [], idOf),
  ];
}

export interface AdoptionOutcome {
  /** `<namespace>/<name>` of each pod adopted, and of each that could not be (left to a fresh start). */
  adopted: string[];
  failed: string[];
}

/** See the module comment. Pods run one after the other; a Kubelet calls `adoptPods` once, before it lists. */
export class PodAdoption {
  constructor(private readonly d: PodAdoptionDeps) {}

  async adoptPods(pods: readonly Pod[]): Promise<AdoptionOutcome> {
    const out: AdoptionOutcome = { adopted: [], failed: [] };
    const runtimeType = await this.d.manager.runtimeType();
    for (const pod of pods) {
      const ref = `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
      try {
        if (await this.adoptPod(pod, runtimeType)) out.adopted.push(ref);
      } catch (err) {
        out.failed.push(ref);
        this.d.log.warn('could not adopt pod from its API status; it starts afresh', {
          pod: ref,
          podUID: pod.metadata.uid,
          err: errorMessage(err),
        });
      }
      await this.d.yieldToLoop?.();
    }
    if (out.adopted.length + out.failed.length > 0) {
      this.d.log.info('adopted pods from their API statuses', {
        adopted: out.adopted.length,
        failed: out.failed.length,
      });
    }
    return out;
  }

  /** Whether the pod was adopted; false when there was nothing to adopt. Rejects (rolled back) otherwise. */
  private async adoptPod(pod: Pod, runtimeType: string): Promise<boolean> {
    const uid = pod.metadata.uid;
    if (!uid || isTerminalPhase(pod.status?.phase)) return false;
    const plan = adoptionPlan(pod, runtimeType);
    if (!plan || plan.length === 0) return false;
    // Already there (a runtime that outlived the Kubelet): the PLEG adopts it by labels.
    if ((await this.d.runtime.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } })).length > 0) {
      return false;
    }
    const mounted = await this.d.volumes.mountPod(pod);
    if (!mounted.ok) throw new KindError('Unavailable', `volumes not mounted: ${mounted.message}`);

    const sandboxConfig = await this.d.manager.adoptedSandboxConfig(pod, 0);
    const status = pod.status ?? {};
    const sandboxId = this.d.adopter.adoptSandbox(sandboxConfig, {
      ...(status.podIP ? { ip: status.podIP } : {}),
      createdAtMs: timeOf(status.startTime, 'startTime') ?? this.d.clock.now(),
    });
    try {
      // The IPs a start reads from the sandbox (kuberuntime/shell/podstatus.ts sandboxIPs), as the containers saw them.
      const network = (await this.d.runtime.podSandboxStatus(sandboxId)).network;
      const podIPs = network ? [network.ip, ...network.additionalIps].filter((ip) => ip !== '') : [];
      for (const { container, restartCount, fixed } of plan) {
        const config = await this.d.manager.adoptedContainerConfig(pod, container, {
          sandboxConfig,
          podIPs,
          restartCount,
        });
        const adopted = await this.withTerminationMessage(container, config, fixed);
        this.d.adopter.adoptContainer(sandboxId, config, sandboxConfig, adopted);
      }
    } catch (err) {
      await this.d.runtime.removePodSandbox(sandboxId).catch(() => undefined);
      throw err;
    }
    return true;
  }

  /**
   * The status message of an exited container is its runtime message plus what it left in its termination
   * message file (or, with FallbackToLogsOnError, its log): the Kubelet reads it back from the file when it
   * inspects the container. So the message goes into the fresh file of the adopted container and the runtime's
   * own message stays empty, and the Kubelet reads exactly the status message again. Without a file (an empty
   * terminationMessagePath) the runtime keeps it.
   */
  private async withTerminationMessage(
    container: Container,
    config: ContainerConfig,
    fixed: AdoptedContainer,
  ): Promise<AdoptedContainer> {
    if (fixed.state !== 'exited' || !fixed.message) return fixed;
    const path = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
    const file = config.mounts?.find((m) => m.containerPath === path);
    if (!path || !file) return fixed;
    await this.d.fs.writeFile(file.hostPath, Buffer.from(fixed.message), TERMINATION_MESSAGE_FILE_MODE);
    return { ...fixed, message: '' };
  }
}

/** The PodAdoption of a Kubelet, or undefined when its runtime keeps its own state (no `adopt` capability). */
export function podAdoptionFor(
  deps: Pick<KubeletDeps, 'runtime' | 'clock' | 'yieldToLoop'>,
  podEnv: Pick<NodePodEnvironment, 'env' | 'volumes'>,
  manager: PodAdoptionDeps['manager'],
  log: Logger,
): PodAdoption | undefined {
  const adopter = deps.runtime.capabilities.adopt;
  if (!adopter) return undefined;
  return new PodAdoption({
    adopter,
    runtime: deps.runtime,
    manager,
    volumes: podEnv.volumes,
    fs: podEnv.env.fs,
    clock: deps.clock,
    log: log.child({ component: 'adoption' }),
    ...(deps.yieldToLoop ? { yieldToLoop: deps.yieldToLoop } : {}),
  });
}

/**
 * The API status of a pod from its runtime view (kubelet: kubelet_pods.go generateAPIPodStatus and
 * convertStatusToAPIStatus, v1.33). Pure: everything it needs comes in as arguments.
 */
import {
  DisruptionTarget,
  isTerminalPhase,
  PodScheduled,
  type Container,
  type ContainerStatus,
  type Pod,
  type PodCondition,
  type PodPhase,
  type PodStatus,
} from '../../api/core.js';
import { allContainersCouldRestart } from '../../api/restartrules.js';
import { KindError } from '../../util/errors.js';
import { shouldAllContainersRestart } from '../container/helpers.js';
import { hasAnyActiveRegularContainerStarted } from '../container/started.js';
import type { RuntimePodStatus } from '../container/types.js';
import { getPodQOS } from '../qos.js';
import type { ReasonCacheReader } from '../reasoncache.js';
import { convertToAPIContainerStatuses } from './convert.js';
import {
  generateAllContainersRestartingCondition,
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  isKubeletOwnedCondition,
  withObservedGeneration,
} from './generate.js';
import { getPhase } from './phase.js';
import { applyHostIPs, sortPodIPs } from './podips.js';
import { validatePodSpecForStatus } from './inputvalidation.js';
import { applyContainerResources, podLevelResourcesStatus } from './resources.js';
import type { PodResourceConfig } from '../cm/resourceconfig.js';
import { cloneData } from '../../util/clone.js';

/**
 * Sets the probe-derived fields of a freshly generated status (kubelet: prober.Manager.UpdatePodStatus):
 * `started` and `ready` of every container status. It mutates `status` in place and must not touch
 * anything else. Called once per generation, after the phase is final and before the conditions are
 * computed (they read `ready`/`started`).
 */
export interface PodStatusProber {
  updatePodStatus(pod: Pod, status: PodStatus): void;
}

/** An internal pod-sync handler that may evict the pod (kubelet: PodSyncHandler.ShouldEvict). */
export interface PodEvictionHandler {
  shouldEvict(pod: Pod): { evict: boolean; reason?: string; message?: string };
}

export interface GenerateAPIPodStatusOptions {
  /** The pod worker decided the pod will not run again (terminal phase allowed for all-stopped pods). */
  podIsTerminal: boolean;
  /** The status manager's cached status for this pod, if it has one; it is the base over the API status. */
  cachedStatus?: PodStatus | null;
  /** Start-failure reasons; without it containers show no failure reasons. */
  reasonCache?: ReasonCacheReader;
  /** Sets ready/started. Without it every container stays not ready and not started. */
  prober?: PodStatusProber;
  /** The node's IPs (first two are used) for hostIP(s) and host-network pod IPs. */
  nodeIPs?: readonly string[];
  /**
   * Static pods keep a non-terminal phase when podIsTerminal (upstream TODO #116484). Defaults to
   * isStaticPod(pod).
   */
  staticPod?: boolean;
  /** Eviction handlers; the first that evicts forces Failed with its reason and message. */
  evictionHandlers?: readonly PodEvictionHandler[];
  /** The PodReadyToStartContainersCondition feature gate (on by default since 1.29). */
  podReadyToStartContainersCondition?: boolean;
  /**
   * In-place resize (InPlacePodVerticalScaling, GA): when given, container statuses carry `resources` and
   * `allocatedResources` (the pod's spec is its allocation) and these resize conditions join the kubelet's.
   */
  inPlaceResize?: {
    conditions: readonly PodCondition[];
    /**
     * What the pod cgroup holds, for the pod's own `resources` and `allocatedResources`
     * (InPlacePodLevelResourcesVerticalScaling; podLevelResourcesStatus). Without it a running pod's cgroup
     * reads as giving nothing.
     */
    podCgroup?: Partial<PodResourceConfig>;
  };
  /**
   * The pod's runtime handler mounts read-only recursively (its `recursiveReadOnlyMounts` feature): container
   * statuses' `volumeMounts[].recursiveReadOnly` say Enabled where IfPossible or Enabled got it.
   */
  supportsRecursiveReadOnly?: boolean;
}

/** kubelet types.ConfigSourceAnnotationKey: where a pod came from; anything but "api" is a static pod. */
export const ConfigSourceAnnotationKey = 'kubernetes.io/config.source';

/** Whether the pod is static (kubelet: kubetypes.IsStaticPod): its config source is known and not the API. */
export function isStaticPod(pod: Pick<Pod, 'metadata'>): boolean {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
  return source !== undefined && source !== 'api';
}

function specContainers(list: readonly Container[] | undefined): Container[] {
  return Array.isArray(list) ? [...list] : [];
}

/** Replaces the condition of the same type in place, or appends it (utilpod.ReplaceOrAppendPodCondition). */
function replaceOrAppend(conditions: PodCondition[], c: PodCondition): void {
  const i = conditions.findIndex((x) => x.type === c.type);
  if (i >= 0) conditions[i] = c;
  else conditions.push(c);
}

/**
 * Generates the pod's API status:
 *
 * 1. The base ("old") status is `cachedStatus` when given, else the API pod's status.
 * 2. Init, regular and ephemeral statuses come from convertToAPIContainerStatuses against the old ones,
 *    told whether the pod restarts all its containers in place (shouldAllContainersRestart).
 * 3. Phase = getPhase over regular + init statuses, with podHasInitialized taken from the current
 *    sandbox's records (1.33).
 * 4. A non-terminal phase gives way to the old phase if that is terminal, else to the API phase if that is.
 * 5. Reason and message survive only while the phase equals the old one (old first, API as fallback).
 * 6. An eviction handler may force Failed with its own reason and message.
 * 7. A terminal API phase is never left: it is restored if the new phase differs.
 * 8. The prober sets started/ready.
 * 9. Conditions, in order: API conditions the kubelet does not own; DisruptionTarget from old (replacing
 *    the carried one); PodReadyToStartContainers (gate); Initialized, Ready, ContainersReady over
 *    init + regular statuses (Initialized stays True once old says so); PodScheduled=True; and, for a pod
 *    that may restart all its containers in place, AllContainersRestarting.
 * 10. podIP(s) from the runtime (sorted by family), hostIP(s) from the node, qosClass.
 *
 * Times (lastTransitionTime, startTime) are left to the status manager. Inputs are not mutated. Throws
 * KindError('InvalidArgument') on a malformed pod (see validatePodSpecForStatus).
 */
export function generateAPIPodStatus(
  pod: Pod,
  runtimeStatus: RuntimePodStatus,
  opts: GenerateAPIPodStatusOptions,
): PodStatus {
  if (typeof pod !== 'object' || pod === null || typeof pod.metadata !== 'object' || pod.metadata === null) {
    throw new KindError('InvalidArgument', 'pod has no metadata');
  }
  validatePodSpecForStatus(pod.spec);
  const runtime: RuntimePodStatus = {
    ...runtimeStatus,
    sandboxes: Array.isArray(runtimeStatus?.sandboxes) ? runtimeStatus.sandboxes : [],
    containers: Array.isArray(runtimeStatus?.containers) ? runtimeStatus.containers : [],
    ips: Array.isArray(runtimeStatus?.ips) ? runtimeStatus.ips : [],
  };
  const apiStatus: PodStatus = pod.status ?? {};
  const old: PodStatus = opts.cachedStatus ?? apiStatus;
  const inits = specContainers(pod.spec.initContainers);
  const hasInitContainers = inits.length > 0;
  const nodeIPs = Array.isArray(opts.nodeIPs) ? opts.nodeIPs : [];
  const podRestarting = shouldAllContainersRestart(pod, runtime, old);

  const s: PodStatus = {};
  const podIPs = sortPodIPs(runtime.ips, nodeIPs);
  if (podIPs.length > 0) {
    s.podIP = podIPs[0];
    s.podIPs = podIPs.map((ip) => ({ ip }));
  }
  s.qosClass = getPodQOS(pod);

  const convert = (
    containers: Container[],
    previous: ContainerStatus[] | undefined,
    isInitContainer: boolean,
  ) =>
    convertToAPIContainerStatuses(pod, runtime, {
      containers,
      previousStatuses: previous,
      hasInitContainers,
      isInitContainer,
      reasonCache: opts.reasonCache,
      supportsRecursiveReadOnly: opts.supportsRecursiveReadOnly === true,
      podRestarting,
    });
  const containerStatuses = convert(specContainers(pod.spec.containers), old.containerStatuses, false);
  const initContainerStatuses = convert(inits, old.initContainerStatuses, true);
  const ephemeralStatuses = convert(
    specContainers(pod.spec.ephemeralContainers),
    old.ephemeralContainerStatuses,
    false,
  );
  if (opts.inPlaceResize) {
    applyContainerResources(
      specContainers(pod.spec.containers),
      containerStatuses,
      runtime,
      old.containerStatuses,
    );
    applyContainerResources(inits, initContainerStatuses, runtime, old.initContainerStatuses);
    try {
      const podLevel = podLevelResourcesStatus(pod, opts.inPlaceResize.podCgroup, old);
      s.resources = podLevel.resources;
      if (Object.keys(podLevel.allocatedResources).length > 0)
        s.allocatedResources = podLevel.allocatedResources;
    } catch {
      // A quantity that cannot be read (the API server's validation keeps them out): no pod-level report.
    }
  }
  s.containerStatuses = containerStatuses;
  // Empty lists are left out, as the API server leaves them out; a diff against it then stays empty.
  if (initContainerStatuses.length > 0) s.initContainerStatuses = initContainerStatuses;
  if (ephemeralStatuses.length > 0) s.ephemeralContainerStatuses = ephemeralStatuses;

  let phase: PodPhase = getPhase(
    pod.spec,
    [...containerStatuses, ...initContainerStatuses],
    opts.podIsTerminal,
    hasAnyActiveRegularContainerStarted(pod.spec, runtime),
    { staticPod: opts.staticPod ?? isStaticPod(pod) },
  );

  // Three-way merge: once the status manager or the API server saw a terminal phase, a freshly computed
  // non-terminal one must not undo it (containers may already be gone).
  if (!isTerminalPhase(phase)) {
    if (isTerminalPhase(old.phase)) phase = old.phase as PodPhase;
    else if (isTerminalPhase(apiStatus.phase)) phase = apiStatus.phase as PodPhase;
  }

  let reason = '';
  let message = '';
  if (phase === old.phase) {
    // The reason and message describe the phase, so they live exactly as long as it does.
    reason = old.reason || apiStatus.reason || '';
    message = old.message || apiStatus.message || '';
  }

  for (const handler of opts.evictionHandlers ?? []) {
    const result = handler.shouldEvict(pod);
    if (result?.evict) {
      phase = 'Failed';
      reason = result.reason ?? '';
      message = result.message ?? '';
      break;
    }
  }

  if (isTerminalPhase(apiStatus.phase) && phase !== apiStatus.phase) {
    // Illegal transition out of a terminal phase: the API server's word stands.
    phase = apiStatus.phase as PodPhase;
  }
  s.phase = phase;
  if (reason) s.reason = reason;
  if (message) s.message = message;

  opts.prober?.updatePodStatus(pod, s);

  const conditions: PodCondition[] = [];
  for (const c of apiStatus.conditions ?? []) {
    if (typeof c === 'object' && c !== null && !isKubeletOwnedCondition(c.type))
      conditions.push(cloneData(c));
  }
  // DisruptionTarget is set once (eviction, node shutdown) and is carried, not regenerated.
  const disruption = (old.conditions ?? []).find(
    (c) => typeof c === 'object' && c !== null && c.type === DisruptionTarget,
  );
  if (disruption) replaceOrAppend(conditions, cloneData(disruption));
  for (const c of opts.inPlaceResize?.conditions ?? []) conditions.push(cloneData(c));

  if (opts.podReadyToStartContainersCondition !== false) {
    conditions.push(generatePodReadyToStartContainersCondition(pod, runtime));
  }
  const all = [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])];
  conditions.push(generatePodInitializedCondition(pod, all, s.phase, old));
  conditions.push(generatePodReadyCondition(pod, conditions, all, s.phase));
  conditions.push(generateContainersReadyCondition(pod, all, s.phase));
  conditions.push(withObservedGeneration({ type: PodScheduled, status: 'True' }, pod.metadata.generation));
  if (allContainersCouldRestart(pod.spec)) {
    conditions.push(generateAllContainersRestartingCondition(pod, runtime, old, s.phase));
  }
  s.conditions = conditions;
  // The generation this status was generated from (kubelet: CalculatePodStatusObservedGeneration).
  if (typeof pod.metadata.generation === 'number') s.observedGeneration = pod.metadata.generation;

  applyHostIPs(s, nodeIPs, pod.spec.hostNetwork === true);
  return s;
}

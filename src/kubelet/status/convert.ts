/**
 * Runtime container records -> API container statuses (kubelet: kubelet_pods.go
 * convertToAPIContainerStatuses, v1.33 behaviour with default feature gates; volumeMounts and user as v1.37
 * reports them; restart counts and last states as RestartAllContainersOnContainerExits, on in v1.37, keeps
 * them across containers it removed).
 */
import type { Container, ContainerState, ContainerStatus, Pod, VolumeMountStatus } from '../../api/core.js';
import { formatRFC3339Optional } from '../../util/rfc3339.js';
import { shouldContainerBeRestarted } from '../container/helpers.js';
import {
  containerIDString,
  findContainerStatusByName,
  type KubeContainerStatus,
  type RuntimePodStatus,
} from '../container/types.js';
import type { ReasonCacheReader } from '../reasoncache.js';
import { KindError } from '../../util/errors.js';
import { validatePodSpecForStatus } from './inputvalidation.js';
import { cloneData } from '../../util/clone.js';
import { resolveRecursiveReadOnly } from '../volumemanager/makemounts.js';

/** Default waiting reasons: before the pod's init containers ran, everything is "PodInitializing". */
export const ContainerCreating = 'ContainerCreating';
export const PodInitializing = 'PodInitializing';
/** Reason of a terminated state the kubelet infers because the runtime lost the container. */
export const ContainerReasonStatusUnknown = 'ContainerStatusUnknown';

/**
 * Reason of the states the kubelet reports for containers it removed to restart the whole pod in place
 * (RestartAllContainersOnContainerExits); such a termination always counts as restarting.
 */
export const RestartingAllContainers = 'RestartingAllContainers';
export const MessageRemovedForRestartAll = 'The container is removed because RestartAllContainers in place';

/** Message when a previously running container has no runtime record at all. */
export const MessageContainerVanished =
  'The container could not be located when the pod was deleted.  The container used to be Running';
/** Message when the runtime reports a previously running container in an unknown state. */
export const MessageContainerUnknown = 'The container could not be located when the pod was terminated';

/** Exit code the kubelet reports for containers it lost track of (as if SIGKILLed). */
const LostContainerExitCode = 137;

export interface ConvertContainerStatusesInput {
  /** The containers to report on (init, regular or ephemeral), in spec order. */
  containers: readonly Container[];
  /** The previous API statuses of the same kind (from the status manager's cache, else the API pod). */
  previousStatuses?: readonly ContainerStatus[] | null;
  /** Whether the pod has init containers; it selects the default waiting reason. */
  hasInitContainers: boolean;
  /** Whether `containers` are init containers (output in spec order, exited-0 never "waiting"). */
  isInitContainer: boolean;
  /** Start failures by (pod UID, container name); without one, no failure reasons are shown. */
  reasonCache?: ReasonCacheReader;
  /** The pod's runtime handler mounts read-only recursively (what `volumeMounts[].recursiveReadOnly` says). */
  supportsRecursiveReadOnly?: boolean;
  /** The pod restarts all its containers in place (shouldAllContainersRestart). */
  podRestarting?: boolean;
}

/**
 * The container's volume mounts as its status reports them (RecursiveReadOnlyMounts): name, path, readOnly,
 * and for a read-only mount whether it is recursive (Enabled) or not (Disabled), as resolved against the
 * runtime handler. A mount whose mode cannot be resolved reports Disabled (it is never created anyway).
 * Undefined for a container without mounts.
 */
export function volumeMountStatuses(
  container: Pick<Container, 'volumeMounts'>,
  supportsRecursiveReadOnly: boolean,
): VolumeMountStatus[] | undefined {
  const mounts = container.volumeMounts;
  if (!mounts || mounts.length === 0) return undefined;
  return mounts.map((m) => {
    const out: VolumeMountStatus = { name: m.name, mountPath: m.mountPath };
    if (m.readOnly) {
      out.readOnly = true;
      const rro = resolveRecursiveReadOnly(m, supportsRecursiveReadOnly);
      out.recursiveReadOnly = rro.ok && rro.recursive ? 'Enabled' : 'Disabled';
    }
    return out;
  });
}

function clone<T>(v: T): T {
  return cloneData(v);
}

function newestFirst(records: readonly KubeContainerStatus[]): KubeContainerStatus[] {
  const copy = [...records];
  // The runtime view is already newest first; re-sort only when every record carries a creation time, so
  // records without one keep the order the runtime gave.
  if (copy.length > 1 && copy.every((r) => typeof r.createdAt === 'number' && Number.isFinite(r.createdAt))) {
    copy.sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0));
  }
  return copy;
}

function setIfDefined<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined && value !== '') target[key] = value;
}

/**
 * One runtime record as an API status; `old` is the previous API status of that container, if any. The
 * restart count never goes below the old one, and a last termination the runtime no longer holds (a
 * container removed to restart the pod in place) is carried from `old`.
 */
function convertRecord(
  record: KubeContainerStatus,
  old: ContainerStatus | undefined,
  podRestarting: boolean,
): ContainerStatus {
  const cid = containerIDString(record);
  const status: ContainerStatus = {
    name: record.name,
    ready: false,
    restartCount: Number.isInteger(record.restartCount) ? record.restartCount : 0,
    containerID: cid,
  };
  setIfDefined(status, 'image', record.image);
  setIfDefined(status, 'imageID', record.imageRef);
  // The runtime does not know volume names: the mounts stay as the container's status first listed them.
  if (old?.volumeMounts) status.volumeMounts = clone(old.volumeMounts);
  const oldCount = old && Number.isInteger(old.restartCount) ? old.restartCount : 0;
  if (old) {
    if (oldCount > status.restartCount) status.restartCount = oldCount;
    if (old.containerID !== cid && old.state?.terminated) {
      status.lastState = { terminated: clone(old.state.terminated) };
    } else if (old.lastState?.terminated) {
      status.lastState = { terminated: clone(old.lastState.terminated) };
    }
  }

  switch (record.state) {
    case 'running': {
      const running: NonNullable<ContainerState['running']> = {};
      setIfDefined(running, 'startedAt', formatRFC3339Optional(record.startedAt));
      status.state = { running };
      // It ran again after a termination the runtime's count does not include (it was removed).
      if (old?.state?.terminated && oldCount >= (record.restartCount ?? 0))
        status.restartCount = oldCount + 1;
      break;
    }
    case 'created':
      // Created but not started is "waiting to run", with no reason of its own.
      status.state = { waiting: {} };
      break;
    case 'exited': {
      const terminated: NonNullable<ContainerState['terminated']> = {
        exitCode: Number.isInteger(record.exitCode) ? (record.exitCode as number) : 0,
        containerID: cid,
      };
      setIfDefined(terminated, 'reason', record.reason);
      setIfDefined(terminated, 'message', record.message);
      setIfDefined(terminated, 'startedAt', formatRFC3339Optional(record.startedAt));
      setIfDefined(terminated, 'finishedAt', formatRFC3339Optional(record.finishedAt));
      status.state = { terminated };
      break;
    }
    default:
      if (record.state === 'unknown' && old?.state?.running) {
        // It ran and we lost it: report a termination rather than "waiting", so a run-once pod is not run
        // twice and the restart is counted (the runtime's own count cannot include it).
        status.state = {
          terminated: {
            exitCode: LostContainerExitCode,
            reason: podRestarting ? RestartingAllContainers : ContainerReasonStatusUnknown,
            message: MessageContainerUnknown,
          },
        };
        status.restartCount = (old.restartCount ?? 0) + 1;
      } else {
        // Any other state (unknown without a running past, or a state we do not know) reads as waiting.
        status.state = { waiting: {} };
      }
  }
  const user = record.user?.linux;
  if (user) {
    status.user = {
      linux: {
        uid: user.uid,
        gid: user.gid,
        ...(user.supplementalGroups.length > 0 ? { supplementalGroups: [...user.supplementalGroups] } : {}),
      },
    };
  }
  return status;
}

/**
 * Builds the API statuses of `containers` from the runtime records of the pod:
 *
 * 1. Each container starts from a default Waiting (ContainerCreating, or PodInitializing when the pod has
 *    init containers). A previous terminated status is reused as is; otherwise the previous restartCount
 *    and lastState are carried over.
 * 2. A container with no runtime record whose previous status was Running and which still shows the
 *    default Waiting without a last termination gets lastState terminated 137/ContainerStatusUnknown;
 *    its restartCount grows by one unless the pod is being deleted.
 * 3. Per name, the newest record becomes `state`, the second newest `lastState`; older ones are ignored.
 * 4. A container that would be restarted and has a cached start failure shows Waiting with that reason
 *    and message (a terminated state moves to lastState). Init containers whose newest record exited 0
 *    are never restarted, so they keep their terminated state.
 *
 * Output order: init statuses in spec order, others sorted by name (clients rely on a stable order).
 * Does not set `ready`/`started` (the prober does). Pure; inputs are not mutated. Throws
 * KindError('InvalidArgument') for a pod without metadata or with an invalid spec (validatePodSpecForStatus).
 */
export function convertToAPIContainerStatuses(
  pod: Pod,
  runtimeStatus: Pick<RuntimePodStatus, 'containers'>,
  input: ConvertContainerStatusesInput,
): ContainerStatus[] {
  const containers = (Array.isArray(input.containers) ? input.containers : []).filter(
    (c): c is Container => typeof c === 'object' && c !== null && typeof c.name === 'string',
  );
  if (typeof pod !== 'object' || pod === null || typeof pod.metadata !== 'object' || pod.metadata === null) {
    throw new KindError('InvalidArgument', 'pod has no metadata');
  }
  validatePodSpecForStatus(pod.spec);
  // No containers of this kind (most pods have no init or ephemeral containers): no statuses either.
  if (containers.length === 0) return [];
  const records = (Array.isArray(runtimeStatus?.containers) ? runtimeStatus.containers : []).filter(
    (r): r is KubeContainerStatus => typeof r === 'object' && r !== null && typeof r.name === 'string',
  );
  const runtime = { containers: records };
  const defaultReason = input.hasInitContainers ? PodInitializing : ContainerCreating;

  const oldStatuses = new Map<string, ContainerStatus>();
  for (const s of input.previousStatuses ?? []) {
    if (typeof s === 'object' && s !== null && typeof s.name === 'string') oldStatuses.set(s.name, s);
  }

  const statuses = new Map<string, ContainerStatus>();
  for (const c of containers) {
    const old = oldStatuses.get(c.name);
    if (old?.state?.terminated) {
      statuses.set(c.name, clone(old));
      continue;
    }
    const status: ContainerStatus = {
      name: c.name,
      state: { waiting: { reason: defaultReason } },
      ready: false,
      restartCount: 0,
    };
    setIfDefined(status, 'image', c.image);
    const volumeMounts = volumeMountStatuses(c, input.supportsRecursiveReadOnly === true);
    if (volumeMounts) status.volumeMounts = volumeMounts;
    if (old) {
      status.restartCount = Number.isInteger(old.restartCount) ? old.restartCount : 0;
      if (old.lastState !== undefined) status.lastState = clone(old.lastState);
    }
    statuses.set(c.name, status);
  }

  const hasRecord = new Set(records.map((r) => r.name));
  for (const c of containers) {
    if (hasRecord.has(c.name)) continue;
    const old = oldStatuses.get(c.name);
    if (!old) continue;
    if (input.podRestarting && !old.state?.waiting) {
      // Removed to restart the pod in place: waiting to run again, its removal counted as a restart.
      const removed = { reason: RestartingAllContainers, message: MessageRemovedForRestartAll };
      const status = statuses.get(c.name)!;
      status.state = { waiting: { ...removed } };
      status.lastState = { terminated: { ...removed, exitCode: LostContainerExitCode } };
      status.restartCount = (Number.isInteger(old.restartCount) ? old.restartCount : 0) + 1;
      continue;
    }
    // Only a container we saw running can have vanished; waiting or terminated ones tell the truth already.
    if (old.state?.terminated || !old.state?.running) continue;
    const status = statuses.get(c.name);
    if (!status || status.state?.waiting?.reason !== defaultReason || status.lastState?.terminated) continue;
    // Without a last termination, a default Waiting would push a running pod back to Pending.
    status.lastState = {
      terminated: {
        exitCode: LostContainerExitCode,
        reason: ContainerReasonStatusUnknown,
        message: MessageContainerVanished,
      },
    };
    if (!pod.metadata?.deletionTimestamp) status.restartCount += 1;
  }

  const seen = new Map<string, number>();
  for (const record of newestFirst(records)) {
    const current = statuses.get(record.name);
    if (!current) continue;
    const n = seen.get(record.name) ?? 0;
    if (n >= 2) continue;
    const converted = convertRecord(record, oldStatuses.get(record.name), input.podRestarting === true);
    if (n === 0) statuses.set(record.name, converted);
    else current.lastState = converted.state ?? {};
    seen.set(record.name, n + 1);
  }

  const uid = pod.metadata?.uid ?? '';
  for (const c of containers) {
    if (input.isInitContainer) {
      const newest = findContainerStatusByName(runtime, c.name);
      if (newest && newest.state === 'exited' && (newest.exitCode ?? 0) === 0) continue;
    }
    if (!shouldContainerBeRestarted(c, pod, runtime)) continue;
    const cached = input.reasonCache?.get(uid, c.name);
    if (!cached) continue;
    const status = statuses.get(c.name);
    if (!status) continue;
    if (status.state?.terminated) status.lastState = status.state;
    const waiting: NonNullable<ContainerState['waiting']> = { reason: cached.reason };
    setIfDefined(waiting, 'message', cached.message);
    status.state = { waiting };
  }

  if (input.isInitContainer) {
    return containers.map((c) => statuses.get(c.name)).filter((s): s is ContainerStatus => s !== undefined);
  }
  return [...statuses.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

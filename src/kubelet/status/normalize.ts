/**
 * normalizeStatus (kubelet: status_manager.go normalizeStatus): the form in which the status manager
 * caches a status and compares it with the API server's, so that differences the API cannot carry
 * (sub-second times, status order, over-long termination messages) never count as changes.
 */
import type { ContainerState, ContainerStatus, Pod, PodCondition, PodStatus } from '../../api/core.js';
import { formatRFC3339, parseRFC3339 } from '../../util/rfc3339.js';
import { cloneData } from '../../util/clone.js';

/** Total bytes of termination message the kubelet keeps for a whole pod (kubecontainer, 12 KiB). */
export const MaxPodTerminationMessageLogLength = 1024 * 12;

/**
 * An RFC3339 time truncated to whole seconds, in UTC with a `Z` suffix (metav1.Time's Rfc3339Copy).
 * A value that does not parse is returned unchanged: the status manager has no better value to put there.
 */
export function truncateTime<T extends string | null | undefined>(t: T): T | string {
  if (typeof t !== 'string' || t === '') return t;
  const known = truncated.get(t);
  if (known !== undefined) return known;
  const ms = parseRFC3339(t);
  const out = ms === undefined ? t : formatRFC3339(ms);
  if (truncated.size >= TRUNCATED_MAX) truncated.clear();
  truncated.set(t, out);
  return out;
}

/**
 * Recent truncations: a status carries the same few times on every sync (container start times, condition
 * transitions), and parsing and formatting them again was a tenth of the status manager's CPU at 10,000
 * pods. Cleared whole when full; a pure function's memo, so results never differ.
 */
const truncated = new Map<string, string>();
const TRUNCATED_MAX = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * The first `maxBytes` bytes of `s` in UTF-8. Go slices the byte string and may split a character; we
 * drop the partial character instead, because a JSON string cannot carry half of one (Go's encoder would
 * replace it with U+FFFD, which is longer and would make the message differ again on the next compare).
 */
export function truncateUTF8(s: string, maxBytes: number): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4).
  if (s.length * 3 <= maxBytes) return s;
  const bytes = encoder.encode(s);
  if (bytes.length <= maxBytes) return s;
  let end = Math.max(0, maxBytes);
  // Back up over continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  while (end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}

function normalizeState(state: ContainerState | undefined, bytesPerStatus: number): void {
  if (!state) return;
  if (state.running?.startedAt) state.running.startedAt = truncateTime(state.running.startedAt);
  const t = state.terminated;
  if (t) {
    if (t.startedAt) t.startedAt = truncateTime(t.startedAt);
    if (t.finishedAt) t.finishedAt = truncateTime(t.finishedAt);
    if (typeof t.message === 'string') t.message = truncateUTF8(t.message, bytesPerStatus);
  }
}

function normalizeContainerStatuses(statuses: ContainerStatus[] | undefined, bytesPerStatus: number): void {
  for (const s of statuses ?? []) {
    normalizeState(s.state, bytesPerStatus);
    normalizeState(s.lastState, bytesPerStatus);
  }
}

function byName(a: ContainerStatus, b: ContainerStatus): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Orders init container statuses as the init containers are ordered in the spec (kubelet:
 * SortInitContainerStatuses). Statuses naming no init container keep their place after the matched ones.
 */
export function sortInitContainerStatuses(pod: Pod, statuses: ContainerStatus[]): void {
  let current = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    for (let j = current; j < statuses.length; j++) {
      if (statuses[j]?.name === c.name) {
        const tmp = statuses[current] as ContainerStatus;
        statuses[current] = statuses[j] as ContainerStatus;
        statuses[j] = tmp;
        current++;
        break;
      }
    }
  }
}

/**
 * A normalized deep copy of `status`: every time truncated to whole seconds, each terminated message cut
 * to 12 KiB divided by the number of containers in the spec (init + regular + ephemeral), regular and
 * ephemeral statuses sorted by name, init statuses in spec order; `status` itself when that changes nothing
 * (most statuses read back from the API server). The input is never modified, and the result must not be.
 * Idempotent.
 */
export function normalizeStatus(pod: Pod, status: PodStatus): PodStatus {
  return isNormalized(pod, status) ? status : normalizeStatusInPlace(pod, cloneData(status));
}

/**
 * normalizeStatus on a status the caller owns: modifies and returns it, no copy. (The status manager's own
 * copy of a new status used to be copied again here: two structured clones per pod sync.)
 */
export function normalizeStatusInPlace(pod: Pod, out: PodStatus): PodStatus {
  const bytesPerStatus = messageBytesPerStatus(pod);
  if (out.startTime) out.startTime = truncateTime(out.startTime);
  for (const c of out.conditions ?? []) normalizeConditionTimes(c);

  normalizeContainerStatuses(out.containerStatuses, bytesPerStatus);
  out.containerStatuses?.sort(byName);
  normalizeContainerStatuses(out.initContainerStatuses, bytesPerStatus);
  if (out.initContainerStatuses) sortInitContainerStatuses(pod, out.initContainerStatuses);
  normalizeContainerStatuses(out.ephemeralContainerStatuses, bytesPerStatus);
  out.ephemeralContainerStatuses?.sort(byName);
  return out;
}

function messageBytesPerStatus(pod: Pod): number {
  const spec = pod.spec;
  const containers =
    (spec?.containers?.length ?? 0) +
    (spec?.initContainers?.length ?? 0) +
    (spec?.ephemeralContainers?.length ?? 0);
  return containers > 0
    ? Math.floor(MaxPodTerminationMessageLogLength / containers)
    : MaxPodTerminationMessageLogLength;
}

/**
 * Whether normalizing would change nothing: the usual case for a status the API server holds, since the
 * status manager wrote it normalized. Two or more init container statuses are not checked (spec order): false.
 */
function isNormalized(pod: Pod, s: PodStatus): boolean {
  const bytesPerStatus = messageBytesPerStatus(pod);
  if (s.startTime && truncateTime(s.startTime) !== s.startTime) return false;
  for (const c of s.conditions ?? []) {
    if (c.lastProbeTime && truncateTime(c.lastProbeTime) !== c.lastProbeTime) return false;
    if (c.lastTransitionTime && truncateTime(c.lastTransitionTime) !== c.lastTransitionTime) return false;
  }
  if ((s.initContainerStatuses?.length ?? 0) > 1) return false;
  return (
    containerStatusesNormal(s.containerStatuses, bytesPerStatus, true) &&
    containerStatusesNormal(s.initContainerStatuses, bytesPerStatus, false) &&
    containerStatusesNormal(s.ephemeralContainerStatuses, bytesPerStatus, true)
  );
}

function containerStatusesNormal(
  statuses: ContainerStatus[] | undefined,
  bytesPerStatus: number,
  sorted: boolean,
): boolean {
  if (!statuses) return true;
  for (let i = 0; i < statuses.length; i++) {
    const c = statuses[i]!;
    if (sorted && i > 0 && byName(statuses[i - 1]!, c) > 0) return false;
    if (!stateNormal(c.state, bytesPerStatus) || !stateNormal(c.lastState, bytesPerStatus)) return false;
  }
  return true;
}

function stateNormal(state: ContainerState | undefined, bytesPerStatus: number): boolean {
  if (!state) return true;
  const r = state.running?.startedAt;
  if (r && truncateTime(r) !== r) return false;
  const t = state.terminated;
  if (!t) return true;
  if (t.startedAt && truncateTime(t.startedAt) !== t.startedAt) return false;
  if (t.finishedAt && truncateTime(t.finishedAt) !== t.finishedAt) return false;
  return typeof t.message !== 'string' || truncateUTF8(t.message, bytesPerStatus) === t.message;
}

function normalizeConditionTimes(c: PodCondition): void {
  if (c.lastProbeTime) c.lastProbeTime = truncateTime(c.lastProbeTime);
  if (c.lastTransitionTime) c.lastTransitionTime = truncateTime(c.lastTransitionTime);
}

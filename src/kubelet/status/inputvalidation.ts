/**
 * Input checks of the status manager and the status generators: the shapes their algorithms index into.
 * The API server validates pods, but the operator also builds statuses for pods read from caches, injected
 * collaborators and tests; a malformed pod, spec or status is rejected at the entry point with
 * KindError('InvalidArgument') before it reaches the cache, so nothing deep inside (phase, conversion,
 * normalization, merge, patch) ever meets it.
 */
import type { Container, Pod, PodSpec, PodStatus, RestartPolicy } from '../../api/core.js';
import { KindError } from '../../util/errors.js';
import { memoByIdentity } from '../../util/memo.js';
import { isRecord } from '../../util/record.js';

const RESTART_POLICIES: ReadonlySet<string> = new Set(['Always', 'OnFailure', 'Never']);
const STATUS_LISTS = ['initContainerStatuses', 'containerStatuses', 'ephemeralContainerStatuses'] as const;

function invalid(message: string, context: Record<string, unknown> = {}): never {
  throw new KindError('InvalidArgument', message, context);
}

function containerList(
  spec: PodSpec,
  field: 'containers' | 'initContainers' | 'ephemeralContainers',
): Container[] {
  const list: unknown = spec[field];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) invalid(`spec.${field} is not a list`, { field });
  list.forEach((c: unknown, i) => {
    if (!isRecord(c) || typeof c.name !== 'string') {
      invalid(`spec.${field}[${i}] has no name`, { field, index: i });
    }
  });
  return list as Container[];
}

/**
 * Checks what the status algorithms rely on: a known restart policy (or none, meaning Always), container
 * lists that are lists of named containers, and names unique across init, regular and ephemeral
 * containers (statuses are matched by name). A pod with no containers is accepted: it has a defined
 * phase (Pending). Returns the effective restart policy. Throws KindError('InvalidArgument').
 */
export function validatePodSpecForStatus(spec: PodSpec | undefined | null): RestartPolicy {
  if (typeof spec !== 'object' || spec === null) invalid('pod has no spec');
  return validSpecs(spec);
}

/**
 * The check of one spec object, once: a status is generated several times per sync (init, regular and ephemeral
 * lists each check the spec), and specs are never changed in place. A spec that fails is not remembered.
 */
const validSpecs = memoByIdentity((spec: PodSpec): RestartPolicy => {
  const policy: unknown = spec.restartPolicy;
  if (
    policy !== undefined &&
    policy !== null &&
    (typeof policy !== 'string' || !RESTART_POLICIES.has(policy))
  ) {
    invalid(`unknown restartPolicy ${JSON.stringify(policy)}`, { restartPolicy: policy });
  }
  const seen = new Set<string>();
  for (const field of ['initContainers', 'containers', 'ephemeralContainers'] as const) {
    for (const c of containerList(spec, field)) {
      if (seen.has(c.name))
        invalid(`duplicate container name ${JSON.stringify(c.name)}`, { container: c.name });
      seen.add(c.name);
    }
  }
  return (policy ?? 'Always') as RestartPolicy;
});

/**
 * A pod the status manager can key and sync: an object with metadata.uid (non-empty), string name and
 * namespace when present, a spec that validatePodSpecForStatus accepts, and a valid status if it has one.
 */
export function validatePodForStatusManager(
  pod: unknown,
): asserts pod is Pod & { metadata: { uid: string } } {
  if (!isRecord(pod) || !isRecord(pod.metadata)) invalid('pod has no metadata');
  const { uid, name, namespace } = pod.metadata;
  if (typeof uid !== 'string' || uid === '') invalid('pod has no metadata.uid', { name, namespace });
  for (const [field, v] of [
    ['name', name],
    ['namespace', namespace],
  ] as const) {
    if (v !== undefined && typeof v !== 'string') invalid(`pod metadata.${field} is not a string`, { uid });
  }
  validatePodSpecForStatus(pod.spec as Pod['spec']);
  if (pod.status !== undefined && pod.status !== null) validatePodStatus(pod.status);
}

/**
 * A status whose lists are lists of the right things: conditions with a string type and status, container
 * statuses with a string name and object states. Scalars are not checked beyond their type: an
 * unrecognised phase is a value the algorithms define (TerminatePod makes it Failed).
 */
export function validatePodStatus(status: unknown): asserts status is PodStatus {
  if (!isRecord(status)) invalid('pod status is not an object');
  for (const field of ['phase', 'reason', 'message', 'startTime'] as const) {
    const v = status[field];
    if (v !== undefined && v !== null && typeof v !== 'string') invalid(`status.${field} is not a string`);
  }
  const conditions = status.conditions;
  if (conditions !== undefined && conditions !== null) {
    if (!Array.isArray(conditions)) invalid('status.conditions is not a list');
    conditions.forEach((c: unknown, i) => {
      if (!isRecord(c) || typeof c.type !== 'string' || c.type === '' || typeof c.status !== 'string') {
        invalid(`status.conditions[${i}] needs a type and a status`, { index: i });
      }
    });
  }
  for (const field of STATUS_LISTS) {
    const list = status[field];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) invalid(`status.${field} is not a list`);
    list.forEach((s: unknown, i) => {
      if (!isRecord(s) || typeof s.name !== 'string')
        invalid(`status.${field}[${i}] has no name`, { index: i });
      for (const k of ['state', 'lastState'] as const) {
        const st = s[k];
        if (st !== undefined && st !== null && !isRecord(st))
          invalid(`status.${field}[${i}].${k} is not an object`);
      }
    });
  }
}

/** validatePodStatus as a predicate, for statuses read from injected collaborators. */
export function isValidPodStatus(status: unknown): status is PodStatus {
  try {
    validatePodStatus(status);
    return true;
  } catch {
    return false;
  }
}

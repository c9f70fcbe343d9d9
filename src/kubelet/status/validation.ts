/**
 * Input checks shared by the status generators. The API server validates pods, but the operator also
 * builds statuses for pods read from caches and tests; a malformed spec must surface as a typed error at
 * the entry point, never as a crash deep inside the algorithms.
 */
import type { Container, PodSpec, RestartPolicy } from '../../api/core.js';
import { KindError } from '../../util/errors.js';

const RESTART_POLICIES: ReadonlySet<string> = new Set(['Always', 'OnFailure', 'Never']);

function containerList(
  spec: PodSpec,
  field: 'containers' | 'initContainers' | 'ephemeralContainers',
): Container[] {
  const list: unknown = spec[field];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new KindError('InvalidArgument', `spec.${field} is not a list`, { field });
  list.forEach((c: unknown, i) => {
    if (typeof c !== 'object' || c === null || typeof (c as { name?: unknown }).name !== 'string') {
      throw new KindError('InvalidArgument', `spec.${field}[${i}] has no name`, { field, index: i });
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
  if (typeof spec !== 'object' || spec === null) throw new KindError('InvalidArgument', 'pod has no spec');
  const policy: unknown = spec.restartPolicy;
  if (
    policy !== undefined &&
    policy !== null &&
    (typeof policy !== 'string' || !RESTART_POLICIES.has(policy))
  ) {
    throw new KindError('InvalidArgument', `unknown restartPolicy ${JSON.stringify(policy)}`, {
      restartPolicy: policy,
    });
  }
  const seen = new Set<string>();
  for (const field of ['initContainers', 'containers', 'ephemeralContainers'] as const) {
    for (const c of containerList(spec, field)) {
      if (seen.has(c.name)) {
        throw new KindError('InvalidArgument', `duplicate container name ${JSON.stringify(c.name)}`, {
          container: c.name,
        });
      }
      seen.add(c.name);
    }
  }
  return (policy ?? 'Always') as RestartPolicy;
}

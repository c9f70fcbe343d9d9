/**
 * Input checks for the pure sync decisions. The API server and the runtime normally guarantee these shapes;
 * checking them here turns a malformed object into a typed error at the boundary instead of a wrong
 * decision (or a crash) deep inside computePodActions.
 */
import type { Container, Pod } from '../../api/core.js';
import type { RuntimePodStatus } from '../container/types.js';
import { KindError } from '../../util/errors.js';

const restartPolicies: ReadonlySet<unknown> = new Set(['Always', 'OnFailure', 'Never']);
const containerStates: ReadonlySet<unknown> = new Set(['created', 'running', 'exited', 'unknown']);
const sandboxStates: ReadonlySet<unknown> = new Set(['ready', 'notready']);
const netnsModes: ReadonlySet<unknown> = new Set(['pod', 'node']);

function invalid(message: string, pod: Pod | undefined, extra: Record<string, unknown> = {}): KindError {
  const meta = pod?.metadata;
  return new KindError('InvalidArgument', message, {
    pod: meta ? `${meta.namespace ?? ''}/${meta.name ?? ''}` : undefined,
    podUID: meta?.uid,
    ...extra,
  });
}

function checkList(pod: Pod, field: string, list: unknown, required: boolean, seen: Set<string>): void {
  if (list === undefined || list === null) {
    if (required) throw invalid(`spec.${field} is missing`, pod);
    return;
  }
  if (!Array.isArray(list)) throw invalid(`spec.${field} is not a list`, pod);
  list.forEach((c: unknown, i) => {
    const name = (c as Partial<Container> | null)?.name;
    if (typeof name !== 'string' || name === '') {
      throw invalid(`spec.${field}[${i}] has no name`, pod);
    }
    // Names are unique across all three lists: runtime records are matched to the spec by name alone.
    if (seen.has(name)) throw invalid(`duplicate container name ${JSON.stringify(name)}`, pod);
    seen.add(name);
  });
}

/**
 * Throws `KindError('InvalidArgument')` unless the pod spec can be synced: a metadata and spec object, a
 * known restart policy (unset is Always), container lists that are lists of named containers with
 * pod-wide unique names, and container restart policies (init or regular) that are unset or one of
 * `Always`, `OnFailure`, `Never` (ContainerRestartRules).
 * An empty `spec.containers` is accepted: the API rejects it, but the decision for it is well defined.
 */
export function validatePodSpec(pod: Pod): void {
  if (typeof pod !== 'object' || pod === null) throw invalid('pod is not an object', undefined);
  if (typeof pod.metadata !== 'object' || pod.metadata === null) throw invalid('pod has no metadata', pod);
  if (typeof pod.spec !== 'object' || pod.spec === null) throw invalid('pod has no spec', pod);
  const policy: unknown = pod.spec.restartPolicy;
  if (policy !== undefined && policy !== null && !restartPolicies.has(policy)) {
    throw invalid(`unknown restartPolicy ${JSON.stringify(policy)}`, pod);
  }
  const seen = new Set<string>();
  checkList(pod, 'initContainers', pod.spec.initContainers, false, seen);
  checkList(pod, 'containers', pod.spec.containers, true, seen);
  checkList(pod, 'ephemeralContainers', pod.spec.ephemeralContainers, false, seen);
  for (const [kind, list] of [
    ['init container', pod.spec.initContainers],
    ['container', pod.spec.containers],
  ] as const) {
    for (const c of list ?? []) {
      const rp: unknown = c.restartPolicy;
      if (rp !== undefined && rp !== null && !restartPolicies.has(rp)) {
        throw invalid(`${kind} ${c.name} has unsupported restartPolicy ${JSON.stringify(rp)}`, pod);
      }
    }
  }
}

/**
 * Throws `KindError('InvalidArgument')` unless the runtime view has sandbox and container lists whose
 * records carry a known state (and, for containers, a name and an ID).
 */
export function validateRuntimeStatus(pod: Pod, status: RuntimePodStatus): void {
  if (typeof status !== 'object' || status === null) throw invalid('runtime status is not an object', pod);
  if (!Array.isArray(status.sandboxes)) throw invalid('runtime status has no sandbox list', pod);
  if (!Array.isArray(status.containers)) throw invalid('runtime status has no container list', pod);
  status.sandboxes.forEach((s, i) => {
    if (typeof s !== 'object' || s === null) throw invalid(`sandbox record ${i} is not an object`, pod);
    if (!sandboxStates.has(s.state)) {
      throw invalid(`sandbox ${s.id} has unknown state ${JSON.stringify(s.state)}`, pod, { sandbox: s.id });
    }
    if (!netnsModes.has(s.netns)) {
      throw invalid(`sandbox ${s.id} has unknown network namespace mode ${JSON.stringify(s.netns)}`, pod);
    }
    if (typeof s.attempt !== 'number' || !Number.isInteger(s.attempt) || s.attempt < 0) {
      throw invalid(`sandbox ${s.id} has invalid attempt ${JSON.stringify(s.attempt)}`, pod);
    }
  });
  status.containers.forEach((c, i) => {
    if (typeof c !== 'object' || c === null) throw invalid(`container record ${i} is not an object`, pod);
    if (typeof c.name !== 'string' || typeof c.id !== 'string' || c.id === '') {
      throw invalid(`container record ${i} lacks a name or an ID`, pod);
    }
    if (!containerStates.has(c.state)) {
      throw invalid(`container ${c.name} (${c.id}) has unknown state ${JSON.stringify(c.state)}`, pod, {
        container: c.name,
        containerID: c.id,
      });
    }
  });
}

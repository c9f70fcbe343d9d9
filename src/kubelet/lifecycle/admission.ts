/**
 * Pod admission as the kubelet does it before it runs a pod, in the order of its admit handlers: the sysctl
 * allowlist (sysctl.ts), then lifecycle.predicateAdmitHandler: the pod's OS (its `kubernetes.io/os` label and
 * `spec.os`) must be the node's, a Strict supplemental groups policy needs the node's runtime to support it
 * (Node `status.features`), the pod must fit the node's allocatable resources next to the pods already
 * admitted, match the node's labels (node selector and required node affinity), find its host ports free,
 * and tolerate every NoExecute taint; then the declared-features handler: the pod may need no feature the node
 * does not declare (src/node/declaredfeatures.ts); last, the node shutdown manager's: nothing while the node
 * shuts down (src/kubelet/nodeshutdown/). A rejected pod is set Failed with the returned reason and
 * message, and an Event is recorded.
 *
 * Pure: inputs are the node view and the other pods; the answer is data.
 */
import type { Pod, Toleration } from '../../api/core.js';
import { setRequirementMatches } from '../../api/labelselector.js';
import type { Node } from '../../api/node.js';
import { podRequests, withoutContainerResources, type ResourceAmounts } from '../../api/resources.js';
import { errorMessage } from '../../util/errors.js';
import { memoByIdentity } from '../../util/memo.js';
import { quantityValue } from '../../util/quantity.js';
import { admitDeclaredFeatures, declaredFeatures } from '../../node/declaredfeatures.js';
import { isExtendedResourceName } from '../../node/setters.js';
import { admitSysctls, safeSysctlAllowlist, SysctlAllowlist } from './sysctl.js';
import { withoutDRAExtendedResources } from '../cm/dra/extendedresource.js';
import { admitUnderPressure } from '../eviction/admit.js';
import type { PressureCondition } from '../eviction/signals.js';
import { admitWhileShuttingDown } from '../nodeshutdown/manager.js';

export interface NodeTaint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface AdmissionNode {
  name: string;
  labels: Record<string, string>;
  taints: NodeTaint[];
  /** Allocatable: cpu in millicores, memory and ephemeral-storage in bytes, pods as a count, others whole. */
  allocatable: Map<string, number>;
  /** Sysctls beyond the safe set that pods may set (kubelet --allowed-unsafe-sysctls; `prefix*` patterns). */
  allowedUnsafeSysctls?: readonly string[];
  /** The node's kernel release: some safe sysctls are namespaced only from a given kernel on. */
  kernelVersion?: string;
  /**
   * What the node's runtime supports as a whole, as the Node's `status.features` says (from the runtime's
   * Status); absent when the runtime reports nothing (containerd 1.6), which admission reads as unsupported.
   */
  features?: { supplementalGroupsPolicy?: boolean };
  /** The features the node declares (Node `status.declaredFeatures`); default what every VirtualNode declares. */
  declaredFeatures?: readonly string[];
  /** The node's pressure conditions as its eviction manager last found them; absent or empty: none. */
  pressureConditions?: readonly PressureCondition[];
  /** The node is shutting down (its shutdown manager's ShutdownStatus): nothing is admitted. */
  shuttingDown?: boolean;
}

/** What every VirtualNode declares (src/node/declaredfeatures.ts), computed once at start as the kubelet does. */
const NodeDeclaredFeatures: readonly string[] = declaredFeatures();

/** The node OS label (v1.LabelOSStable) and the only OS our nodes run (the kubelet's runtime.GOOS). */
export const LabelOSStable = 'kubernetes.io/os';
const NodeOS = 'linux';

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

const OutOfReasons: Record<string, string> = {
  cpu: 'OutOfcpu',
  memory: 'OutOfmemory',
  'ephemeral-storage': 'OutOfephemeral-storage',
  pods: 'OutOfpods',
};

function insufficient(resource: string, requested: number, used: number, capacity: number): AdmitResult {
  return {
    admit: false,
    reason: OutOfReasons[resource] ?? `OutOf${resource}`,
    message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  };
}

function predicateFailed(name: string, desc: string): AdmitResult {
  return { admit: false, reason: name, message: `Predicate ${name} failed: ${desc}` };
}

/**
 * The node admission decides against: `own` (this node's desired labels, its taints and its resources) with
 * the Node as the API server has it now (`live`: the node informer's copy, or a fresh GET), as the kubelet
 * admits against its Node. From the live Node come the labels others put there (kubectl label, a DaemonSet
 * test), the taints others put there (the node lifecycle controller's, kubectl taint), and the extended
 * resources others advertise in its status (the documented way to advertise one is a PATCH of the Node's
 * status). Own labels win over live ones, so a spec change admits at once, before its patch lands; own
 * resources win over the amounts last published. `own` itself when the live Node adds nothing.
 */
export function withLiveNode(own: AdmissionNode, live: Node | undefined): AdmissionNode {
  if (!live) return own;
  const liveLabels = live.metadata.labels ?? {};
  const addsLabel = Object.keys(liveLabels).some((k) => !Object.hasOwn(own.labels, k));
  const addedTaints = (live.spec?.taints ?? []).filter(
    (t) => !own.taints.some((o) => o.key === t.key && o.effect === t.effect),
  );
  const advertised: [string, number][] = [];
  for (const [k, v] of Object.entries(live.status?.allocatable ?? {})) {
    if (!isExtendedResourceName(k) || own.allocatable.has(k)) continue;
    let n: number;
    try {
      n = quantityValue(String(v));
    } catch {
      continue; // Not a quantity: the scheduler cannot have counted on it either.
    }
    advertised.push([k, n]);
  }
  if (!addsLabel && addedTaints.length === 0 && advertised.length === 0) return own;
  return {
    ...own,
    labels: addsLabel ? { ...liveLabels, ...own.labels } : own.labels,
    taints: addedTaints.length
      ? [
          ...own.taints,
          ...addedTaints.map((t) => ({
            key: t.key,
            effect: t.effect,
            ...(t.value === undefined ? {} : { value: t.value }),
          })),
        ]
      : own.taints,
    allocatable: advertised.length ? new Map([...advertised, ...own.allocatable]) : own.allocatable,
  };
}

/** Whether the node's labels satisfy one node-selector term (all expressions must hold). */
function termMatches(
  term: { matchExpressions?: { key: string; operator: string; values?: string[] }[] },
  labels: Record<string, string>,
): boolean {
  for (const e of term.matchExpressions ?? []) {
    const set = setRequirementMatches(e, labels);
    if (set !== undefined) {
      if (!set) return false;
      continue;
    }
    if (e.operator !== 'Gt' && e.operator !== 'Lt') return false;
    const has = Object.hasOwn(labels, e.key);
    const n = Number(labels[e.key]);
    const bound = Number((e.values ?? [])[0]);
    if (!has || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
    if (e.operator === 'Gt' ? !(n > bound) : !(n < bound)) return false;
  }
  return true;
}

function matchesNodeSelectorAndAffinity(pod: Pod, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const affinity = (pod.spec as { affinity?: { nodeAffinity?: Record<string, unknown> } }).affinity
    ?.nodeAffinity;
  const required = affinity?.requiredDuringSchedulingIgnoredDuringExecution as
    | { nodeSelectorTerms?: { matchExpressions?: { key: string; operator: string; values?: string[] }[] }[] }
    | undefined;
  const terms = required?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((t) => termMatches(t, labels));
}

function tolerates(t: Toleration, taint: NodeTaint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/** Host ports by spec object, like requestsOf: admission reads every admitted pod's for each admission. */
const hostPortsOf = memoByIdentity((spec: Pod['spec']): string[] => {
  const out: string[] = [];
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) out.push(`${p.protocol ?? 'TCP'}/${p.hostIP ?? '0.0.0.0'}/${p.hostPort}`);
    }
  }
  return out;
});

function portsConflict(a: string, b: string): boolean {
  const [pa, ia, na] = a.split('/');
  const [pb, ib, nb] = b.split('/');
  return pa === pb && na === nb && (ia === ib || ia === '0.0.0.0' || ib === '0.0.0.0');
}

/**
 * A spec's requests, computed once per spec object: admission sums them over every admitted pod for each pod
 * it admits, and the admitted pods' specs are the same objects from one admission to the next. Specs are
 * never changed in place (a new version of a pod is a new object), so the memo cannot go stale.
 */
const requestsOf = memoByIdentity((spec: Pod['spec']): ResourceAmounts => podRequests(spec));

/**
 * What admission needs of the pods already admitted on a node: how many, the sum of their requests and their
 * host ports. A summary that counts more pods, more of every resource and more ports than the node really holds
 * can only admit less: a pod it admits fits the real node too (see AdmittedTally).
 */
export interface AdmissionPeers {
  count: number;
  used: ReadonlyMap<string, number>;
  hostPorts: readonly string[];
}

/** The peers' summary of a list of pods, or the admission error a pod with invalid requests among them gives. */
export function admissionPeers(admitted: readonly Pod[]): AdmissionPeers | AdmitResult {
  const used = new Map<string, number>();
  try {
    for (const other of admitted)
      for (const [k, v] of requestsOf(other.spec)) used.set(k, (used.get(k) ?? 0) + v);
  } catch (err) {
    return invalidRequest(err);
  }
  return { count: admitted.length, used, hostPorts: admitted.flatMap((p) => hostPortsOf(p.spec)) };
}

function invalidRequest(err: unknown): AdmitResult {
  return {
    admit: false,
    reason: 'UnexpectedAdmissionError',
    message: `Invalid resource request: ${errorMessage(err)}`,
  };
}

/** A spec's requests (memoized per spec object) and host ports, as admission counts them. */
export function admissionShare(spec: Pod['spec']): {
  requests: ResourceAmounts;
  hostPorts: readonly string[];
} {
  return { requests: requestsOf(spec), hostPorts: hostPortsOf(spec) };
}

/**
 * The admit handlers the kubelet runs before its container manager's resource allocation (the device
 * manager's): the eviction manager's, then the sysctl allowlist.
 */
export function admitBeforeResourceAllocation(pod: Pod, node: AdmissionNode): AdmitResult {
  // The eviction manager's admit handler is the kubelet's first.
  if (node.pressureConditions && node.pressureConditions.length > 0) {
    const verdict = admitUnderPressure(pod, node.pressureConditions);
    if (!verdict.admit) return verdict;
  }
  if ((pod.spec.securityContext?.sysctls ?? []).length > 0) {
    let verdict: AdmitResult;
    try {
      const allowed = [...safeSysctlAllowlist(node.kernelVersion), ...(node.allowedUnsafeSysctls ?? [])];
      verdict = admitSysctls(new SysctlAllowlist(allowed), pod.spec);
    } catch (err) {
      verdict = { admit: false, reason: 'UnexpectedAdmissionError', message: errorMessage(err) };
    }
    if (!verdict.admit) return verdict;
  }
  return { admit: true };
}

/**
 * kubelet removeMissingExtendedResources: the spec whose requests the resource check reads. A container's
 * extended resources that the node does not advertise are not the node's to count (cluster-level ones). The
 * pod's own spec when nothing goes.
 */
export function withoutMissingExtendedResources(
  pod: Pod,
  allocatable: ReadonlyMap<string, number>,
): Pod['spec'] {
  // Limits too: podRequests takes a limit without a request as the request (the API server's defaulting).
  return withoutContainerResources(
    pod.spec,
    (_, resource) => isExtendedResourceName(resource) && !allocatable.has(resource),
  );
}

/**
 * Decides whether `pod` may run on `node` next to `admitted` (pods already running or admitted there, not
 * terminal). The first failing check gives the reason, in the kubelet's order: node pressure (the eviction
 * manager's handler), sysctls, OS label, OS field,
 * supplemental groups policy, resources (pods count first, then cpu, memory, ephemeral storage, extended), node affinity, node name, host
 * ports, NoExecute taints, declared features, node shutdown.
 */
export function admitPod(
  pod: Pod,
  node: AdmissionNode,
  admitted: readonly Pod[] | AdmissionPeers,
): AdmitResult {
  const early = admitBeforeResourceAllocation(pod, node);
  if (!early.admit) return early;
  // Checks that preemption cannot help come first. The kubelet compares the pod's *label* (not its node
  // selector) with the node's OS, taking its own OS when the node's label is missing or different.
  const osLabel = pod.metadata.labels?.[LabelOSStable];
  if (osLabel !== undefined && osLabel !== NodeOS) {
    return {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    };
  }
  if (pod.spec.os && pod.spec.os.name !== NodeOS) {
    return {
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
  }
  // kubelet rejectPodAdmissionBasedOnSupplementalGroupsPolicy (the feature is GA): Strict only where the
  // runtime can leave the image's groups out; Merge, or no policy, is what every runtime does.
  if (
    pod.spec.securityContext?.supplementalGroupsPolicy === 'Strict' &&
    node.features?.supplementalGroupsPolicy !== true
  ) {
    return {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    };
  }

  let requests: ResourceAmounts;
  try {
    // The requests its DRA extended resource claim serves, and extended resources the node does not
    // advertise, are not the node's to fit.
    requests = requestsOf(
      withoutMissingExtendedResources(withoutDRAExtendedResources(pod), node.allocatable),
    );
  } catch (err) {
    return invalidRequest(err);
  }
  const peers = Array.isArray(admitted) ? admissionPeers(admitted) : (admitted as AdmissionPeers);
  if ('admit' in peers) return peers;
  const used = peers.used;

  const podsCapacity = node.allocatable.get('pods');
  if (podsCapacity !== undefined && peers.count + 1 > podsCapacity) {
    return insufficient('pods', 1, peers.count, podsCapacity);
  }
  const ordered = [
    'cpu',
    'memory',
    'ephemeral-storage',
    ...[...requests.keys()].filter((k) => !OutOfReasons[k]).sort(),
  ];
  for (const resource of ordered) {
    const req = requests.get(resource) ?? 0;
    if (req === 0) continue;
    const capacity = node.allocatable.get(resource) ?? 0;
    const u = used.get(resource) ?? 0;
    if (req + u > capacity) return insufficient(resource, req, u, capacity);
  }

  if (!matchesNodeSelectorAndAffinity(pod, node.labels)) {
    return predicateFailed('NodeAffinity', "node(s) didn't match Pod's node affinity/selector");
  }
  if (pod.spec.nodeName && pod.spec.nodeName !== node.name) {
    return predicateFailed('NodeName', "node(s) didn't match the requested node name");
  }
  const taken = peers.hostPorts;
  if (hostPortsOf(pod.spec).some((p) => taken.some((t) => portsConflict(p, t)))) {
    return predicateFailed('NodePorts', "node(s) didn't have free ports for the requested pod ports");
  }
  const untolerated = node.taints.find(
    (taint) => taint.effect === 'NoExecute' && !(pod.spec.tolerations ?? []).some((t) => tolerates(t, taint)),
  );
  if (untolerated) {
    return predicateFailed('TaintToleration', "node(s) had taints that the pod didn't tolerate");
  }
  // kubelet declaredFeaturesAdmitHandler (NodeDeclaredFeatures).
  const declared = admitDeclaredFeatures(pod, node.declaredFeatures ?? NodeDeclaredFeatures);
  if (!declared.admit) return declared;
  // The node shutdown manager's admit handler, the kubelet's last.
  return admitWhileShuttingDown(node.shuttingDown === true);
}

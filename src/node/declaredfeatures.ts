/**
 * Node declared features (NodeDeclaredFeatures, GA in v1.37): the kubelet lists in `status.declaredFeatures` the
 * registered features (component-helpers nodedeclaredfeatures registry) it supports, and the scheduler and the
 * API server keep pods and updates that need one away from nodes that do not declare it.
 *
 * A VirtualNode declares a feature only when it does what the feature promises. Each v1.37 feature is listed
 * here with the reason it is or is not declared; basic in-place resize is GA and not a declared feature.
 */
import type { Container, Pod, PodSpec } from '../api/core.js';
import { isRecord } from '../util/record.js';
import { parseQuantityNano } from '../util/quantity.js';
import type { Setter } from './setters.js';

export interface DeclarableFeature {
  name: string;
  supported: boolean;
  why: string;
}

/** The v1.37 registry, in its order. */
export const DeclarableFeatures: readonly DeclarableFeature[] = [
  {
    name: 'RestartAllContainersOnContainerExits',
    supported: true,
    why: 'the RestartAllContainers action of container restart rules restarts the pod in place (every container killed and removed, then started again from the first init container), as the v1.37 kubelet does',
  },
  {
    name: 'InPlacePodLevelResourcesVerticalScaling',
    supported: true,
    why: 'pod-level resources (spec.resources) are resized in place as the v1.37 kubelet (its gate Beta and on) resizes them: allocated (Deferred or Infeasible when they do not fit), the pod cgroup following around the container updates, and the pod status reporting them',
  },
  {
    name: 'ExtendWebSocketsToKubelet',
    supported: true,
    why: "the node API serves the API server's WebSockets itself, as the v1.37 kubelet does: v5 exec and attach are translated to the runtime's SPDY remotecommand streams (stdin's close signal included), port-forward's tunnelled SPDY is carried to the runtime's streaming server, and older protocols are still proxied to the runtime (server/nodeapi/streamtranslator.ts, streamtunnel.ts)",
  },
  {
    name: 'InPlacePodVerticalScalingInitContainers',
    supported: true,
    why: 'init containers that run to completion are resized as sidecars and regular containers are: allocated, reported and, while running, updated in place, as the v1.37 kubelet (its gate locked on) does',
  },
  {
    name: 'InPlacePodVerticalScalingMemoryBackedVolumes',
    supported: false,
    why: 'the size of a Memory emptyDir does not follow a resize',
  },
  {
    name: 'UserNamespacesHostNetworkSupport',
    supported: false,
    why: 'its gate is alpha and off in v1.37, so no kubelet declares it; nor does any runtime here report the CRI feature user_namespaces_host_network (containerd 1.6 reports no features; the simulated runtime gives pods user namespaces but not with the host network)',
  },
  {
    name: 'DRANodeAllocatableResources',
    supported: false,
    why: 'dynamic resource allocation is not supported',
  },
  { name: 'VolumeBindMountOptions', supported: false, why: 'bind mount options of volumes are not applied' },
  {
    name: 'DRAOptionalNodeOperations',
    supported: false,
    why: 'dynamic resource allocation is not supported',
  },
];

/** The names a VirtualNode declares, sorted as the kubelet sorts them. */
export function declaredFeatures(table: readonly DeclarableFeature[] = DeclarableFeatures): string[] {
  return table
    .filter((f) => f.supported)
    .map((f) => f.name)
    .sort();
}

/** Sets `declaredFeatures` (left out when empty, as the API server leaves an empty list out). */
export function declaredFeaturesSetter(names: readonly string[] = declaredFeatures()): Setter {
  return (s) => {
    const { declaredFeatures: _old, ...rest } = s;
    return names.length > 0 ? { ...rest, declaredFeatures: [...names] } : rest;
  };
}

// ---- what a pod needs (component-helpers nodedeclaredfeatures: each feature's InferForScheduling and
// InferForUpdate; none of the v1.37 features has a MaxVersion, so each counts for a v1.37 node) ----

/** The kubelet's admit reason for a pod that needs an undeclared feature (lifecycle.PodFeatureUnsupported). */
export const PodFeatureUnsupported = 'PodFeatureUnsupported';
/** The Event reason for a pod update that needs an undeclared feature (events.FailedNodeDeclaredFeaturesCheck). */
export const FailedNodeDeclaredFeaturesCheck = 'FailedNodeDeclaredFeaturesCheck';

type Spec = Pick<
  PodSpec,
  'containers' | 'initContainers' | 'ephemeralContainers' | 'hostNetwork' | 'hostUsers' | 'volumes'
>;

const allContainers = (spec: Spec): readonly Pick<Container, 'volumeMounts' | 'restartPolicyRules'>[] => [
  ...(spec.containers ?? []),
  ...(spec.initContainers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

/** What a pod needs of the node to be scheduled and run there, per feature (false: nothing). */
const SchedulingNeeds: Readonly<Record<string, (spec: Spec) => boolean>> = {
  // A RestartAllContainers rule of a regular or init container.
  RestartAllContainersOnContainerExits: (spec) =>
    [...(spec.containers ?? []), ...(spec.initContainers ?? [])].some((c) =>
      (c.restartPolicyRules ?? []).some((r) => r.action === 'RestartAllContainers'),
    ),
  // A pod in user namespaces on the host network.
  UserNamespacesHostNetworkSupport: (spec) => spec.hostNetwork === true && spec.hostUsers === false,
  // Any container's volume mount with bindMountOptions (a v1.37 alpha field our types leave out).
  VolumeBindMountOptions: (spec) =>
    allContainers(spec).some((c) =>
      (c.volumeMounts ?? []).some((m) => {
        const opts = (m as { bindMountOptions?: unknown }).bindMountOptions;
        return Array.isArray(opts) && opts.length > 0;
      }),
    ),
};

/** What a pod update needs of the node it runs on, per feature (false: nothing). */
const UpdateNeeds: Readonly<Record<string, (old: PodSpec, pod: PodSpec) => boolean>> = {
  // Pod-level resources (spec.resources) changed, set on either side.
  InPlacePodLevelResourcesVerticalScaling: (old, pod) => {
    const a = podLevelResources(old);
    const b = podLevelResources(pod);
    if (a === undefined && b === undefined) return false;
    return !resourcesSemanticEqual(a, b);
  },
  // The resources of an init container that is not a sidecar changed.
  InPlacePodVerticalScalingInitContainers: (old, pod) =>
    (old.initContainers ?? []).some(
      (c, i) => c.restartPolicy !== 'Always' && !deepEqual(c.resources, pod.initContainers?.[i]?.resources),
    ),
  // The size limit of a Memory emptyDir changed (volumes in the same places, both with a limit).
  InPlacePodVerticalScalingMemoryBackedVolumes: (old, pod) => {
    const was = old.volumes ?? [];
    const now = pod.volumes ?? [];
    if (was.length !== now.length) return false;
    return now.some((v, i) => {
      const o = was[i];
      if (!o || v.name !== o.name || v.emptyDir?.medium !== 'Memory') return false;
      const a = o.emptyDir?.sizeLimit;
      const b = v.emptyDir.sizeLimit;
      if (a === undefined || a === null || b === undefined || b === null) return false;
      return !quantitiesEqual(a, b);
    });
  },
};

/** The registered feature names, sorted as the framework sorts its registry (the order of its answers). */
const RegistryNames: readonly string[] = DeclarableFeatures.map((f) => f.name).sort();

/** Features a pod needs to be admitted (kubelet: Framework.InferForPodScheduling), sorted. */
export function inferForPodScheduling(spec: PodSpec): string[] {
  return RegistryNames.filter((name) => SchedulingNeeds[name]?.(spec) === true);
}

/** Features a pod update needs (kubelet: Framework.InferForPodUpdate), sorted. */
export function inferForPodUpdate(old: PodSpec, pod: PodSpec): string[] {
  return RegistryNames.filter((name) => UpdateNeeds[name]?.(old, pod) === true);
}

/** The kubelet's words for the features a node lacks. */
export function missingFeaturesMessage(missing: readonly string[]): string {
  return `Pod requires node features that are not available: ${missing.join(', ')}`;
}

/** Of `required`, those `declared` lacks, in order (kubelet: MatchNodeFeatureSet's UnsatisfiedRequirements). */
export function unsatisfiedFeatures(required: readonly string[], declared: readonly string[]): string[] {
  return required.filter((f) => !declared.includes(f));
}

/**
 * The kubelet's declared-features admit handler (lifecycle.declaredFeaturesAdmitHandler): a pod that needs a
 * feature the node does not declare is refused with PodFeatureUnsupported.
 */
export function admitDeclaredFeatures(
  pod: Pick<Pod, 'spec'>,
  declared: readonly string[],
): { admit: true } | { admit: false; reason: string; message: string } {
  const missing = unsatisfiedFeatures(inferForPodScheduling(pod.spec), declared);
  if (missing.length === 0) return { admit: true };
  return { admit: false, reason: PodFeatureUnsupported, message: missingFeaturesMessage(missing) };
}

/**
 * The warning the kubelet records when an admitted pod is updated in a way that needs a feature the node does
 * not declare (HandlePodUpdates); undefined when it needs none. The update is synced all the same.
 */
export function podUpdateFeaturesWarning(
  old: Pick<Pod, 'spec'>,
  pod: Pick<Pod, 'spec'>,
  declared: readonly string[],
): { type: 'Warning'; reason: string; message: string } | undefined {
  const missing = unsatisfiedFeatures(inferForPodUpdate(old.spec, pod.spec), declared);
  if (missing.length === 0) return undefined;
  return {
    type: 'Warning',
    reason: FailedNodeDeclaredFeaturesCheck,
    message: missingFeaturesMessage(missing),
  };
}

/** Pod-level `spec.resources`. */
function podLevelResources(spec: PodSpec): unknown {
  return spec.resources;
}

function quantitiesEqual(a: string | number, b: string | number): boolean {
  try {
    return parseQuantityNano(a) === parseQuantityNano(b);
  } catch {
    return String(a) === String(b);
  }
}

/**
 * apimachinery's Semantic.DeepEqual of two ResourceRequirements: quantities by value, an empty map or list the
 * same as none; either side may be absent (a nil pointer, equal only to another).
 */
function resourcesSemanticEqual(a: unknown, b: unknown): boolean {
  if (a === undefined || a === null || b === undefined || b === null)
    return (a ?? undefined) === (b ?? undefined);
  if (!isRecord(a) || !isRecord(b)) return deepEqual(a, b);
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[key];
    const y = b[key];
    if (key === 'limits' || key === 'requests') {
      const xm = isRecord(x) ? x : {};
      const ym = isRecord(y) ? y : {};
      const names = new Set([...Object.keys(xm), ...Object.keys(ym)]);
      for (const n of names) {
        const q = xm[n];
        const r = ym[n];
        if (q === undefined || r === undefined) return false;
        if (!quantitiesEqual(q as string | number, r as string | number)) return false;
      }
    } else if (!deepEqual(emptyAsAbsent(x), emptyAsAbsent(y))) return false;
  }
  return true;
}

function emptyAsAbsent(v: unknown): unknown {
  if (Array.isArray(v) && v.length === 0) return undefined;
  if (isRecord(v) && Object.keys(v).length === 0) return undefined;
  return v;
}

/** Structural equality of JSON values, key order aside (reflect.DeepEqual of the decoded objects). */
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]))
    );
  }
  if (!isRecord(a) || !isRecord(b)) return false;
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

/**
 * Node declared features (NodeDeclaredFeatures, GA in v1.37): the kubelet lists in `status.declaredFeatures` the
 * registered features (component-helpers nodedeclaredfeatures registry) it supports, and the scheduler and the
 * API server keep pods and updates that need one away from nodes that do not declare it.
 *
 * A VirtualNode declares a feature only when it does what the feature promises. Each v1.37 feature is listed
 * here with the reason it is or is not declared; basic in-place resize is GA and not a declared feature.
 */
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
    supported: false,
    why: 'container restart rules (ContainerRestartRules) are not implemented',
  },
  {
    name: 'InPlacePodLevelResourcesVerticalScaling',
    supported: false,
    why: 'pod-level resources (spec.resources) are not resized; only container resources are',
  },
  {
    name: 'ExtendWebSocketsToKubelet',
    supported: false,
    why: "exec, attach and port-forward are passed to the runtime's streaming server, which is not known to speak the v5 WebSocket protocols",
  },
  {
    name: 'InPlacePodVerticalScalingInitContainers',
    supported: false,
    why: 'init containers that run to completion are not resized (sidecars are)',
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

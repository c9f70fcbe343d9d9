/**
 * core/v1 Node and coordination/v1 Lease, the subset we write, in JSON wire shape.
 */
import type { ObjectMeta } from './core.js';

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface NodeAddress {
  type: 'InternalIP' | 'ExternalIP' | 'Hostname' | 'InternalDNS' | 'ExternalDNS';
  address: string;
}

export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
  /** Whether the kubelet runs in a user namespace (KubeletInUserNamespace, beta in v1.37). */
  runningInUserNamespace?: boolean;
  /** The node's swap (NodeSwap): set only when the host has some. */
  swap?: { capacity?: number };
}

/** A runtime handler and what it supports (RecursiveReadOnlyMounts, UserNamespacesSupport). */
export interface NodeRuntimeHandler {
  /** "" for the default handler. */
  name: string;
  features?: { recursiveReadOnlyMounts?: boolean; userNamespaces?: boolean };
}

/** What the CRI implementation supports independent of handlers (SupplementalGroupsPolicy). */
export interface NodeFeatures {
  supplementalGroupsPolicy?: boolean;
}

export interface NodeStatus {
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
  conditions?: NodeCondition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: { kubeletEndpoint: { Port: number } };
  nodeInfo?: NodeSystemInfo;
  images?: { names: string[]; sizeBytes?: number }[];
  /** Registered node features this node supports (NodeDeclaredFeatures). */
  declaredFeatures?: string[];
  /** The runtime's handlers; null in a patch removes the list (the runtime reports none). */
  runtimeHandlers?: NodeRuntimeHandler[] | null;
  features?: NodeFeatures;
}

export interface NodeTaintSpec {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  timeAdded?: string;
}

export interface Node {
  apiVersion?: 'v1';
  kind?: 'Node';
  metadata: ObjectMeta;
  spec?: {
    taints?: NodeTaintSpec[];
    unschedulable?: boolean;
    podCIDR?: string;
    podCIDRs?: string[];
    providerID?: string;
  };
  status?: NodeStatus;
}

export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: ObjectMeta;
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    renewTime?: string;
    acquireTime?: string;
    leaseTransitions?: number;
  };
}

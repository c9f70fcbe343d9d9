/**
 * The seam between the VirtualNode controller and one served node. The controller decides when a node
 * starts, changes, drains and goes; a ManagedNode (src/app/kubeletnode.ts: Runtime + NodeAgent + Kubelet) does
 * it. Tests pass recording fakes.
 */
import type { Pod } from '../api/core.js';
import type { Node } from '../api/node.js';
import type { PodCertificateRequest } from '../api/podcertificaterequest.js';
import type { Service } from '../api/service.js';
import type { VirtualNode, VirtualNodeSpec } from '../api/virtualnode.js';
import type { Informer } from '../kube/informer.js';

/** What the controller needs from one served node. */
export interface ManagedNode {
  readonly nodeName: string;
  /** Starts the node; resolves once the Node is registered. May be called once. */
  start(): Promise<void>;
  /** Applies a changed spec that does not need a restart (labels, taints, capacity). */
  update(spec: VirtualNodeSpec): Promise<void>;
  /**
   * The node's host is going away (its VirtualNode is deleted): starts the kubelet's graceful node shutdown
   * and resolves true once it is carried out, at once when the node has none configured. Safe to call
   * repeatedly. Absent: the node has no shutdown to wait for.
   */
  shutdown?(): Promise<boolean>;
  /** Deletes this node's pods; resolves true once none is left. Safe to call repeatedly. */
  drain(): Promise<boolean>;
  /** Deletes the Node and its Lease. */
  remove(): Promise<void>;
  /** Stops every loop without touching API objects (process shutdown or before remove). */
  stop(): Promise<void>;
  /** Pod events for pods bound to this node. */
  podAdded(pod: Pod): void;
  podUpdated(oldPod: Pod, pod: Pod): void;
  podDeleted(pod: Pod): void;
  /** Current health for the VirtualNode status. Must not block. */
  observe(): ManagedNodeObservation;
}

export interface ManagedNodeObservation {
  registered: boolean;
  /** Problems that make the node NotReady (empty = Ready). */
  problems: string[];
  runtimeReady: boolean;
  runtimeMessage?: string;
  runtime?: { name: string; version: string };
  internalIP?: string;
  lastHeartbeatTime?: string;
  pods: { total: number; running: number; pending: number };
}

/**
 * What the controller watches for one served node and hands to it. The controller starts the informers once
 * the node's start settled and stops them before the node; the node reads them and never starts or stops them.
 */
export interface NodeWatches {
  /** The pods bound to the node (indexed by PodsByNodeIndex). */
  pods: Informer<Pod>;
  /** The Node itself, as the kubelet's node informer: admission reads it. */
  node?: Informer<Node>;
  /** The node's PodCertificateRequests (podCertificate sources of projected volumes read their outcome). */
  podCertificateRequests?: Informer<PodCertificateRequest>;
  /** The operator's Services by namespace (service link variables). */
  services?: (namespace: string) => readonly Service[];
}

export interface ManagedNodeFactory {
  create(vn: VirtualNode, spec: VirtualNodeSpec, nodeName: string, watches: NodeWatches): ManagedNode;
  /** Whether a spec change needs a fresh ManagedNode (e.g. another runtime). */
  needsRestart(oldSpec: VirtualNodeSpec, newSpec: VirtualNodeSpec): boolean;
}

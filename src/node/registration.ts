/**
 * Node registration (kubelet: kubelet_node_status.go registerWithAPIServer / tryRegisterWithAPIServer) and
 * removal.
 *
 * Registration creates the Node with its labels, taints and initial status. If a Node of that name exists
 * (an operator restart, or someone created it), it is adopted: the labels and taints this module owns are
 * brought to what the VirtualNode asks for, with a conditional merge patch, and nothing else is touched.
 * Ownership is remembered in annotations, so a label or taint removed from the spec is removed from the Node
 * while those added by others (the node lifecycle controller's taints, an admin's labels) stay.
 * Failures are retried with back-off (100 ms doubling to 7 s) until registration succeeds or is aborted.
 */
import type { Node, NodeStatus, NodeTaintSpec } from '../api/node.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorKind, errorMessage } from '../util/errors.js';
import { silentLogger, type NodeAPI, type NodeLogger } from './api.js';

export const VIRTUAL_NODE_LABEL = 'kubelet-operator.dev/virtual-node';
export const OWNED_LABELS_ANNOTATION = 'kubelet-operator.dev/owned-labels';
export const OWNED_TAINTS_ANNOTATION = 'kubelet-operator.dev/owned-taints';
/** The kubelet sets this on every Node it registers (attach/detach is the controller's job). */
const ATTACH_DETACH_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

const REGISTER_BACKOFF_INITIAL_MS = 100;
const REGISTER_BACKOFF_MAX_MS = 7_000;

export interface NodeIdentity {
  nodeName: string;
  /** Name of the VirtualNode this Node plays. */
  virtualNodeName: string;
  /** Extra labels from the VirtualNode spec. */
  labels: Record<string, string>;
  /** Taints from the VirtualNode spec; none otherwise. */
  taints: Pick<NodeTaintSpec, 'key' | 'value' | 'effect'>[];
}

/**
 * The Node's labels: the kubelet's defaults and ours, then the spec's (which may override the defaults,
 * as the kubelet's --node-labels may), except the hostname and our VirtualNode label, which identify the
 * node and are not negotiable.
 */
export function desiredLabels(id: NodeIdentity): Record<string, string> {
  return {
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': 'virtual',
    type: 'virtual-kubelet',
    ...id.labels,
    'kubernetes.io/hostname': id.nodeName,
    [VIRTUAL_NODE_LABEL]: id.virtualNodeName,
  };
}

const taintKey = (t: Pick<NodeTaintSpec, 'key' | 'effect'>): string => `${t.key}:${t.effect}`;

function desiredTaints(id: NodeIdentity): NodeTaintSpec[] {
  // One taint per key and effect, the last one winning, as the API server would insist.
  const byKey = new Map<string, NodeTaintSpec>();
  for (const t of id.taints) {
    byKey.set(
      taintKey(t),
      t.value ? { key: t.key, value: t.value, effect: t.effect } : { key: t.key, effect: t.effect },
    );
  }
  return [...byKey.values()];
}

function ownershipAnnotations(
  labels: Record<string, string>,
  taints: NodeTaintSpec[],
): Record<string, string> {
  return {
    [OWNED_LABELS_ANNOTATION]: Object.keys(labels).sort().join(','),
    [OWNED_TAINTS_ANNOTATION]: taints.map(taintKey).sort().join(','),
  };
}

/** The Node object to create (kubelet: initialNode), with `status` as computed by the status loop. */
export function buildNode(id: NodeIdentity, status: NodeStatus): Node {
  const labels = desiredLabels(id);
  const taints = desiredTaints(id);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: id.nodeName,
      labels,
      annotations: { [ATTACH_DETACH_ANNOTATION]: 'true', ...ownershipAnnotations(labels, taints) },
    },
    spec: taints.length ? { taints } : {},
    status,
  };
}

const splitList = (s: string | undefined): string[] => (s ? s.split(',').filter(Boolean) : []);

function sameTaint(a: NodeTaintSpec, b: NodeTaintSpec): boolean {
  return a.key === b.key && a.effect === b.effect && (a.value ?? '') === (b.value ?? '');
}

/**
 * The merge patch that brings an existing Node's owned labels and taints to `id`, or undefined when it
 * already matches. The patch names the Node's resourceVersion, so a concurrent writer makes it fail with
 * Conflict instead of being overwritten.
 */
export function reconcileNodePatch(existing: Node, id: NodeIdentity): Record<string, unknown> | undefined {
  const labels = desiredLabels(id);
  const taints = desiredTaints(id);
  const annotations = existing.metadata.annotations ?? {};
  const current = existing.metadata.labels ?? {};

  const labelPatch: Record<string, string | null> = {};
  for (const k of splitList(annotations[OWNED_LABELS_ANNOTATION])) {
    if (!(k in labels) && k in current) labelPatch[k] = null;
  }
  for (const [k, v] of Object.entries(labels)) if (current[k] !== v) labelPatch[k] = v;

  const previouslyOwned = new Set(splitList(annotations[OWNED_TAINTS_ANNOTATION]));
  const wanted = new Set(taints.map(taintKey));
  const existingTaints = existing.spec?.taints ?? [];
  const kept = existingTaints.filter((t) => !previouslyOwned.has(taintKey(t)) && !wanted.has(taintKey(t)));
  const nextTaints = [...kept, ...taints];
  const taintsChanged =
    nextTaints.length !== existingTaints.length ||
    !nextTaints.every((t) => existingTaints.some((e) => sameTaint(e, t)));

  const ownership = ownershipAnnotations(labels, taints);
  const annotationPatch: Record<string, string> = {};
  for (const [k, v] of Object.entries(ownership)) if (annotations[k] !== v) annotationPatch[k] = v;

  if (!Object.keys(labelPatch).length && !taintsChanged && !Object.keys(annotationPatch).length) {
    return undefined;
  }
  const metadata: Record<string, unknown> = { resourceVersion: existing.metadata.resourceVersion };
  if (Object.keys(labelPatch).length) metadata['labels'] = labelPatch;
  if (Object.keys(annotationPatch).length) metadata['annotations'] = annotationPatch;
  const patch: Record<string, unknown> = { metadata };
  if (taintsChanged) patch['spec'] = { taints: nextTaints.length ? nextTaints : null };
  return patch;
}

export interface RegisterOptions {
  clock: Clock;
  signal?: AbortSignal;
  logger?: NodeLogger;
  /** Called when this registration created the Node (rather than adopting an existing one). */
  onCreated?: () => void;
}

/**
 * Creates the Node, or adopts an existing one (see the module comment). Retries every failure with back-off
 * until it succeeds; rejects only when `signal` aborts (with a KindError Unavailable).
 */
export async function registerNode(
  api: Pick<NodeAPI, 'createNode' | 'getNode' | 'patchNode'>,
  node: Node,
  id: NodeIdentity,
  opts: RegisterOptions,
): Promise<Node> {
  const logger = opts.logger ?? silentLogger;
  const name = id.nodeName;
  let delay = REGISTER_BACKOFF_INITIAL_MS;
  for (;;) {
    if (opts.signal?.aborted) throw new KindError('Unavailable', 'node registration aborted', { node: name });
    try {
      return await tryRegister(api, node, id, opts.onCreated);
    } catch (err) {
      logger.warn('unable to register node with API server', {
        node: name,
        kind: errorKind(err),
        error: errorMessage(err),
      });
    }
    try {
      await opts.clock.sleep(delay, opts.signal);
    } catch {
      throw new KindError('Unavailable', 'node registration aborted', { node: name });
    }
    delay = Math.min(delay * 2, REGISTER_BACKOFF_MAX_MS);
  }
}

async function tryRegister(
  api: Pick<NodeAPI, 'createNode' | 'getNode' | 'patchNode'>,
  node: Node,
  id: NodeIdentity,
  onCreated: (() => void) | undefined,
): Promise<Node> {
  try {
    const created = await api.createNode(node);
    onCreated?.();
    return created;
  } catch (err) {
    if (errorKind(err) !== 'AlreadyExists') throw err;
  }
  const existing = await api.getNode(id.nodeName);
  const patch = reconcileNodePatch(existing, id);
  return patch ? await api.patchNode(id.nodeName, patch) : existing;
}

/**
 * Removes the Node and its Lease (when the VirtualNode goes away). Absent objects count as removed. With
 * `uid`, only that incarnation of the Node is deleted. Stop the NodeAgent first, or it renews the Lease again.
 */
export async function deleteNode(
  api: Pick<NodeAPI, 'deleteNode' | 'deleteLease'>,
  nodeName: string,
  opts: { uid?: string } = {},
): Promise<void> {
  const ignoreNotFound = (err: unknown): void => {
    if (errorKind(err) !== 'NotFound') throw err;
  };
  await api.deleteNode(nodeName, opts.uid ? { uid: opts.uid } : {}).catch(ignoreNotFound);
  await api.deleteLease(nodeName).catch(ignoreNotFound);
}

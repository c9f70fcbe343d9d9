/**
 * Which VirtualNode may serve a Node name. Two VirtualNodes can name the same Node (one by spec.nodeName,
 * the other by its own name, or both by spec.nodeName); a Node has one kubelet, so one of them serves it and
 * the other reports the conflict. The oldest claim wins (creationTimestamp, then name), as every replica
 * decides from the same objects: the winner keeps the Node until it is deleted and gone, then the next
 * oldest takes it. Pure.
 */
import { nodeNameOf, type VirtualNode, type VirtualNodeSpec } from '../api/virtualnode.js';

/** The Node name a VirtualNode claims, read from the raw spec (it may not parse). */
export function claimedNodeName(vn: VirtualNode): string {
  const raw = (vn.spec as { nodeName?: unknown } | undefined)?.nodeName;
  return typeof raw === 'string' && raw !== '' ? raw : (vn.metadata.name ?? '');
}

/** True when `a` claimed first: earlier creationTimestamp, then the smaller name. */
export function claimedBefore(a: VirtualNode, b: VirtualNode): boolean {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb;
  return (a.metadata.name ?? '') < (b.metadata.name ?? '');
}

/**
 * The VirtualNode that serves the Node `vn` would register, when it is another one: the oldest of every
 * VirtualNode in `all` claiming that Node name, deleting ones included (they hold the Node until drained).
 * `valid` tells whether a VirtualNode's spec parses (an invalid one never serves, so it claims nothing).
 * Undefined when `vn` itself may serve it.
 */
export function nodeNameHolder(
  vn: VirtualNode,
  spec: Pick<VirtualNodeSpec, 'nodeName'>,
  all: readonly VirtualNode[],
  valid: (other: VirtualNode) => boolean,
): VirtualNode | undefined {
  const nodeName = nodeNameOf(vn, spec);
  let holder: VirtualNode | undefined;
  for (const other of all) {
    if (other.metadata.name === vn.metadata.name || claimedNodeName(other) !== nodeName) continue;
    if (!claimedBefore(other, vn) || (holder && !claimedBefore(other, holder))) continue;
    if (valid(other)) holder = other;
  }
  return holder;
}

/** The longest Node name a Node can register with: its kubernetes.io/hostname label value is a DNS label. */
export const MAX_NODE_NAME_LABEL = 63;

/** Why a Node of this name cannot be registered, or undefined. */
export function nodeNameProblem(nodeName: string): string | undefined {
  if (nodeName.length > MAX_NODE_NAME_LABEL) {
    return (
      `node name ${JSON.stringify(nodeName.slice(0, 20) + '...')} has ${nodeName.length} characters; the ` +
      `Node's kubernetes.io/hostname label takes at most ${MAX_NODE_NAME_LABEL}: set spec.nodeName`
    );
  }
  return undefined;
}

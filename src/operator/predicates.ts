/**
 * Which VirtualNode watch updates need a sync. A change of the status alone does not: the operator writes
 * that status itself, and syncing on it would make every status write trigger the next one. What the status
 * shows is
 * refreshed every status period anyway, so a status edited by someone else is put right within one.
 */
import type { VirtualNode } from '../api/virtualnode.js';
import { canonicalJSON } from '../util/canonical.js';

/**
 * The object without what a status write changes (status, resourceVersion). managedFields never reach here:
 * the informer's transform strips them (stripManagedFields).
 */
function withoutStatus(vn: VirtualNode): string {
  const { resourceVersion: _rv, ...meta } = vn.metadata;
  return canonicalJSON({ metadata: meta, spec: vn.spec });
}

/** True when old and next differ in more than their status (spec, labels, finalizers, deletion, ...). */
export function needsSync(old: VirtualNode, next: VirtualNode): boolean {
  return withoutStatus(old) !== withoutStatus(next);
}

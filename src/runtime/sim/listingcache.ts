/**
 * The simulated runtime's answers to label listings, kept while nothing they report has changed (the store's
 * revision, store.ts). A node's PLEG lists every sandbox and container of the node once a second; on a node
 * whose pods have settled the answer is the same each time, and converting every record again was most of
 * what a settled node's relist cost. The same frozen array is handed out again instead, so that what is
 * built from it downstream can tell by identity that nothing changed (kuberuntime/podstatus.ts keeps its
 * grouping into pods, pleg/generic.ts skips the diff).
 *
 * Only listings by labels alone are kept, and not those of one pod (by pod UID label: a pod's sync lists
 * its own, and there are as many of those as pods): in practice the node's own label, asked by the PLEG and
 * the container GC. A filter by ID, state or sandbox is answered afresh each time.
 */
import { PodUIDLabel } from '../labels.js';
import type { ContainerFilter, SandboxFilter } from '../types.js';

/** Listings kept per kind; beyond it the oldest goes. */
const MAX_ENTRIES = 4;

export class ListingCache<T> {
  private readonly entries = new Map<string, { revision: number; items: readonly T[] }>();

  /** `list()` answers afresh; its answer is kept (frozen) when the filter is one this cache keeps. */
  get(filter: SandboxFilter | ContainerFilter | undefined, revision: number, list: () => T[]): readonly T[] {
    const key = keyOf(filter);
    if (key === undefined) return list();
    const hit = this.entries.get(key);
    if (hit && hit.revision === revision) return hit.items;
    const items = Object.freeze(list());
    this.entries.delete(key);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { revision, items });
    return items;
  }
}

/** The cache key of a listing by labels alone (not by pod UID); undefined for any other filter. */
function keyOf(filter: SandboxFilter | ContainerFilter | undefined): string | undefined {
  if (filter === undefined) return '';
  const f = filter as SandboxFilter & ContainerFilter;
  if (f.id !== undefined || f.state !== undefined || f.podSandboxId !== undefined) return undefined;
  const selector = f.labelSelector ?? {};
  if (Object.hasOwn(selector, PodUIDLabel)) return undefined;
  const keys = Object.keys(selector).sort();
  return keys.length === 0 ? '' : JSON.stringify(keys.map((k) => [k, selector[k]]));
}

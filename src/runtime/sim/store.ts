/**
 * The simulated runtime's records and their indexes. Invariants:
 * - every container's sandbox is in the store and lists it (`SandboxRecord.containers`, oldest first);
 * - `byUID` holds every sandbox under its metadata UID (oldest first). A sandbox whose
 *   `io.kubernetes.pod.uid` label says another UID, or a container whose label differs from its sandbox's
 *   metadata UID (never, from the kubelet: it sets both from the pod), is also in a `stray` index under
 *   that label, so a list by pod UID label finds exactly the labelled records, in creation order;
 * - a name is held by the one record whose name key (names.ts) it is, until that record is removed. Keys
 *   of records named without '_' are found through `byUID`; the others are kept in `oddNames`.
 * Lookups by ID, by sandbox and by pod UID touch only the matching records (and their pod's); only an
 * unfiltered list (or a filter on other labels alone) walks everything. `visited` counts records examined,
 * so tests can check that per-call work does not grow with the number of containers.
 */
import { PodUIDLabel } from '../labels.js';
import type { ContainerFilter, SandboxFilter } from '../types.js';
import { fewAdd, fewDelete, fewList, type Few } from './few.js';
import { containerNameKey, isOddName, parseNameKey, sandboxNameKey } from './names.js';
import type { ContainerRecord, SandboxRecord } from './records.js';

type AnyRecord = SandboxRecord | ContainerRecord;

export class SimStore {
  /** In creation order: the order of unfiltered lists. */
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly containers = new Map<string, ContainerRecord>();
  private readonly byUID = new Map<string, Few<SandboxRecord>>();
  private readonly straySandboxes = new Map<unknown, Few<SandboxRecord>>();
  private readonly strayContainers = new Map<unknown, Few<ContainerRecord>>();
  private readonly oddNames = new Map<string, string>();
  /** Records examined by lookups and lists since construction. */
  visited = 0;
  /**
   * Moves whenever a listing could answer differently: a record added or removed here, or a sandbox's or
   * container's state changed (whoever changes one calls touch()). Nothing else a listing reports changes.
   */
  revision = 0;

  touch(): void {
    this.revision++;
  }

  /** Entries in each index (tests: a removed record leaves none behind). */
  indexSizes(): Record<'byUID' | 'straySandboxes' | 'strayContainers' | 'oddNames', number> {
    return {
      byUID: this.byUID.size,
      straySandboxes: this.straySandboxes.size,
      strayContainers: this.strayContainers.size,
      oddNames: this.oddNames.size,
    };
  }

  /** The ID of the record holding name key `key`, if any. */
  reservedBy(key: string): string | undefined {
    const odd = this.oddNames.get(key);
    if (odd !== undefined) return odd;
    const parsed = parseNameKey(key);
    if (!parsed) return undefined;
    for (const s of fewList(this.byUID.get(parsed.uid))) {
      if (!parsed.container) {
        if (sandboxNameKey(s) === key) return s.id;
        continue;
      }
      for (const c of fewList(s.containers)) if (containerNameKey(c) === key) return c.id;
    }
    return undefined;
  }

  getSandbox(id: string): SandboxRecord | undefined {
    this.visited++;
    return this.sandboxes.get(id);
  }

  getContainer(id: string): ContainerRecord | undefined {
    this.visited++;
    return this.containers.get(id);
  }

  addSandbox(s: SandboxRecord): void {
    this.revision++;
    this.sandboxes.set(s.id, s);
    const uid = String(s.uid);
    this.byUID.set(uid, fewAdd(this.byUID.get(uid), s));
    if (isStray(s, uid)) addTo(this.straySandboxes, s.labels[PodUIDLabel], s);
    this.nameAdded(sandboxNameKey(s), s);
  }

  deleteSandbox(s: SandboxRecord): void {
    this.revision++;
    this.sandboxes.delete(s.id);
    const uid = String(s.uid);
    setOrDelete(this.byUID, uid, fewDelete(this.byUID.get(uid), s));
    if (isStray(s, uid)) deleteFrom(this.straySandboxes, s.labels[PodUIDLabel], s);
    this.nameDeleted(sandboxNameKey(s), s);
  }

  addContainer(c: ContainerRecord): void {
    this.revision++;
    this.containers.set(c.id, c);
    c.sandbox.containers = fewAdd(c.sandbox.containers, c);
    if (isStray(c, String(c.sandbox.uid))) addTo(this.strayContainers, c.labels[PodUIDLabel], c);
    this.nameAdded(containerNameKey(c), c);
  }

  deleteContainer(c: ContainerRecord): void {
    this.revision++;
    this.containers.delete(c.id);
    c.sandbox.containers = fewDelete(c.sandbox.containers, c);
    if (isStray(c, String(c.sandbox.uid))) deleteFrom(this.strayContainers, c.labels[PodUIDLabel], c);
    this.nameDeleted(containerNameKey(c), c);
  }

  listSandboxes(f: SandboxFilter = {}): SandboxRecord[] {
    const uid = f.labelSelector?.[PodUIDLabel];
    let candidates: Iterable<SandboxRecord>;
    if (f.id !== undefined) candidates = maybe(this.sandboxes.get(f.id));
    else if (uid !== undefined) candidates = this.sandboxesLabelled(uid);
    else candidates = this.sandboxes.values();
    const out: SandboxRecord[] = [];
    const selector = selectorOf(f.labelSelector);
    for (const s of candidates) {
      this.visited++;
      if (f.state !== undefined && s.state !== f.state) continue;
      if (selector && !matches(s.labels, selector)) continue;
      out.push(s);
    }
    return out;
  }

  listContainers(f: ContainerFilter = {}): ContainerRecord[] {
    const uid = f.labelSelector?.[PodUIDLabel];
    let candidates: Iterable<ContainerRecord>;
    if (f.id !== undefined) candidates = maybe(this.containers.get(f.id));
    else if (f.podSandboxId !== undefined)
      candidates = fewList(this.sandboxes.get(f.podSandboxId)?.containers);
    else if (uid !== undefined) candidates = this.containersLabelled(uid);
    else candidates = this.containers.values();
    const out: ContainerRecord[] = [];
    const selector = selectorOf(f.labelSelector);
    for (const c of candidates) {
      this.visited++;
      if (f.podSandboxId !== undefined && c.sandbox.id !== f.podSandboxId) continue;
      if (f.state !== undefined && c.state !== f.state) continue;
      if (selector && !matches(c.labels, selector)) continue;
      out.push(c);
    }
    return out;
  }

  /** The sandboxes whose pod UID label is `uid`, oldest first. */
  private sandboxesLabelled(uid: unknown): SandboxRecord[] {
    const pod = typeof uid === 'string' ? this.byUID.get(uid) : undefined;
    const found = fewList(pod).filter((s) => s.labels[PodUIDLabel] === uid);
    return inOrder(found, this.straySandboxes.get(uid), false);
  }

  /** The containers whose pod UID label is `uid`, oldest first. */
  private containersLabelled(uid: unknown): ContainerRecord[] {
    const pod = typeof uid === 'string' ? this.byUID.get(uid) : undefined;
    const found: ContainerRecord[] = [];
    for (const s of fewList(pod)) {
      for (const c of fewList(s.containers)) if (c.labels[PodUIDLabel] === uid) found.push(c);
    }
    return inOrder(found, this.strayContainers.get(uid), Array.isArray(pod));
  }

  private nameAdded(key: string, r: AnyRecord): void {
    if (isOddName(key, 'sandbox' in r)) this.oddNames.set(key, r.id);
  }

  private nameDeleted(key: string, r: AnyRecord): void {
    if (this.oddNames.get(key) === r.id) this.oddNames.delete(key);
  }
}

/** Labelled with a pod UID other than the one it is indexed under. */
function isStray(r: AnyRecord, uid: string): boolean {
  const label = r.labels[PodUIDLabel];
  return label !== undefined && label !== uid;
}

/**
 * `found` plus `strays`, in creation order (createdAt is strictly increasing across the runtime). `found`
 * is in order already unless it was gathered from several sandboxes (`mixed`).
 */
function inOrder<T extends AnyRecord>(found: T[], strays: Few<T>, mixed: boolean): T[] {
  const all = strays === undefined ? found : [...found, ...fewList(strays)];
  if (mixed || (strays !== undefined && found.length > 0))
    all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1));
  return all;
}

function maybe<T>(v: T | undefined): T[] {
  return v === undefined ? [] : [v];
}

/** A label selector as key, value pairs, taken apart once per listing rather than once per record. */
type Selector = readonly (readonly [string, string])[];

function selectorOf(selector: { [k: string]: string } | undefined): Selector | undefined {
  return selector === undefined ? undefined : Object.entries(selector);
}

function matches(labels: Readonly<{ [k: string]: string }>, selector: Selector): boolean {
  for (const [k, v] of selector) if (labels[k] !== v || !Object.hasOwn(labels, k)) return false;
  return true;
}

function addTo<T extends object>(index: Map<unknown, Few<T>>, key: unknown, v: T): void {
  index.set(key, fewAdd(index.get(key), v));
}

function deleteFrom<T extends object>(index: Map<unknown, Few<T>>, key: unknown, v: T): void {
  setOrDelete(index, key, fewDelete(index.get(key), v));
}

function setOrDelete<K, T extends object>(index: Map<K, Few<T>>, key: K, few: Few<T>): void {
  if (few === undefined) index.delete(key);
  else index.set(key, few);
}

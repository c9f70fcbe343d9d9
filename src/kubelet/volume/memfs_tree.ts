/**
 * The nodes of MemoryVolumeFS's tree and a directory's entries (see memfs.ts): a directory keeps its first
 * entry in itself, up to SMALL_DIR more as name, node pairs in one array, and a Map beyond that.
 */

/** Permission bits and owner. Never changed: entries with the same share one (chmod and chown swap it). */
export interface Meta {
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

/** A file's bytes, one char per byte (latin1): a string of them costs less than a Buffer and its store. */
export interface MemFile {
  meta: Meta;
  data: string;
}

export interface MemLink {
  meta: Meta;
  target: string;
}

/**
 * A directory's entries, in no order: the first in the directory itself (most of a pod's directories hold
 * one entry), the others in `more`, as name, node pairs in one exact-size array while there are up to
 * SMALL_DIR of them, in a Map beyond. Each name is in one place only; an empty `name0` is undefined.
 */
export interface MemDir {
  meta: Meta;
  name0: string | undefined;
  node0: MemNode | undefined;
  more: (string | MemNode)[] | Map<string, MemNode> | undefined;
}

export type MemNode = MemFile | MemDir | MemLink;

/** Entries a directory keeps in its pair array before it takes a Map. */
const SMALL_DIR = 8;

export const isFile = (n: MemNode): n is MemFile => 'data' in n;
export const isLink = (n: MemNode): n is MemLink => 'target' in n;
export const isDir = (n: MemNode): n is MemDir => 'more' in n;

export function emptyDir(meta: Meta): MemDir {
  return { meta, name0: undefined, node0: undefined, more: undefined };
}

export function getEntry(d: MemDir, name: string): MemNode | undefined {
  if (d.name0 === name) return d.node0;
  const more = d.more;
  if (more instanceof Map) return more.get(name);
  if (more) for (let i = 0; i < more.length; i += 2) if (more[i] === name) return more[i + 1] as MemNode;
  return undefined;
}

/** getEntry for the name path[i, end), without cutting it out of the path unless the directory is a Map. */
export function getEntryAt(d: MemDir, path: string, i: number, end: number): MemNode | undefined {
  if (isNameAt(d.name0, path, i, end)) return d.node0;
  const more = d.more;
  if (more instanceof Map) return more.get(path.slice(i, end));
  if (more)
    for (let k = 0; k < more.length; k += 2)
      if (isNameAt(more[k], path, i, end)) return more[k + 1] as MemNode;
  return undefined;
}

/** Whether `name` is a string equal to path[i, end). */
function isNameAt(name: string | MemNode | undefined, path: string, i: number, end: number): boolean {
  return typeof name === 'string' && name.length === end - i && path.startsWith(name, i);
}

/**
 * A directory of more than SMALL_DIR entries: its names in order as the last readdir sorted them, until one is
 * added or removed (a node's pods directory is read at every housekeeping, every 2 s).
 */
const sortedNames = new WeakMap<MemDir, readonly string[]>();

/** The directory's names, sorted (a new array each call). */
export function sortedEntryNames(d: MemDir): string[] {
  if (!(d.more instanceof Map)) return entryNames(d).sort();
  let names = sortedNames.get(d);
  if (!names) sortedNames.set(d, (names = entryNames(d).sort()));
  return names.slice();
}

/** Adds the entry, or replaces the node of an entry of that name. */
export function setEntry(d: MemDir, name: string, node: MemNode): void {
  sortedNames.delete(d);
  const more = d.more;
  if (d.name0 === name || (d.name0 === undefined && getEntry(d, name) === undefined)) {
    d.name0 = name;
    d.node0 = node;
  } else if (more instanceof Map) {
    more.set(name, node);
  } else if (!more) {
    d.more = [name, node];
  } else {
    const i = more.indexOf(name);
    if (i >= 0 && i % 2 === 0) more[i + 1] = node;
    else if (more.length < 2 * SMALL_DIR) d.more = [...more, name, node];
    else d.more = new Map<string, MemNode>([...pairs(more), [name, node]]);
  }
}

export function deleteEntry(d: MemDir, name: string): void {
  sortedNames.delete(d);
  const more = d.more;
  if (d.name0 === name) {
    d.name0 = d.node0 = undefined;
  } else if (more instanceof Map) {
    more.delete(name);
  } else if (more) {
    const i = more.indexOf(name);
    if (i >= 0 && i % 2 === 0)
      d.more = more.length === 2 ? undefined : more.filter((_, j) => j !== i && j !== i + 1);
  }
}

export function entryNames(d: MemDir): string[] {
  const more = d.more;
  const names = more instanceof Map ? [...more.keys()] : more ? pairs(more).map(([n]) => n) : [];
  if (d.name0 !== undefined) names.push(d.name0);
  return names;
}

function pairs(more: (string | MemNode)[]): [string, MemNode][] {
  const out: [string, MemNode][] = [];
  for (let i = 0; i < more.length; i += 2) out.push([more[i] as string, more[i + 1] as MemNode]);
  return out;
}

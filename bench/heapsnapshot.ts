// `tsx bench/heapsnapshot.ts BASE.heapsnapshot [AFTER.heapsnapshot --per N] [--top K] [--retained]
//   [--owner KEY]`
// Summarises V8 heap snapshots (as `npm run bench -- scale --heap-snapshots DIR` writes them): live bytes by
// class (self size), and with two snapshots the difference per unit (e.g. per pod). --retained also computes
// the dominator tree (Cooper, Harvey, Kennedy: "A Simple, Fast Dominance Algorithm") and prints the classes
// whose instances retain the most, counting an instance only when no other instance of a listed class
// dominates it, so nested objects are not counted twice. --owner KEY (a line of "new objects by owner", e.g.
// `SettledSyncs.byUID`) splits that owner's new objects by class and by the edge that reaches them.
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
    node_count: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Graph {
  count: number;
  /** Class name per node (an index into names). */
  cls: Int32Array;
  names: string[];
  self: Float64Array;
  /** The snapshot's object ids: stable for one object across snapshots of one process. */
  id: Float64Array;
  firstEdge: Uint32Array;
  edgeTo: Uint32Array;
  /** Edge is weak (not retaining). */
  weak: Uint8Array;
  /** Edge name: a property name, or the element index as a string. */
  edgeName: (j: number) => string;
  total: number;
}

function load(file: string): Graph {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const m = s.snapshot.meta;
  const nf = m.node_fields.length;
  const ef = m.edge_fields.length;
  const [fType, fName, fSelf, fEdges, fId] = ['type', 'name', 'self_size', 'edge_count', 'id'].map((f) =>
    m.node_fields.indexOf(f),
  ) as [number, number, number, number, number];
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => m.edge_fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const nodeTypes = m.node_types[0];
  const edgeTypes = m.edge_types[0];
  const weakType = edgeTypes.indexOf('weak');
  const byIndex = new Set(['element', 'hidden'].map((t) => edgeTypes.indexOf(t)));
  const count = s.nodes.length / nf;
  const names: string[] = [];
  const nameIx = new Map<string, number>();
  const cls = new Int32Array(count);
  const self = new Float64Array(count);
  const id = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  let total = 0;
  let e = 0;
  for (let i = 0; i < count; i++) {
    const b = i * nf;
    const type = nodeTypes[s.nodes[b + fType]!]!;
    const name = s.strings[s.nodes[b + fName]!] ?? '';
    let c: string;
    switch (type) {
      case 'object':
        c = name.startsWith('system / ') ? `(system) ${name.slice(9)}` : name;
        break;
      case 'closure':
        c = `(closure) ${name || 'anonymous'}`;
        break;
      case 'string':
      case 'concatenated string':
      case 'sliced string':
        c = '(string)';
        break;
      case 'array':
        c = `(array) ${name}`;
        break;
      case 'hidden':
        c = `(hidden) ${name}`;
        break;
      default:
        c = `(${type})`;
    }
    let k = nameIx.get(c);
    if (k === undefined) {
      k = names.length;
      names.push(c);
      nameIx.set(c, k);
    }
    cls[i] = k;
    self[i] = s.nodes[b + fSelf]!;
    id[i] = s.nodes[b + fId]!;
    total += self[i]!;
    firstEdge[i] = e;
    e += s.nodes[b + fEdges]!;
  }
  firstEdge[count] = e;
  const edgeTo = new Uint32Array(e);
  const weak = new Uint8Array(e);
  for (let j = 0; j < e; j++) {
    edgeTo[j] = s.edges[j * ef + eTo]! / nf;
    weak[j] = s.edges[j * ef + eType] === weakType ? 1 : 0;
  }
  const edgeName = (j: number): string => {
    const v = s.edges[j * ef + eName]!;
    return byIndex.has(s.edges[j * ef + eType]!) ? `[${v}]` : (s.strings[v] ?? '?');
  };
  return { count, cls, names, self, id, firstEdge, edgeTo, weak, edgeName, total };
}

function byClass(g: Graph): Map<string, { n: number; bytes: number }> {
  const out = new Map<string, { n: number; bytes: number }>();
  for (let i = 0; i < g.count; i++) {
    const name = g.names[g.cls[i]!]!;
    const r = out.get(name) ?? { n: 0, bytes: 0 };
    r.n++;
    r.bytes += g.self[i]!;
    out.set(name, r);
  }
  return out;
}

/** Immediate dominator of each node (root = node 0), over strong edges; -1 for unreachable nodes. */
function dominators(g: Graph): Int32Array {
  const n = g.count;
  const post = new Int32Array(n).fill(-1);
  const order: number[] = [];
  const stack: number[] = [0];
  const edgeIx = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  edgeIx[0] = g.firstEdge[0]!;
  while (stack.length) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (edgeIx[v]! < g.firstEdge[v + 1]!) {
      const j = edgeIx[v]!++;
      if (g.weak[j]) continue;
      const w = g.edgeTo[j]!;
      if (!seen[w]) {
        seen[w] = 1;
        edgeIx[w] = g.firstEdge[w]!;
        stack.push(w);
        pushed = true;
        break;
      }
    }
    if (!pushed) {
      stack.pop();
      post[v] = order.length;
      order.push(v);
    }
  }
  // Predecessors (strong edges, reachable nodes).
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++)
      if (!g.weak[j]) predCount[g.edgeTo[j]! + 1]!++;
  }
  for (let v = 0; v < n; v++) predCount[v + 1]! += predCount[v]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++)
      if (!g.weak[j]) preds[fill[g.edgeTo[j]!]!++] = v;
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while (post[a]! < post[b]!) a = idom[a]!;
      while (post[b]! < post[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = order.length - 2; k >= 0; k--) {
      const v = order[k]!;
      let d = -1;
      for (let j = predCount[v]!; j < predCount[v + 1]!; j++) {
        const p = preds[j]!;
        if (idom[p] === -1) continue;
        d = d === -1 ? p : intersect(p, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  return idom;
}

interface Retained {
  idom: Int32Array;
  retained: Float64Array;
  byClass: [string, number, number][];
}

function retainedByClass(g: Graph, top: number): Retained {
  const idom = dominators(g);
  const n = g.count;
  // Retained size: children before parents, i.e. by decreasing depth.
  const depth = new Int32Array(n).fill(-1);
  depth[0] = 0;
  const depthOf = (v: number): number => {
    const path: number[] = [];
    while (depth[v] === -1 && idom[v] !== -1) {
      path.push(v);
      v = idom[v]!;
    }
    let d = depth[v] === -1 ? 0 : depth[v]!;
    for (let i = path.length - 1; i >= 0; i--) depth[path[i]!] = ++d;
    return d;
  };
  const nodes: number[] = [];
  for (let v = 0; v < n; v++) if (idom[v] !== -1) (depthOf(v), nodes.push(v));
  nodes.sort((a, b) => depth[b]! - depth[a]!);
  const retained = Float64Array.from(g.self);
  for (const v of nodes) if (v !== 0) retained[idom[v]!]! += retained[v]!;
  // Per class, the instances not dominated by another instance of the same class.
  const sum = new Map<number, { n: number; bytes: number }>();
  for (const v of nodes) {
    if (v === 0) continue;
    const c = g.cls[v]!;
    let u = idom[v]!;
    let nested = false;
    while (u !== 0) {
      if (g.cls[u] === c) {
        nested = true;
        break;
      }
      u = idom[u]!;
    }
    if (nested) continue;
    const r = sum.get(c) ?? { n: 0, bytes: 0 };
    r.n++;
    r.bytes += retained[v]!;
    sum.set(c, r);
  }
  const byClass = [...sum.entries()]
    .map(([c, r]): [string, number, number] => [g.names[c]!, r.n, r.bytes])
    .sort((a, b) => b[2] - a[2])
    .slice(0, top);
  return { idom, retained, byClass };
}

/** `Class.edge <- Class.edge <- ...`: how v hangs off its dominators, nearest first, up to depth steps. */
function dominatorPath(g: Graph, idom: Int32Array, v: number, depth: number): string {
  const parts: string[] = [];
  for (let i = 0; i < depth && v !== 0; i++) {
    const d = idom[v]!;
    let edge = '?';
    for (let j = g.firstEdge[d]!; j < g.firstEdge[d + 1]!; j++)
      if (g.edgeTo[j] === v) {
        edge = g.edgeName(j);
        break;
      }
    parts.push(`${g.names[g.cls[d]!]!}.${edge}`);
    v = d;
  }
  return parts.join(' <- ');
}

/**
 * The largest retainers below the big containers: instances retaining more than minBytes whose
 * dominator children each retain less than half of them (so a Map of pods is listed, not every ancestor).
 */
function topInstances(g: Graph, r: Retained, minBytes: number, top: number): string[] {
  const maxChild = new Float64Array(g.count);
  for (let v = 1; v < g.count; v++) {
    const d = r.idom[v]!;
    if (d >= 0 && r.retained[v]! > maxChild[d]!) maxChild[d] = r.retained[v]!;
  }
  const picks: number[] = [];
  for (let v = 1; v < g.count; v++)
    if (r.idom[v] !== -1 && r.retained[v]! >= minBytes && maxChild[v]! < r.retained[v]! / 2) picks.push(v);
  picks.sort((a, b) => r.retained[b]! - r.retained[a]!);
  return picks
    .slice(0, top)
    .map(
      (v) =>
        `${(r.retained[v]! / 2 ** 20).toFixed(2).padStart(8)} MiB  ${g.names[g.cls[v]!]!}  <- ${dominatorPath(g, r.idom, v, 6)}`,
    );
}

/** Classes that are containers or plumbing, not owners: an owner is the nearest other named class. */
const PLUMBING = new Set(
  'Object Array Map Set WeakMap WeakSet WeakRef Promise Generator Timeout TimersList AbortController AbortSignal Error'.split(
    ' ',
  ),
);

/**
 * Objects of `after` that `base` did not have (by object id), by owner: the nearest named, non-plumbing
 * class on the shortest retaining path from the root, with the property leading away from it
 * (e.g. `StatusManager.podStatuses`). Shows what the growth between two snapshots hangs off.
 */
function growthByOwner(
  base: Graph,
  after: Graph,
  top: number,
  detail?: string,
): { owners: [string, number, number][]; detail: [string, number, number][] } {
  const old = new Set<number>();
  for (let i = 0; i < base.count; i++) old.add(base.id[i]!);
  const n = after.count;
  const owner = new Int32Array(n).fill(-1);
  const keys: string[] = ['(root)'];
  const keyIx = new Map<string, number>([['(root)', 0]]);
  const interesting = (v: number): boolean => {
    const c = after.names[after.cls[v]!]!;
    return /^[A-Z_]/.test(c) && !PLUMBING.has(c);
  };
  owner[0] = 0;
  /** The edge (from its parent in the search) each object was first reached by, for --owner. */
  const via = new Int32Array(n).fill(-1);
  const queue = new Uint32Array(n);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  while (head < tail) {
    const v = queue[head++]!;
    for (let j = after.firstEdge[v]!; j < after.firstEdge[v + 1]!; j++) {
      if (after.weak[j]) continue;
      const w = after.edgeTo[j]!;
      if (owner[w] !== -1) continue;
      const rootOwned = v === 0 || owner[v]! < 0 || keys[owner[v]!]!.startsWith('(root)');
      const hops = rootOwned ? keys[owner[v]!]!.split(' > ').length : 0;
      if ((v !== 0 && interesting(v)) || (rootOwned && hops < 4)) {
        const k =
          v !== 0 && interesting(v)
            ? `${after.names[after.cls[v]!]!}.${after.edgeName(j)}`
            : `${keys[owner[v]!]!} > ${after.edgeName(j)}(${after.names[after.cls[w]!]!})`;
        let ix = keyIx.get(k);
        if (ix === undefined) {
          ix = keys.length;
          keys.push(k);
          keyIx.set(k, ix);
        }
        owner[w] = ix;
      } else owner[w] = owner[v]!;
      via[w] = j;
      queue[tail++] = w;
    }
  }
  const sum = new Map<number, { n: number; bytes: number }>();
  for (let v = 0; v < n; v++) {
    if (old.has(after.id[v]!) || owner[v] === -1) continue;
    const r = sum.get(owner[v]!) ?? { n: 0, bytes: 0 };
    r.n++;
    r.bytes += after.self[v]!;
    sum.set(owner[v]!, r);
  }
  const detailIx = detail === undefined ? -1 : (keyIx.get(detail) ?? -2);
  const parts = new Map<string, { n: number; bytes: number }>();
  if (detailIx !== -1)
    for (let v = 0; v < n; v++) {
      if (owner[v] !== detailIx || old.has(after.id[v]!)) continue;
      const edge = via[v]! >= 0 ? after.edgeName(via[v]!) : '?';
      const k = `${after.names[after.cls[v]!]!} via .${/^\d+$/.test(edge) ? '[n]' : edge}`;
      const r = parts.get(k) ?? { n: 0, bytes: 0 };
      r.n++;
      r.bytes += after.self[v]!;
      parts.set(k, r);
    }
  const ranked = (m: Map<string, { n: number; bytes: number }>): [string, number, number][] =>
    [...m.entries()]
      .map(([k, r]): [string, number, number] => [k, r.n, r.bytes])
      .sort((a, b) => b[2] - a[2])
      .slice(0, top);
  const owners = new Map([...sum.entries()].map(([k, r]) => [keys[k]!, r]));
  return { owners: ranked(owners), detail: ranked(parts) };
}

function main(argv: string[]): void {
  const files = argv.filter((a, i) => !a.startsWith('--') && !/^\d+$/.test(a) && argv[i - 1] !== '--owner');
  const flag = (f: string): number | undefined => {
    const i = argv.indexOf(f);
    return i >= 0 ? Number(argv[i + 1]) : undefined;
  };
  const per = flag('--per') ?? 1;
  const top = flag('--top') ?? 40;
  if (files.length < 1 || files.length > 2) {
    console.error('usage: tsx bench/heapsnapshot.ts BASE [AFTER --per N] [--top K] [--retained]');
    process.exit(2);
  }
  const mib = (b: number): string => (b / 2 ** 20).toFixed(1).padStart(8) + ' MiB';
  const a = load(files[0]!);
  console.log(`${files[0]}: ${a.count} nodes, ${mib(a.total)} live`);
  if (files.length === 2) {
    const b = load(files[1]!);
    console.log(`${files[1]}: ${b.count} nodes, ${mib(b.total)} live`);
    console.log(`difference per unit (/${per}): ${((b.total - a.total) / per).toFixed(0)} bytes\n`);
    const ca = byClass(a);
    const rows = [...byClass(b).entries()].map(([name, r]) => {
      const o = ca.get(name) ?? { n: 0, bytes: 0 };
      return { name, n: (r.n - o.n) / per, bytes: (r.bytes - o.bytes) / per };
    });
    rows.sort((x, y) => y.bytes - x.bytes);
    console.log('   bytes/unit  objects/unit  class (self size)');
    for (const r of rows.slice(0, top))
      console.log(`${r.bytes.toFixed(0).padStart(13)}  ${r.n.toFixed(2).padStart(12)}  ${r.name}`);
    console.log('\nnew objects by owner (bytes/unit, objects/unit, nearest named class . property)');
    const ownerKey = argv.includes('--owner') ? argv[argv.indexOf('--owner') + 1] : undefined;
    const growth = growthByOwner(a, b, top, ownerKey);
    for (const [name, k, bytes] of growth.owners)
      console.log(`${(bytes / per).toFixed(0).padStart(13)}  ${(k / per).toFixed(2).padStart(12)}  ${name}`);
    if (ownerKey !== undefined) {
      console.log(`\nnew objects of ${ownerKey}, by class and the edge that reached them`);
      for (const [name, k, bytes] of growth.detail)
        console.log(
          `${(bytes / per).toFixed(0).padStart(13)}  ${(k / per).toFixed(2).padStart(12)}  ${name}`,
        );
    }
    if (argv.includes('--retained')) {
      const r = retainedByClass(b, top);
      console.log('\nretained by class, in the second snapshot (bytes/unit, instances/unit)');
      for (const [name, n, bytes] of r.byClass)
        console.log(
          `${(bytes / per).toFixed(0).padStart(13)}  ${(n / per).toFixed(2).padStart(12)}  ${name}`,
        );
      console.log('\nlargest retaining instances in the second snapshot');
      for (const line of topInstances(b, r, 2 ** 19, top)) console.log(line);
    }
  } else {
    const rows = [...byClass(a).entries()].sort((x, y) => y[1].bytes - x[1].bytes).slice(0, top);
    for (const [name, r] of rows) console.log(`${mib(r.bytes)}  ${String(r.n).padStart(9)}  ${name}`);
    if (argv.includes('--retained')) {
      console.log('\nretained by class');
      const r = retainedByClass(a, top);
      for (const [name, n, bytes] of r.byClass)
        console.log(`${mib(bytes)}  ${String(n).padStart(9)}  ${name}`);
      console.log('\nlargest retaining instances');
      for (const line of topInstances(a, r, 2 ** 19, top)) console.log(line);
    }
  }
}

main(process.argv.slice(2));

/**
 * Which VirtualNodes this replica should serve: a pure decision over what the shard Leases show (see
 * coordinator.ts for the Leases themselves).
 *
 * Every live replica holds a membership Lease; every served VirtualNode has one shard Lease naming its
 * holder. A VirtualNode pinned to a host (a cri node whose containerd runs there) may only be served by a
 * replica on that host, which takes it whatever its share. The other ("floating") VirtualNodes are shared
 * evenly: with N floating nodes and M live replicas, sorted by identity, replica r may hold
 * floor(N / M) + (r < N mod M ? 1 : 0). A replica under its quota takes free Leases (never held, released,
 * or expired as observed here) until it reaches it; one over its quota hands back the excess. Replicas disagree only while
 * their views of the membership differ, which the next rounds settle.
 *
 * Expiry is judged on this replica's clock from when it last saw a Lease change (client-go's leader
 * election does the same), never from the renewTime written by another machine's clock.
 */
import { createHash } from 'node:crypto';

export interface ShardNode {
  /** The VirtualNode's name. */
  name: string;
  /** The host that must serve it, if any. */
  host?: string;
}

/** A VirtualNode's shard Lease as last observed. */
export interface ObservedLease {
  /** '' when released. */
  holder: string;
  /** Local clock time after which, unrenewed, it counts as expired. */
  expiresAt: number;
}

export interface ShardView {
  now: number;
  self: string;
  /** The host this replica runs on ('' = none known: it never takes pinned nodes). */
  host: string;
  /** Live replicas by identity -> local expiry time (this replica is always live). */
  members: ReadonlyMap<string, number>;
  /** Every VirtualNode there is. */
  nodes: readonly ShardNode[];
  /** Shard Leases by VirtualNode name. */
  leases: ReadonlyMap<string, ObservedLease>;
  /** VirtualNodes this replica holds (and serves). */
  held: ReadonlySet<string>;
}

export interface ShardPlan {
  /** Floating nodes this replica may hold. */
  quota: number;
  /** Live replicas counted. */
  members: number;
  /** Free Leases of nodes pinned to this replica's host: take them all. */
  acquirePinned: string[];
  /**
   * Free Leases of floating nodes, best first: take them in order until `room` were taken (another
   * replica may be quicker for some).
   */
  acquire: string[];
  /** How many more floating nodes this replica may take. */
  room: number;
  /** Held nodes to hand back: over the quota, pinned to another host, or gone. */
  release: string[];
}

/** Live replica identities, sorted, always including `self`. */
export function liveMembers(view: Pick<ShardView, 'now' | 'self' | 'members'>): string[] {
  const out = new Set<string>([view.self]);
  for (const [id, expiresAt] of view.members) if (expiresAt > view.now) out.add(id);
  return [...out].sort();
}

/** The share of `floating` nodes that the replica ranked `rank` of `members` may hold. */
export function fairShare(floating: number, members: number, rank: number): number {
  if (members <= 0) return floating;
  return Math.floor(floating / members) + (rank < floating % members ? 1 : 0);
}

/**
 * A stable per-replica order of nodes, so that replicas taking free Leases at the same moment mostly try
 * different ones first.
 */
export function preference(self: string, node: string): string {
  return createHash('sha256').update(`${self}\n${node}`).digest('hex').slice(0, 16);
}

function isFree(lease: ObservedLease | undefined, view: ShardView): boolean {
  if (!lease) return true;
  if (lease.holder === '' || lease.holder === view.self) return true;
  return lease.expiresAt <= view.now;
}

/** What this replica should take and hand back now. */
export function planShard(view: ShardView): ShardPlan {
  const members = liveMembers(view);
  const rank = members.indexOf(view.self);
  const exists = new Map(view.nodes.map((n) => [n.name, n]));
  const floating = view.nodes.filter((n) => !n.host);
  const quota = fairShare(floating.length, members.length, rank);

  const release: string[] = [];
  const heldFloating: string[] = [];
  for (const name of view.held) {
    const node = exists.get(name);
    if (!node) release.push(name);
    else if (node.host) {
      if (node.host !== view.host) release.push(name);
    } else heldFloating.push(name);
  }
  const byPreference = (a: string, b: string): number => {
    const pa = preference(view.self, a);
    const pb = preference(view.self, b);
    return pa < pb ? -1 : pa > pb ? 1 : a < b ? -1 : 1;
  };
  // Over the quota: keep the most preferred, hand back the rest.
  if (heldFloating.length > quota) release.push(...heldFloating.sort(byPreference).slice(quota));

  const acquirePinned: string[] = [];
  for (const n of view.nodes) {
    if (!n.host || n.host !== view.host || view.held.has(n.name)) continue;
    if (isFree(view.leases.get(n.name), view)) acquirePinned.push(n.name);
  }
  const room = Math.max(0, quota - heldFloating.length);
  const acquire =
    room === 0
      ? []
      : floating
          .filter((n) => !view.held.has(n.name) && isFree(view.leases.get(n.name), view))
          .map((n) => n.name)
          .sort(byPreference);
  return { quota, members: members.length, acquirePinned, acquire, room, release: release.sort() };
}

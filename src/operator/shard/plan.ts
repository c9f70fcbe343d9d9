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
 * election does the same), never from the renewTime written by another machine's clock. A VirtualNode's
 * Lease also ends with its holder's membership (`nodeLeaseExpiry`): a dead replica's nodes are free one
 * membership Lease duration after its last renewal, however long their own Leases last.
 *
 * A replica that could not renew its own membership Lease may have been cut off from the API server along
 * with everyone else: the others' Leases going unrenewed then proves nothing. So while its renewals fail,
 * and for one Lease duration after the first one accepted again, it counts every replica whose membership
 * Lease it knows as live (`membershipGraceUntil`). After an outage every replica then takes only its fair
 * share of the free Leases, instead of each counting itself alone and taking all it can; one that really
 * died stays unrenewed through the grace window and counts as dead after it. Node Leases get no grace:
 * their holders stop serving at their renew deadline, well inside the Lease duration, outage or not.
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
  /** Known replicas by identity -> local expiry time (this replica is always live). */
  members: ReadonlyMap<string, number>;
  /**
   * Until this clock time every replica in `members` counts as live whatever its expiry (see
   * `membershipGraceUntil`); -Infinity outside a grace window.
   */
  graceUntil: number;
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

/**
 * This replica's own membership renewals, as far as they bear on what it may conclude from the others'.
 * Folded by `membershipRenewed`; read by `membershipGraceUntil`. Invariants: `failingSince` is set exactly
 * while the attempts since the last accepted write all failed (never before the first accepted write: the
 * first list is a fresh view); `recoveredAt` <= `acceptedAt`.
 */
export interface MembershipRenewals {
  /** Clock time the last accepted write was sent (-Infinity: none yet). */
  acceptedAt: number;
  /** Clock time of the first failed attempt since the last accepted write. */
  failingSince: number | undefined;
  /** Clock time of the first accepted write after failed ones (-Infinity: none). */
  recoveredAt: number;
}

export const NO_MEMBERSHIP_RENEWALS: MembershipRenewals = {
  acceptedAt: -Infinity,
  failingSince: undefined,
  recoveredAt: -Infinity,
};

/** `r` after an attempt to write the membership Lease, sent at `at`, that was `accepted` or not. */
export function membershipRenewed(r: MembershipRenewals, at: number, accepted: boolean): MembershipRenewals {
  if (accepted)
    return {
      acceptedAt: at,
      failingSince: undefined,
      recoveredAt: r.failingSince === undefined ? r.recoveredAt : at,
    };
  if (r.failingSince !== undefined || r.acceptedAt === -Infinity) return r;
  return { ...r, failingSince: at };
}

/**
 * Until when every known replica counts as live: for as long as this replica's own renewals fail (it may
 * be cut off, and so blind to theirs), then for one Lease duration after the first accepted again, the
 * time each of them needs to be seen renewing, or to be known dead. A replica that died with the API
 * server up is noticed as soon as before: no renewal of this replica failed meanwhile.
 */
export function membershipGraceUntil(r: MembershipRenewals, leaseDurationMs: number): number {
  return r.failingSince !== undefined ? Infinity : r.recoveredAt + leaseDurationMs;
}

/**
 * When a VirtualNode's Lease stops binding here. One written to outlast a membership Lease (`bound`: its
 * holder renews it only seldom, coordinator.ts) ends at its own expiry or when its holder's membership Lease
 * runs out (`holderLiveUntil`, from `memberExpiry`; undefined when no membership Lease of the holder is known:
 * a replica that left), whichever comes first. One as short as a membership Lease was written by a replica of
 * an earlier version, which renews it as often as its own and keeps serving while only that one is renewed:
 * it ends at its own expiry alone.
 */
export function nodeLeaseExpiry(own: number, bound: boolean, holderLiveUntil: number | undefined): number {
  return bound ? Math.min(own, holderLiveUntil ?? -Infinity) : own;
}

/** The clock time after which a replica whose membership Lease runs out at `expiresAt` counts as dead. */
export function memberExpiry(expiresAt: number, graceUntil: number): number {
  return Math.max(expiresAt, graceUntil);
}

/** Live replica identities, sorted, always including `self`. */
export function liveMembers(view: Pick<ShardView, 'now' | 'self' | 'members' | 'graceUntil'>): string[] {
  const out = new Set<string>([view.self]);
  for (const [id, expiresAt] of view.members)
    if (memberExpiry(expiresAt, view.graceUntil) > view.now) out.add(id);
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

/**
 * The shard coordinator: which VirtualNodes this replica serves, kept in Leases (plan.ts decides, this
 * writes). A VirtualNode's Lease binds only while its holder's membership Lease does (plan.ts
 * `nodeLeaseExpiry`), so the membership Lease is what keeps a replica's nodes its own: it is renewed every
 * renew interval, the VirtualNodes' Leases only every `NODE_LEASE_FACTOR` intervals and last that many Lease
 * durations (at 1,000 nodes, 50 writes a second instead of 200). Each round (every renew interval, and soon
 * after a shard Lease changes):
 * 1. renew this replica's membership Lease; while it has not been renewed for the renew deadline (well inside
 *    its duration) every node held is dropped at once, so they stop before anyone may count them free, and
 *    none is taken;
 * 2. renew the Lease of every VirtualNode held that is due; one that cannot be renewed for its own renew
 *    deadline is dropped, and one another replica took (Conflict with another holder) is dropped too;
 * 3. hand back what the plan says is over the share: the node is stopped first (the controller calls
 *    `stopped`), then the Lease is written with no holder, so another replica can take it at once;
 * 4. take free Leases up to the share, side by side (a create, or an update with the observed
 *    resourceVersion as precondition: two replicas never both win);
 * 5. delete Leases of VirtualNodes that are gone and of replicas long dead.
 * While its own membership renewals fail, and for one Lease duration after they are accepted again, it
 * counts every replica it knows as live (plan.ts, `membershipGraceUntil`): cut off from the API server, it
 * cannot have seen them renewed, and after an outage each replica then takes back only its share. When
 * they are accepted again it also lists the Leases at once, rather than when its watch's back-off ends.
 * `stop()` hands everything back (after the controller stopped the nodes) and deletes the membership Lease.
 *
 * During a rolling update the versions stay apart: a VirtualNode's Lease written by an earlier version (as
 * long as a membership Lease) is judged by its own expiry alone, as that version keeps serving while it
 * renews it; an earlier version judges ours by their own 60 s too, so it takes a dead new replica's nodes
 * later, never sooner.
 *
 * Invariants: `owns(n)` is true only while this replica's membership Lease was renewed within the renew
 * deadline and its Lease on n within the node renew deadline; a Lease is written free only after the
 * controller reported n stopped; rounds never overlap.
 */
import type { Lease } from '../../api/node.js';
import { Informer } from '../../kube/informer.js';
import { formatMicroTime } from '../../node/lease.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { errorKind, errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import {
  leaseRole,
  replicaLeaseName,
  SHARD_LABEL,
  VIRTUAL_NODE_ANNOTATION,
  virtualNodeLeaseName,
  type ShardLeaseAPI,
} from './api.js';
import {
  memberExpiry,
  membershipGraceUntil,
  nodeLeaseExpiry,
  membershipRenewed,
  NO_MEMBERSHIP_RENEWALS,
  planShard,
  type MembershipRenewals,
  type ObservedLease,
  type ShardNode,
} from './plan.js';

/**
 * A VirtualNode's Lease lasts this many membership Lease durations and is renewed every this many renew
 * intervals (15 s and 5 s by default: 60 s, every 20 s).
 */
export const NODE_LEASE_FACTOR = 4;

/**
 * How long a holder goes on without an accepted renewal before it lets go: a renew interval and 2 s short of
 * the Lease's duration (others count it free only after the whole duration), and never under one interval.
 */
function renewDeadline(durationMs: number, renewMs: number): number {
  return Math.max(renewMs, durationMs - renewMs - 2_000);
}

/** When a Lease last seen to change at `seenAt` (local clock) runs out, judged on the local clock. */
function localExpiry(lease: Lease, seenAt: number): number {
  return seenAt + (lease.spec.leaseDurationSeconds ?? 0) * 1000;
}

export interface ShardCoordinatorOptions {
  api: ShardLeaseAPI;
  namespace: string;
  identity: string;
  /** The host this replica runs on ('' = unknown: pinned VirtualNodes are never taken). */
  host: string;
  clock: Clock;
  logger: Logger;
  leaseDurationMs?: number;
  renewIntervalMs?: number;
}

/** What the controller needs: whether it may serve a VirtualNode, and when that changes. */
export interface ShardGate {
  /** Starts the rounds; `nodes` lists every VirtualNode, `changed` is called when `owns(name)` flips. */
  start(nodes: () => ShardNode[], changed: (name: string) => void): Promise<void>;
  owns(name: string): boolean;
  /**
   * The controller does not serve `name` (after a hand-back or a drop, or a VirtualNode it saw but does not
   * own, e.g. a new one).
   */
  stopped(name: string): void;
  /** Hands back every VirtualNode (the controller stopped them all) and leaves. */
  stop(): Promise<void>;
}

interface Held {
  lease: Lease;
  /** Clock time the last accepted write was sent. */
  renewedAt: number;
  releasing: boolean;
}

interface Seen {
  lease: Lease;
  /** Local clock time it was last seen to change holder or renewTime. */
  seenAt: number;
}

export class ShardCoordinator implements ShardGate {
  private readonly durationMs: number;
  private readonly renewMs: number;
  /** Past this without an accepted membership renewal, every held node is dropped (before others count it free). */
  private readonly renewDeadlineMs: number;
  /** A VirtualNode's Lease: its duration, renew interval and renew deadline (NODE_LEASE_FACTOR). */
  private readonly nodeDurationMs: number;
  private readonly nodeRenewMs: number;
  private readonly nodeRenewDeadlineMs: number;
  private readonly informer: Informer<Lease>;
  private readonly seen = new Map<string, Seen>();
  private readonly held = new Map<string, Held>();
  private member: Lease | undefined;
  private renewals: MembershipRenewals = NO_MEMBERSHIP_RENEWALS;
  private nodes: () => ShardNode[] = () => [];
  private changed: (name: string) => void = () => undefined;
  private timer: TimerHandle | undefined;
  private round: Promise<void> | undefined;
  private relisting: Promise<void> | undefined;
  private again = false;
  private running = false;
  private stopped_ = false;
  private readonly log: Logger;

  constructor(private readonly o: ShardCoordinatorOptions) {
    this.durationMs = o.leaseDurationMs ?? 15_000;
    this.renewMs = o.renewIntervalMs ?? 5_000;
    this.renewDeadlineMs = renewDeadline(this.durationMs, this.renewMs);
    this.nodeDurationMs = NODE_LEASE_FACTOR * this.durationMs;
    this.nodeRenewMs = NODE_LEASE_FACTOR * this.renewMs;
    this.nodeRenewDeadlineMs = renewDeadline(this.nodeDurationMs, this.nodeRenewMs);
    this.log = o.logger.child({ component: 'shard', replica: o.identity });
    this.informer = new Informer<Lease>(o.api.leases, {
      clock: o.clock,
      logger: this.log,
      name: 'shard-leases',
    });
    const observe = (l: Lease): void => this.observe(l);
    this.informer.addHandlers({
      add: observe,
      update: (_old, l) => observe(l),
      delete: (l) => {
        this.seen.delete(l.metadata.name ?? '');
        this.soon();
      },
    });
  }

  async start(nodes: () => ShardNode[], changed: (name: string) => void): Promise<void> {
    this.nodes = nodes;
    this.changed = changed;
    this.informer.start();
    await this.informer.waitForSync();
    this.running = true;
    await this.runRound();
  }

  owns(name: string): boolean {
    const h = this.held.get(name);
    return h !== undefined && !h.releasing;
  }

  /** VirtualNodes held now (for tests and logs). */
  heldNodes(): string[] {
    return [...this.held].filter(([, h]) => !h.releasing).map(([n]) => n);
  }

  stopped(name: string): void {
    const h = this.held.get(name);
    // Not held: maybe a new VirtualNode, with a Lease free to take; look soon instead of at the next round.
    if (!h) this.soon();
    if (!h?.releasing || this.stopped_) return;
    void this.handBack(name, h);
  }

  async stop(): Promise<void> {
    if (this.stopped_) return;
    this.stopped_ = true;
    this.timer?.cancel();
    await this.round;
    await Promise.all([...this.held].map(([name, h]) => this.handBack(name, h)));
    if (this.member) await this.o.api.delete(this.member.metadata.name ?? '').catch(() => undefined);
    await this.relisting;
    await this.informer.stop();
  }

  // ---- rounds ----

  private observe(l: Lease): void {
    const name = l.metadata.name ?? '';
    const prev = this.seen.get(name);
    const changed =
      !prev ||
      prev.lease.spec.holderIdentity !== l.spec.holderIdentity ||
      prev.lease.spec.renewTime !== l.spec.renewTime;
    this.seen.set(name, { lease: l, seenAt: changed ? this.o.clock.now() : prev.seenAt });
    // A replica joining, or a Lease handed back, may change what this replica should hold (a replica
    // leaving deletes its Lease; one that died is noticed when its Lease expires, at a periodic round).
    const role = leaseRole(l);
    const joined = role?.role === 'replica' && !prev;
    const freed =
      role?.role === 'virtualnode' && !l.spec.holderIdentity && (!prev || prev.lease.spec.holderIdentity);
    if (joined || freed) this.soon();
  }

  /** A round shortly (coalesced). */
  private soon(): void {
    if (this.stopped_ || !this.running) return;
    this.schedule(100);
  }

  private schedule(ms: number): void {
    this.timer?.cancel();
    this.timer = this.o.clock.setTimer(ms, () => void this.runRound());
  }

  private runRound(): Promise<void> {
    if (this.stopped_) return Promise.resolve();
    if (this.round) {
      this.again = true;
      return this.round;
    }
    const started = this.o.clock.now();
    this.round = this.doRound()
      .catch((err: unknown) => this.log.warn('shard round failed', { error: errorMessage(err) }))
      .finally(() => {
        this.round = undefined;
        if (this.stopped_) return;
        if (this.again) {
          this.again = false;
          this.schedule(0);
        } else {
          // The next periodic round, or sooner when a Lease held elsewhere (a node's, or a replica's) runs
          // out before it: a replica that died is then noticed at once, not up to an interval later.
          const now = this.o.clock.now();
          const periodic = this.renewMs - (now - started);
          const expiry = this.nextExpiry(now) - now + 50;
          this.schedule(Math.max(0, Math.min(periodic, expiry)));
        }
      });
    return this.round;
  }

  /**
   * The earliest local expiry of a Lease held by another replica that has not expired yet (for a replica's
   * membership Lease, the end of the grace window if later).
   */
  private nextExpiry(now: number): number {
    const graceUntil = this.graceUntil();
    let next = Infinity;
    for (const { lease, seenAt } of this.seen.values()) {
      const holder = lease.spec.holderIdentity ?? '';
      if (holder === '' || holder === this.o.identity) continue;
      const at = this.expiresAt(lease, seenAt, graceUntil);
      if (at > now && at < next) next = at;
    }
    return next;
  }

  /** Until when every known replica counts as live (plan.ts). */
  private graceUntil(): number {
    return membershipGraceUntil(this.renewals, this.durationMs);
  }

  /**
   * When `lease`, last seen to change at `seenAt`, runs out here: a replica's not before `graceUntil`, a
   * VirtualNode's no later than its holder's.
   */
  private expiresAt(lease: Lease, seenAt: number, graceUntil: number): number {
    const at = localExpiry(lease, seenAt);
    const role = leaseRole(lease)?.role;
    if (role === 'replica') return memberExpiry(at, graceUntil);
    if (role !== 'virtualnode') return at;
    const holder = lease.spec.holderIdentity ?? '';
    const member = holder ? this.seen.get(replicaLeaseName(holder)) : undefined;
    // Written by this version: it lasts longer than a membership Lease (an earlier one wrote them equal).
    const bound = (lease.spec.leaseDurationSeconds ?? 0) * 1000 > this.durationMs;
    return nodeLeaseExpiry(
      at,
      bound,
      member && memberExpiry(localExpiry(member.lease, member.seenAt), graceUntil),
    );
  }

  /** Whether the membership Lease was renewed within the renew deadline (this replica may hold nodes). */
  private memberInTime(): boolean {
    return this.o.clock.now() - this.renewals.acceptedAt < this.renewDeadlineMs;
  }

  private async doRound(): Promise<void> {
    // A round soon after another (a Lease changed) renews only what is half way to its next renewal.
    const due = this.o.clock.now() - this.renewMs / 2;
    if (this.renewals.acceptedAt <= due) await this.renewMember();
    if (!this.memberInTime()) {
      const since = this.o.clock.now() - this.renewals.acceptedAt;
      for (const name of [...this.held.keys()]) this.drop(name, `replica Lease not renewed for ${since} ms`);
      return;
    }
    // A node Lease is due when the next periodic round would come after its renew interval.
    const nodeDue = this.o.clock.now() - (this.nodeRenewMs - this.renewMs / 2);
    await Promise.all(
      [...this.held].filter(([, h]) => h.renewedAt <= nodeDue).map(([name, h]) => this.renew(name, h)),
    );
    if (this.stopped_) return;
    const now = this.o.clock.now();
    const graceUntil = this.graceUntil();
    const members = new Map<string, number>();
    const leases = new Map<string, ObservedLease>();
    for (const { lease, seenAt } of this.seen.values()) {
      const role = leaseRole(lease);
      if (role?.role === 'replica') members.set(role.identity, localExpiry(lease, seenAt));
      else if (role?.role === 'virtualnode')
        leases.set(role.node, {
          holder: lease.spec.holderIdentity ?? '',
          expiresAt: this.expiresAt(lease, seenAt, graceUntil),
        });
    }
    const nodes = this.nodes();
    const held = new Set([...this.held].filter(([, h]) => !h.releasing).map(([n]) => n));
    const plan = planShard({
      now,
      self: this.o.identity,
      host: this.o.host,
      members,
      graceUntil,
      nodes,
      leases,
      held,
    });
    for (const name of plan.release) {
      const h = this.held.get(name);
      if (!h || h.releasing) continue;
      h.releasing = true;
      this.log.info('handing back virtual node', {
        virtualNode: name,
        quota: plan.quota,
        replicas: plan.members,
      });
      this.changed(name);
    }
    // Taken side by side, not one after another: a round waits for its takes, and one replica's 358 nodes taken
    // over one at a time on a busy API server (about 0.6 s a write) took minutes, while the Leases already held
    // went unrenewed and ran out.
    if (!this.stopped_)
      await Promise.all(plan.acquirePinned.filter((n) => !this.held.has(n)).map((n) => this.acquire(n)));
    // The free ones in order, `room` at a time: where another replica was quicker, the next ones stand in.
    const free = plan.acquire.filter((n) => !this.held.has(n));
    let room = plan.room;
    for (let i = 0; room > 0 && i < free.length && !this.stopped_;) {
      const batch = free.slice(i, i + room);
      i += batch.length;
      const taken = await Promise.all(batch.map((n) => this.acquire(n)));
      room -= taken.filter(Boolean).length;
    }
    await this.collectGarbage(now, graceUntil, new Set(nodes.map((n) => n.name)));
  }

  private leaseBody(name: string, role: 'replica' | 'virtualnode', node?: string): Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace: this.o.namespace,
        labels: { [SHARD_LABEL]: role },
        ...(node ? { annotations: { [VIRTUAL_NODE_ANNOTATION]: node } } : {}),
      },
      spec: {},
    };
  }

  private async renewMember(): Promise<void> {
    const name = replicaLeaseName(this.o.identity);
    const now = this.o.clock.now();
    const current = this.member ?? this.seen.get(name)?.lease ?? this.leaseBody(name, 'replica');
    const next: Lease = {
      ...current,
      spec: {
        ...current.spec,
        holderIdentity: this.o.identity,
        leaseDurationSeconds: Math.ceil(this.durationMs / 1000),
        renewTime: formatMicroTime(now),
        acquireTime: current.spec.acquireTime ?? formatMicroTime(now),
      },
    };
    try {
      this.member = current.metadata.resourceVersion
        ? await this.o.api.update(next)
        : await this.o.api.create(next);
    } catch (err) {
      // Created by an earlier process of this identity, or deleted meanwhile: start again next round.
      this.member = undefined;
      this.renewals = membershipRenewed(this.renewals, now, false);
      this.log.warn('cannot renew the replica Lease', { error: errorMessage(err) });
      return;
    }
    const failingSince = this.renewals.failingSince;
    this.renewals = membershipRenewed(this.renewals, now, true);
    if (failingSince === undefined) return;
    this.log.info('replica Lease renewed again: counting every known replica live for a Lease duration', {
      failingForMs: now - failingSince,
      graceUntil: new Date(this.graceUntil()).toISOString(),
    });
    this.relist();
  }

  /**
   * Lists the Leases again now: after an outage the watch may still be backing off (up to 30 s), and until
   * it resumes this replica would not see who took what. The list brings what changed (a Lease that did
   * not change brings no event, and no news of its holder: hence the grace window); the watch follows.
   */
  private relist(): void {
    if (this.relisting || this.stopped_) return;
    this.relisting = (async () => {
      await this.informer.stop();
      if (!this.stopped_) this.informer.start();
    })()
      .catch((err: unknown) =>
        this.log.warn('cannot restart the shard Lease watch', { error: errorMessage(err) }),
      )
      .finally(() => (this.relisting = undefined));
  }

  private async renew(name: string, h: Held): Promise<void> {
    const sentAt = this.o.clock.now();
    const next: Lease = {
      ...h.lease,
      spec: { ...h.lease.spec, holderIdentity: this.o.identity, renewTime: formatMicroTime(sentAt) },
    };
    try {
      h.lease = await this.o.api.update(next);
      h.renewedAt = sentAt;
      return;
    } catch (err) {
      const kind = errorKind(err);
      if (kind === 'Conflict' || kind === 'NotFound') {
        this.drop(name, `its Lease changed under this replica (${kind})`);
        return;
      }
      if (this.o.clock.now() - h.renewedAt >= this.nodeRenewDeadlineMs)
        this.drop(name, `no renewal for ${this.o.clock.now() - h.renewedAt} ms: ${errorMessage(err)}`);
    }
  }

  /** Stops serving `name` at once, without touching its Lease (lost, or not renewable in time). */
  private drop(name: string, why: string): void {
    if (!this.held.delete(name)) return;
    this.log.warn('dropping virtual node', { virtualNode: name, reason: why });
    this.changed(name);
  }

  /** Takes the Lease of `node` if it is still free; whether it did. */
  private async acquire(node: string): Promise<boolean> {
    const name = virtualNodeLeaseName(node);
    const now = this.o.clock.now();
    const seen = this.seen.get(name);
    const observed = seen?.lease;
    // The plan may be older than what the watch has shown since: take it only if it is still free.
    const holder = observed?.spec.holderIdentity ?? '';
    // When it runs out here (or its holder's membership), if another replica holds it.
    const expiresAt =
      seen && holder !== '' && holder !== this.o.identity
        ? this.expiresAt(seen.lease, seen.seenAt, this.graceUntil())
        : undefined;
    if (expiresAt !== undefined && expiresAt > now) return false;
    // Not a member in time: the others would count this Lease free.
    if (!this.memberInTime()) return false;
    const base = observed ?? this.leaseBody(name, 'virtualnode', node);
    const next: Lease = {
      ...base,
      metadata: {
        ...base.metadata,
        labels: { ...base.metadata.labels, [SHARD_LABEL]: 'virtualnode' },
        annotations: { ...base.metadata.annotations, [VIRTUAL_NODE_ANNOTATION]: node },
      },
      spec: {
        holderIdentity: this.o.identity,
        leaseDurationSeconds: Math.ceil(this.nodeDurationMs / 1000),
        acquireTime: formatMicroTime(now),
        renewTime: formatMicroTime(now),
        leaseTransitions:
          (base.spec.leaseTransitions ?? 0) +
          (base.spec.holderIdentity && base.spec.holderIdentity !== this.o.identity ? 1 : 0),
      },
    };
    try {
      const lease = observed ? await this.o.api.update(next) : await this.o.api.create(next);
      this.held.set(node, { lease, renewedAt: now, releasing: false });
      // Taken while stopping: stop() hands it back without it ever being served.
      if (this.stopped_) return true;
      this.log.info('serving virtual node', {
        virtualNode: node,
        previousHolder: base.spec.holderIdentity || undefined,
        // How long after the previous holder's Lease ran out here it was taken (a takeover's delay), and
        // how long after its last renewal (its renewTime, on the writer's clock) that renewal was seen.
        ...(seen && expiresAt !== undefined
          ? {
              takenAfterExpiryMs: this.o.clock.now() - expiresAt,
              renewSeenAfterMs: seen.seenAt - Date.parse(seen.lease.spec.renewTime ?? ''),
            }
          : {}),
      });
      this.changed(node);
      return true;
    } catch (err) {
      const kind = errorKind(err);
      // Another replica was quicker: fine, the next round sees who.
      if (kind !== 'Conflict' && kind !== 'AlreadyExists')
        this.log.warn('cannot take virtual node Lease', { virtualNode: node, error: errorMessage(err) });
      return false;
    }
  }

  /** Writes the Lease free (or deletes it when the VirtualNode is gone) and forgets it. */
  private async handBack(node: string, h: Held): Promise<void> {
    if (this.held.get(node) !== h) return;
    this.held.delete(node);
    const gone = !this.nodes().some((n) => n.name === node);
    try {
      if (gone) await this.o.api.delete(h.lease.metadata.name ?? '');
      else await this.o.api.update({ ...h.lease, spec: { ...h.lease.spec, holderIdentity: '' } });
      this.log.info('handed back virtual node', { virtualNode: node });
    } catch (err) {
      // It expires by itself; nobody takes it before then.
      this.log.warn('cannot hand back virtual node Lease', { virtualNode: node, error: errorMessage(err) });
    }
  }

  private async collectGarbage(now: number, graceUntil: number, nodes: ReadonlySet<string>): Promise<void> {
    for (const { lease, seenAt } of [...this.seen.values()]) {
      const role = leaseRole(lease);
      if (!role) continue;
      // A replica counted live for the grace window stays: forgotten, it would count as dead after it.
      const expiredFor = now - this.expiresAt(lease, seenAt, graceUntil);
      const stale =
        role.role === 'replica'
          ? role.identity !== this.o.identity && expiredFor > 4 * this.durationMs
          : !nodes.has(role.node) &&
            !this.held.has(role.node) &&
            (expiredFor > 0 || !lease.spec.holderIdentity);
      if (!stale) continue;
      this.seen.delete(lease.metadata.name ?? '');
      await this.o.api.delete(lease.metadata.name ?? '').catch(() => undefined);
    }
  }
}

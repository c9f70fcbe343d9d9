// Our side as several operator replicas sharing the VirtualNodes by shard Leases (src/operator/shard/): one
// agent for the scale scenario's samplers and scrapes (CPU and RSS summed, metrics merged), and the fail-over
// of one replica killed under load (which of its nodes the others took, and when each was served again).
import type { KubeClient } from '../../src/kube/client.js';
import { SHARD_NS, shardHolders, splitOf } from '../../test/support/shards.js';
import type { AgentProcess } from './agents.js';
import type { LeaseWatch } from './leases.js';
import { readProc, type ProcSample } from './procstat.js';
import type { NodeReadyWatch } from './scalehealth.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The replicas as one agent: its pid, log and HTTP server are the first replica's; `members` has them all. */
export function replicaGroup(members: AgentProcess[]): AgentProcess {
  const first = members[0];
  if (!first) throw new Error('a replica group needs at least one replica');
  return {
    name: `${first.name} x${members.length}`,
    pid: first.pid,
    logPath: first.logPath,
    httpBase: first.httpBase,
    members,
    stop: async (graceMs) => {
      await Promise.all(members.map((m) => m.stop(graceMs)));
    },
  };
}

/**
 * A /proc reader for the group: CPU and RSS summed over the replicas. A replica that is gone keeps the CPU it
 * last showed (so windows across its death do not go negative) and counts no RSS.
 */
export function groupProcReader(
  pids: readonly number[],
  read: (pid: number) => ProcSample | undefined = readProc,
): () => ProcSample | undefined {
  const last = new Map<number, ProcSample>();
  return () => {
    const out: ProcSample = { t: Date.now(), cpuSec: 0, rssMiB: 0, hwmMiB: 0 };
    let any = false;
    for (const pid of pids) {
      const s = read(pid);
      if (s) {
        last.set(pid, s);
        out.rssMiB += s.rssMiB;
        out.hwmMiB += s.hwmMiB;
        any = true;
      }
      out.cpuSec += (s ?? last.get(pid))?.cpuSec ?? 0;
    }
    return any ? out : undefined;
  };
}

export interface Failover {
  /** The replica killed (SIGKILL) and how many VirtualNodes it held. */
  replica: string;
  nodes: number;
  /** The split of the nodes before the kill and once the others took them (`334/333/333`, `500/500`). */
  splitBefore: string;
  splitAfter: string;
  /** From the kill until another replica held the shard Lease of every one of its nodes. */
  takenMs: number;
  /** From the kill until every one of its nodes' Node Lease was renewed again (served by the new holder). */
  servedMs: number;
  /** The longest gap between Node Lease renewals of those nodes across the kill. */
  maxLeaseGapMs: number;
  /** Of those nodes, how many went without a renewal for longer than 20 s / the Lease's 40 s. */
  leaseGapsOver20s: number;
  leaseGapsOver40s: number;
  /** Nodes NotReady at once, most, from the kill until all were served again plus a minute. */
  maxNotReady: number;
  /** When it was killed and when the last node was served again (epoch ms), for the health windows. */
  killedAt: number;
  servedAt: number;
}

/**
 * For each node in `nodes`: the renewal before `killedAt` and the first one after it. `servedMs` is the
 * latest of the first renewals after the kill (NaN while one is missing); gaps run from the renewal before.
 */
export function failoverLeaseGaps(
  nodes: Iterable<string>,
  renewals: ReadonlyMap<string, readonly number[]>,
  killedAt: number,
): { servedMs: number; maxGapMs: number; over20s: number; over40s: number; waiting: number } {
  let served = 0;
  let maxGap = 0;
  let over20 = 0;
  let over40 = 0;
  let waiting = 0;
  for (const n of nodes) {
    const times = renewals.get(n) ?? [];
    let before = Number.NEGATIVE_INFINITY;
    let after = Number.POSITIVE_INFINITY;
    for (const t of times) {
      if (t <= killedAt) before = Math.max(before, t);
      else after = Math.min(after, t);
    }
    if (after === Number.POSITIVE_INFINITY) {
      waiting++;
      continue;
    }
    served = Math.max(served, after - killedAt);
    if (before !== Number.NEGATIVE_INFINITY) {
      const gap = after - before;
      maxGap = Math.max(maxGap, gap);
      if (gap > 20_000) over20++;
      if (gap > 40_000) over40++;
    }
  }
  return {
    servedMs: waiting ? Number.NaN : served,
    maxGapMs: maxGap,
    over20s: over20,
    over40s: over40,
    waiting,
  };
}

/**
 * Kills the replica holding the most VirtualNodes (SIGKILL: no hand-back, its Leases run out) and waits until
 * the others hold every one of its nodes and have renewed each node's Lease. Resolves with the figures once
 * that holds and a minute more has passed (the survivors sync the pods they adopted), or after `timeoutMs`.
 */
export async function failOver(
  driver: KubeClient,
  members: readonly AgentProcess[],
  leases: LeaseWatch,
  readiness: NodeReadyWatch,
  log: (s: string) => void,
  timeoutMs = 180_000,
): Promise<Failover> {
  const before = await shardHolders(driver, SHARD_NS);
  const held = new Map<string, string[]>();
  for (const [node, holder] of before) held.set(holder, [...(held.get(holder) ?? []), node]);
  const victim = [...members].sort(
    (a, b) => (held.get(b.name)?.length ?? 0) - (held.get(a.name)?.length ?? 0),
  )[0];
  if (!victim) throw new Error('no replica to kill');
  const nodes = new Set(held.get(victim.name) ?? []);
  log(
    `fail-over: killing ${victim.name} (holds ${nodes.size} of ${before.size} VirtualNodes, ${splitOf(before)})`,
  );
  const killedAt = Date.now();
  process.kill(victim.pid, 'SIGKILL');
  await victim.stop(0);
  let takenAt = Number.NaN;
  let after = before;
  const deadline = killedAt + timeoutMs;
  let gaps: ReturnType<typeof failoverLeaseGaps>;
  for (;;) {
    if (Number.isNaN(takenAt)) {
      after = await shardHolders(driver, SHARD_NS);
      if ([...nodes].every((n) => (after.get(n) ?? victim.name) !== victim.name)) takenAt = Date.now();
    }
    gaps = failoverLeaseGaps(nodes, leases.renewals, killedAt);
    if (!Number.isNaN(takenAt) && gaps.waiting === 0) break;
    if (Date.now() > deadline) {
      log(`fail-over: after ${timeoutMs / 1000} s ${gaps.waiting} of its nodes not served again`);
      break;
    }
    await sleep(250);
  }
  const servedAt = Number.isNaN(gaps.servedMs) ? Date.now() : killedAt + gaps.servedMs;
  log(
    `fail-over: shard Leases taken after ${((takenAt - killedAt) / 1000).toFixed(1)} s, ` +
      `Node Leases renewed after ${(gaps.servedMs / 1000).toFixed(1)} s (${splitOf(after)}); watching a minute more`,
  );
  await sleep(60_000);
  return {
    replica: victim.name,
    nodes: nodes.size,
    splitBefore: splitOf(before),
    splitAfter: splitOf(after),
    takenMs: takenAt - killedAt,
    servedMs: gaps.servedMs,
    maxLeaseGapMs: gaps.maxGapMs,
    leaseGapsOver20s: gaps.over20s,
    leaseGapsOver40s: gaps.over40s,
    maxNotReady: readiness.timeline.maxBetween(killedAt, Date.now()),
    killedAt,
    servedAt,
  };
}

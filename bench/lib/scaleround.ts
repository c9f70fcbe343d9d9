// One side's round in the scale scenario: its pods created, Ready, deleted and gone (podRound); what the
// agent's /metrics says at a moment (scrape); the namespace's Events counted (tallyEvents) and waited for
// until they stand still (waitEventsSettled).
import { httpGet, type AgentProcess } from './agents.js';
import type { BenchCluster } from './cluster.js';
import { createPods, deletePods, ensureNamespace, PodWatch } from './pods.js';
import { promValue } from './prom.js';
import { histogramBuckets } from './scalehealth.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Scraped {
  lagP99Ms: number;
  heapMiB: number;
  heapCommittedMiB: number;
  youngCommittedMiB: number;
  /** kubelet_operator_event_loop_delay_seconds, cumulative (phaseQuantile reads a phase from two of these). */
  loopDelayBuckets: Map<number, number>;
  /** Event writes so far by outcome (kubelet_operator_events_total), and those waiting in the recorders. */
  events: {
    created: number;
    patched: number;
    filtered: number;
    droppedQueueFull: number;
    failed: number;
    pending: number;
  };
}

export const NOT_SCRAPED: Scraped = {
  lagP99Ms: Number.NaN,
  heapMiB: Number.NaN,
  heapCommittedMiB: Number.NaN,
  youngCommittedMiB: Number.NaN,
  loopDelayBuckets: new Map(),
  events: {
    created: Number.NaN,
    patched: Number.NaN,
    filtered: Number.NaN,
    droppedQueueFull: Number.NaN,
    failed: Number.NaN,
    pending: Number.NaN,
  },
};

/**
 * The replicas' readings as one: heaps and Event counts summed, the cumulative delay histograms added up (a
 * phase's p99 is then over all replicas' samples), the prom-client lag p99 the worst of them.
 */
export function mergeScrapes(list: readonly Scraped[]): Scraped {
  if (list.length === 1) return list[0]!;
  const sum = (f: (s: Scraped) => number): number => list.reduce((a, s) => a + f(s), 0);
  const buckets = new Map<number, number>();
  for (const s of list) for (const [le, n] of s.loopDelayBuckets) buckets.set(le, (buckets.get(le) ?? 0) + n);
  return {
    lagP99Ms: Math.max(...list.map((s) => s.lagP99Ms)),
    heapMiB: sum((s) => s.heapMiB),
    heapCommittedMiB: sum((s) => s.heapCommittedMiB),
    youngCommittedMiB: sum((s) => s.youngCommittedMiB),
    loopDelayBuckets: buckets,
    events: {
      created: sum((s) => s.events.created),
      patched: sum((s) => s.events.patched),
      filtered: sum((s) => s.events.filtered),
      droppedQueueFull: sum((s) => s.events.droppedQueueFull),
      failed: sum((s) => s.events.failed),
      pending: sum((s) => s.events.pending),
    },
  };
}

/** A replica's last reading: one that is gone (killed in a fail-over) still counts with what it last showed. */
const lastScrape = new WeakMap<AgentProcess, Scraped>();

/**
 * Event-loop lag p99 and V8 heap in use, from the agent's /metrics (every replica's, merged, for a group);
 * NaN for an agent without them.
 */
export async function scrape(agent: AgentProcess, hasMetrics: boolean): Promise<Scraped> {
  if (!hasMetrics) return NOT_SCRAPED;
  if (agent.members) {
    const each = await Promise.all(
      agent.members.map(async (m) => {
        const s = await scrape(m, true);
        if (!Number.isNaN(s.heapMiB)) lastScrape.set(m, s);
        return lastScrape.get(m) ?? s;
      }),
    );
    return mergeScrapes(each);
  }
  // prom-client resets its event-loop delay histogram on every scrape: this p99 covers the time since the
  // previous scrape.
  const res = await httpGet(`${agent.httpBase}/metrics`, 30_000).catch(() => undefined);
  if (!res) return NOT_SCRAPED;
  const events = (outcome: string): number =>
    promValue(res.body, 'kubelet_operator_events_total', { outcome }) || 0;
  return {
    lagP99Ms: res ? promValue(res.body, 'nodejs_eventloop_lag_p99_seconds') * 1000 : Number.NaN,
    heapMiB: res ? promValue(res.body, 'nodejs_heap_size_used_bytes') / 2 ** 20 : Number.NaN,
    // What V8 holds from the OS for its heap, and of that the young generation (its two semi-spaces, as large
    // as --max-semi-space-size lets them grow): with heap used, where RSS goes.
    heapCommittedMiB: res ? promValue(res.body, 'nodejs_heap_size_total_bytes') / 2 ** 20 : Number.NaN,
    youngCommittedMiB: res
      ? promValue(res.body, 'nodejs_heap_space_size_total_bytes', { space: 'new' }) / 2 ** 20
      : Number.NaN,
    loopDelayBuckets: histogramBuckets(res.body, 'kubelet_operator_event_loop_delay_seconds'),
    events: {
      created: events('created'),
      patched: events('patched'),
      filtered: events('filtered'),
      droppedQueueFull: events('dropped_queue_full'),
      failed: events('failed'),
      pending: promValue(res.body, 'kubelet_operator_events_pending') || 0,
    },
  };
}

/** One round of pods through one side: create all, wait Ready, delete all, wait gone. */
export async function podRound(
  bc: BenchCluster,
  ns: string,
  plan: { name: string; node: string }[],
  concurrency: number,
  hooks: {
    afterReady?: () => Promise<void>;
    /** Called once the watch runs, before the first create (the growth table watches the Ready count). */
    onWatch?: (watch: PodWatch) => void;
    /** At most this many creates, and then deletes, started per second (unset: `concurrency` alone bounds them). */
    ratePerSec?: number;
  } = {},
): Promise<{
  watch: PodWatch;
  t0: number;
  created: number;
  t1: number;
  t2: number;
  deleted: number;
  t3: number;
  ready: boolean;
  gone: boolean;
}> {
  await ensureNamespace(bc.driver, ns);
  const watch = new PodWatch(bc.driver, ns);
  await watch.start();
  try {
    hooks.onWatch?.(watch);
    const t0 = Date.now();
    await createPods(bc.driver, watch, plan, concurrency, undefined, hooks.ratePerSec);
    const created = Date.now();
    const ready = await watch.waitFor((r) => r.readyAt !== undefined, plan.length, 60_000 + plan.length * 60);
    const t1 = Date.now();
    await hooks.afterReady?.();
    const t2 = Date.now();
    await deletePods(
      bc.driver,
      ns,
      plan.map((p) => p.name),
      concurrency,
      hooks.ratePerSec,
    );
    const deleted = Date.now();
    const gone = await watch.waitFor((r) => r.goneAt !== undefined, plan.length, 60_000 + plan.length * 40);
    const t3 = Date.now();
    return { watch, t0, created, t1, t2, deleted, t3, ready, gone };
  } finally {
    await watch.stop();
  }
}

/** Events of a namespace by reason: how many objects and the sum of their counts (paged list). */
export async function tallyEvents(bc: BenchCluster, ns: string): Promise<Record<string, [number, number]>> {
  const out: Record<string, [number, number]> = {};
  let cont: string | undefined;
  do {
    const page = await bc.driver.request<{
      items: { reason?: string; count?: number }[];
      metadata: { continue?: string };
    }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
      query: { limit: 5000, ...(cont ? { continue: cont } : {}) },
    });
    for (const e of page.items) {
      const t = (out[e.reason ?? ''] ??= [0, 0]);
      t[0]++;
      t[1] += e.count ?? 1;
    }
    cont = page.metadata.continue || undefined;
  } while (cont);
  return out;
}

/**
 * Waits until the namespace's Event count has not moved for three polls a second apart (`maxMs` at most).
 * Resolves to the time it took and to when the count was last seen to change (undefined when it never moved
 * after the first poll: it was final already). A list with limit=1 reports the rest as remainingItemCount.
 */
export async function waitEventsSettled(
  bc: BenchCluster,
  ns: string,
  maxMs = 60_000,
): Promise<{ ms: number; changedAt: number | undefined }> {
  const t0 = Date.now();
  let last = -1;
  let still = 0;
  let changedAt: number | undefined;
  while (still < 3 && Date.now() - t0 < maxMs) {
    const page = await bc.driver.request<{ items: unknown[]; metadata: { remainingItemCount?: number } }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
      query: { limit: 1 },
    });
    const n = page.items.length + (page.metadata.remainingItemCount ?? 0);
    if (last >= 0 && n !== last) changedAt = Date.now();
    still = n === last ? still + 1 : 0;
    last = n;
    if (still < 3) await sleep(1000);
  }
  return { ms: Date.now() - t0, changedAt };
}

// What the API server says about a scale round's requests, from its /metrics (read with the driver's client
// certificate, system:masters): how long its Lease writes took there and how long API Priority and Fairness
// kept requests queued, by priority level. It tells a late Lease that waited in an APF queue (the agent's
// priority level full of its own requests) from one the server was slow to serve, and a side whose requests
// were refused (429) from one whose requests were only slow. The reading is pure; only the fetch is I/O.
import { promSamples, type PromSample } from './prom.js';
import { bucketsOf, histogramBuckets, phaseQuantile } from './scalehealth.js';
import { driverGet } from './apiserverprofile.js';
import type { BenchCluster } from './cluster.js';

/** Node Leases are written by PUT (the kubelet's, ours and kwok's alike); the server's latency of them. */
const LEASE_PUT = { group: 'coordination.k8s.io', resource: 'leases', verb: 'PUT' };
const REQUEST_DURATION = 'apiserver_request_duration_seconds';
const APF_WAIT = 'apiserver_flowcontrol_request_wait_duration_seconds';
const APF_REJECTED = 'apiserver_flowcontrol_rejected_requests_total';

export interface ApiserverReading {
  /** Cumulative buckets of the Lease PUTs' latency at the server (its APF wait included). */
  leasePut: Map<number, number>;
  /** Cumulative buckets of APF queue waits of executed requests, by priority level. */
  apfWait: Map<string, Map<number, number>>;
  /** Requests APF rejected (429), by priority level. */
  apfRejected: Map<string, number>;
}

export const NO_READING: ApiserverReading = {
  leasePut: new Map(),
  apfWait: new Map(),
  apfRejected: new Map(),
};

/** Reads the figures above out of kube-apiserver's /metrics text. */
export function apiserverReading(text: string): ApiserverReading {
  const waitsByLevel = new Map<string, PromSample[]>();
  for (const s of promSamples(text, `${APF_WAIT}_bucket`)) {
    if (s.labels.execute !== 'true') continue;
    const level = s.labels.priority_level ?? '';
    const list = waitsByLevel.get(level) ?? [];
    list.push(s);
    waitsByLevel.set(level, list);
  }
  const apfWait = new Map([...waitsByLevel].map(([level, samples]) => [level, bucketsOf(samples)]));
  const apfRejected = new Map<string, number>();
  for (const { labels, value } of promSamples(text, APF_REJECTED)) {
    const level = labels.priority_level ?? '';
    apfRejected.set(level, (apfRejected.get(level) ?? 0) + value);
  }
  const leasePut = histogramBuckets(
    text,
    REQUEST_DURATION,
    (l) => l.group === LEASE_PUT.group && l.resource === LEASE_PUT.resource && l.verb === LEASE_PUT.verb,
  );
  return { leasePut, apfWait, apfRejected };
}

/** Between two readings: the Lease PUTs and each priority level's queue waits and rejections. */
export interface ApiserverPhase {
  leasePuts: number;
  /** p99 of the Lease PUTs' server latency, as its bucket's bound (NaN without a PUT). */
  leasePutP99Ms: number;
  /** Per priority level that executed or rejected a request in the window. */
  levels: Record<string, { executed: number; waitP99Ms: number; rejected: number }>;
}

function total(b: ReadonlyMap<number, number>): number {
  return b.get(Infinity) ?? 0;
}

export function apiserverPhase(before: ApiserverReading, after: ApiserverReading): ApiserverPhase {
  const levels: ApiserverPhase['levels'] = {};
  const names = new Set([...after.apfWait.keys(), ...after.apfRejected.keys()]);
  for (const level of names) {
    const a = after.apfWait.get(level) ?? new Map<number, number>();
    const b = before.apfWait.get(level) ?? new Map<number, number>();
    const executed = total(a) - total(b);
    const rejected = (after.apfRejected.get(level) ?? 0) - (before.apfRejected.get(level) ?? 0);
    if (executed <= 0 && rejected <= 0) continue;
    levels[level] = { executed, waitP99Ms: phaseQuantile(b, a, 0.99) * 1000, rejected };
  }
  return {
    leasePuts: total(after.leasePut) - total(before.leasePut),
    leasePutP99Ms: phaseQuantile(before.leasePut, after.leasePut, 0.99) * 1000,
    levels,
  };
}

/** Over all priority levels: the one whose queue wait p99 was longest, and all rejections. */
export function worstLevel(p: ApiserverPhase): { level: string; waitP99Ms: number; rejected: number } {
  let level = '';
  let waitP99Ms = Number.NaN;
  let rejected = 0;
  for (const [name, l] of Object.entries(p.levels)) {
    rejected += l.rejected;
    if (Number.isNaN(l.waitP99Ms)) continue;
    if (Number.isNaN(waitP99Ms) || l.waitP99Ms > waitP99Ms) {
      level = name;
      waitP99Ms = l.waitP99Ms;
    }
  }
  return { level, waitP99Ms, rejected };
}

/** One reading of the benchmark's API server; NO_READING (and a log line) when it does not answer. */
export async function readApiserver(bc: BenchCluster, log: (s: string) => void): Promise<ApiserverReading> {
  try {
    return apiserverReading((await driverGet(bc, '/metrics', 30_000)).toString('utf8'));
  } catch (err) {
    log(`the API server's /metrics not read: ${(err as Error).message}`);
    return NO_READING;
  }
}

// Node Lease renewals seen by a watch, and whether each node renewed on time during a window. Pure analysis
// plus a small watcher.
import type { KubeClient } from '../../src/kube/client.js';
import { keepWatching, type KeptWatch } from './watch.js';

export interface LeaseCadence {
  nodes: number;
  renewals: number;
  /** Renewals a perfect heartbeat would make in the window: nodes x window / interval (rounded down). */
  expected: number;
  /** Largest gap between consecutive renewals of one node (the window's end counts as a renewal). */
  maxGapMs: number;
  /** Gaps longer than `lateMs`. */
  late: number;
  /** Gaps longer than the lease duration: the node would have been seen as down. */
  expired: number;
}

/**
 * Analyses renewTimes (epoch ms, any order) per node over [fromMs, toMs]. A gap is measured from each
 * renewal to the next one, starting from the last renewal before the window, and from the last renewal to
 * the window's end.
 */
export function leaseCadence(
  renewals: ReadonlyMap<string, readonly number[]>,
  fromMs: number,
  toMs: number,
  opts: { intervalMs: number; lateMs: number; durationMs: number },
): LeaseCadence {
  let count = 0;
  let maxGap = 0;
  let late = 0;
  let expired = 0;
  for (const times of renewals.values()) {
    const sorted = [...new Set(times)].sort((a, b) => a - b);
    const before = sorted.filter((t) => t < fromMs).pop();
    const inside = sorted.filter((t) => t >= fromMs && t <= toMs);
    count += inside.length;
    const points = [...(before !== undefined ? [before] : [fromMs]), ...inside, toMs];
    for (let i = 1; i < points.length; i++) {
      const gap = points[i]! - points[i - 1]!;
      maxGap = Math.max(maxGap, gap);
      if (gap > opts.lateMs) late++;
      if (gap > opts.durationMs) expired++;
    }
  }
  return {
    nodes: renewals.size,
    renewals: count,
    expected: Math.floor((renewals.size * (toMs - fromMs)) / opts.intervalMs),
    maxGapMs: maxGap,
    late,
    expired,
  };
}

/** The cadences of several windows of the same nodes as one: counts added, the longest gap of all. */
export function joinCadences(parts: readonly LeaseCadence[]): LeaseCadence {
  if (parts.length === 1) return parts[0]!;
  return {
    nodes: Math.max(0, ...parts.map((p) => p.nodes)),
    renewals: parts.reduce((a, p) => a + p.renewals, 0),
    expected: parts.reduce((a, p) => a + p.expected, 0),
    maxGapMs: Math.max(0, ...parts.map((p) => p.maxGapMs)),
    late: parts.reduce((a, p) => a + p.late, 0),
    expired: parts.reduce((a, p) => a + p.expired, 0),
  };
}

/** Records every renewTime of the Leases in kube-node-lease whose name is in `nodes`. */
export class LeaseWatch {
  readonly renewals = new Map<string, number[]>();
  private watch: KeptWatch | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly nodes: ReadonlySet<string>,
  ) {}

  start(): void {
    this.watch = keepWatching(
      this.client,
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
      (e) => {
        const l = e.object as { metadata?: { name?: string }; spec?: { renewTime?: string } };
        const name = l.metadata?.name;
        if (!name || !this.nodes.has(name) || !l.spec?.renewTime) return;
        const t = Date.parse(l.spec.renewTime);
        const list = this.renewals.get(name) ?? [];
        if (list[list.length - 1] !== t) list.push(t);
        this.renewals.set(name, list);
      },
    );
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}

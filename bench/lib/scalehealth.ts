// What the ceiling run (issue #58) watches besides the pods: whether any Node went NotReady at any moment
// (NotReadyTimeline, fed by NodeReadyWatch), the event-loop delay of each phase from the operator's cumulative
// histogram (phaseQuantile), and the sizes at which the growth table samples the operator (growthMilestones).
// Everything but the watcher is pure.
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { nodeReady } from '../../scripts/lib/cluster.js';
import { promSamples, type PromSample } from './prom.js';
import { keepWatching, type KeptWatch } from './watch.js';

/** Ready pods at which the growth table samples RSS, heap and CPU: the sizes below `total`, and `total`. */
export function growthMilestones(total: number): number[] {
  return [...[10_000, 25_000, 50_000, 100_000].filter((m) => m < total), total];
}

/**
 * How many of a set of Nodes are NotReady, moment by moment. A node counts only once it has been Ready (its
 * registration is the start-up's business, timed apart), and from then on every report that is not Ready
 * counts, a deleted Node too.
 */
export class NotReadyTimeline {
  private readonly ready = new Map<string, boolean>();
  private notReady = 0;
  /** [epoch ms, NotReady nodes from then on], in time order; starts at 0. */
  readonly changes: [number, number][] = [[0, 0]];
  /** Nodes that went from Ready to NotReady at least once. */
  readonly wentNotReady = new Set<string>();

  observe(t: number, node: string, isReady: boolean): void {
    const was = this.ready.get(node);
    if (was === undefined && !isReady) return;
    if (was === isReady) return;
    this.ready.set(node, isReady);
    if (was === undefined) return;
    this.notReady += isReady ? -1 : 1;
    if (!isReady) this.wentNotReady.add(node);
    this.changes.push([t, this.notReady]);
  }

  /** The most nodes NotReady at once in [from, to] (the count standing at `from` included). */
  maxBetween(from: number, to: number): number {
    let max = 0;
    let standing = 0;
    for (const [t, n] of this.changes) {
      if (t <= from) standing = n;
      else if (t <= to) max = Math.max(max, n);
    }
    return Math.max(max, standing);
  }
}

/**
 * Cumulative bucket counts of a Prometheus histogram, by upper bound (`+Inf` as Infinity), from text; summed
 * over its series, or over those whose labels `where` accepts.
 */
export function histogramBuckets(
  text: string,
  name: string,
  where: (labels: Record<string, string>) => boolean = () => true,
): Map<number, number> {
  return bucketsOf(promSamples(text, `${name}_bucket`).filter((s) => where(s.labels)));
}

/** Bucket samples (`le` labels) summed by upper bound (`+Inf` as Infinity); a sample without `le` is left out. */
export function bucketsOf(samples: readonly PromSample[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const { labels, value } of samples) {
    if (labels.le === undefined) continue;
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    out.set(le, (out.get(le) ?? 0) + value);
  }
  return out;
}

/**
 * The q-quantile of what a cumulative histogram counted between two scrapes, as the upper bound of the bucket
 * it falls in (the histogram's resolution: a p99 of "<= 50 ms" reads 0.05). NaN when nothing was counted.
 */
export function phaseQuantile(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
  q: number,
): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const delta = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const total = delta[delta.length - 1] ?? 0;
  if (!(total > 0)) return Number.NaN;
  const want = q * total;
  for (let i = 0; i < bounds.length; i++) if (delta[i]! >= want) return bounds[i]!;
  return Infinity;
}

/** Records every Ready report of the named Nodes into a NotReadyTimeline; a broken watch starts over. */
export class NodeReadyWatch {
  readonly timeline = new NotReadyTimeline();
  private watch: KeptWatch | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly nodes: ReadonlySet<string>,
  ) {}

  start(): void {
    this.watch = keepWatching(this.client, '/api/v1/nodes', (e) => {
      const n = e.object as Node;
      const name = n.metadata?.name ?? '';
      if (!this.nodes.has(name)) return;
      this.timeline.observe(Date.now(), name, e.type !== 'DELETED' && nodeReady(n));
    });
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}

// A live table of nodes and pods for `npm run up`: redrawn in place (ANSI) on a terminal, printed as
// plain snapshots when stdout is a pipe or a file (only when it changed, so logs stay short).
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';

interface List<T> {
  items: T[];
}
interface Job {
  metadata: { name?: string };
  status?: { succeeded?: number; conditions?: { type: string; status: string }[] };
}

export interface Snapshot {
  lines: string[];
  /** Every node Ready, every pod Ready or Succeeded, every Job Complete. */
  settled: boolean;
}

/** What `kubectl get pods` shows in STATUS, for the common cases. */
export function podStatus(p: Pod): string {
  if (p.metadata.deletionTimestamp) return 'Terminating';
  const s = p.status;
  if (s?.phase === 'Succeeded') return 'Completed';
  const inits = s?.initContainerStatuses ?? [];
  const nInit = p.spec?.initContainers?.length ?? 0;
  const initDone = inits.filter((c) => c.state?.terminated?.exitCode === 0).length;
  if (nInit > 0 && initDone < nInit) {
    const waiting = inits.find(
      (c) => c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing',
    );
    return waiting ? `Init:${waiting.state!.waiting!.reason}` : `Init:${initDone}/${nInit}`;
  }
  for (const c of s?.containerStatuses ?? []) {
    const w = c.state?.waiting?.reason;
    if (w) return w;
    const t = c.state?.terminated;
    if (t) return t.reason ?? (t.exitCode === 0 ? 'Completed' : 'Error');
  }
  return s?.phase ?? 'Pending';
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('   ')
      .trimEnd(),
  );
}

/** Reads nodes, the namespace's pods and Jobs, and renders them as kubectl-like tables. */
export async function snapshot(client: KubeClient, namespace: string): Promise<Snapshot> {
  const [nodes, pods, jobs] = await Promise.all([
    client.request<List<Node>>({ method: 'GET', path: '/api/v1/nodes' }),
    client.request<List<Pod>>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/pods` }),
    client.request<List<Job>>({ method: 'GET', path: `/apis/batch/v1/namespaces/${namespace}/jobs` }),
  ]);
  const nodeRows = nodes.items.map((n) => {
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
    return [
      n.metadata.name ?? '',
      ready?.status === 'True' ? 'Ready' : 'NotReady',
      n.status?.nodeInfo?.containerRuntimeVersion ?? '',
      n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '',
    ];
  });
  const podReady = (p: Pod): boolean =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const podRows = pods.items
    .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
    .map((p) => {
      const cs = p.status?.containerStatuses ?? [];
      return [
        p.metadata.name ?? '',
        `${cs.filter((c) => c.ready).length}/${p.spec?.containers.length ?? 0}`,
        podStatus(p),
        String(cs.reduce((n, c) => n + (c.restartCount ?? 0), 0)),
        p.status?.podIP ?? '<none>',
        p.spec?.nodeName ?? '<none>',
      ];
    });
  const complete = (j: Job): boolean =>
    j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ?? false;
  const settled =
    nodeRows.every((r) => r[1] === 'Ready') &&
    pods.items.length > 0 &&
    pods.items.every((p) => podReady(p) || p.status?.phase === 'Succeeded') &&
    jobs.items.every(complete);
  const lines = [
    ...table([['NODE', 'STATUS', 'RUNTIME', 'INTERNAL-IP'], ...nodeRows]),
    '',
    ...table([['POD', 'READY', 'STATUS', 'RESTARTS', 'IP', 'NODE'], ...podRows]),
    '',
    `jobs: ${jobs.items.map((j) => `${j.metadata.name} ${complete(j) ? 'Complete' : 'Running'}`).join(', ') || 'none'}`,
  ];
  return { lines, settled };
}

/**
 * Shows the table every `periodMs` until everything settled (or `timeoutMs` passed); resolves whether
 * it settled. On a TTY the table is redrawn in place; otherwise a snapshot is printed when it changed.
 */
export async function watchProgress(
  client: KubeClient,
  namespace: string,
  opts: { periodMs?: number; timeoutMs?: number; out?: NodeJS.WriteStream } = {},
): Promise<boolean> {
  const out = opts.out ?? process.stdout;
  const tty = out.isTTY === true;
  const deadline = Date.now() + (opts.timeoutMs ?? 180_000);
  let drawn = 0;
  let last = '';
  for (;;) {
    const snap = await snapshot(client, namespace).catch((err: unknown) => ({
      lines: [`(could not read the cluster: ${err instanceof Error ? err.message : String(err)})`],
      settled: false,
    }));
    const text = snap.lines.join('\n');
    if (tty) {
      // Up to the first line of the previous frame, clear to the end of the screen, draw again.
      if (drawn > 0) out.write(`\x1b[${drawn}F\x1b[J`);
      out.write(text + '\n');
      drawn = snap.lines.length;
    } else if (text !== last) {
      out.write(`--- ${new Date().toISOString()}\n${text}\n`);
    }
    last = text;
    if (snap.settled) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, opts.periodMs ?? 1000));
  }
}

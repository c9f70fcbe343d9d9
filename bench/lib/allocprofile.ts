// Bytes allocated, collected ones included, counted by V8's sampling heap profiler: in this process
// (`sampleAllocations`, for bench/perpod-alloc.ts) or in the operator's own process over a window the
// benchmark opens and closes (`allocProfileNodeArgs` + `AllocWindow`, for `scale --alloc-profile DIR`),
// and summarised by function. A built-in or Node-internal frame (`Map`, `join`, Node's HTTP client)
// counts to the nearest function of the project's, or of a package's, that called it.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import inspector from 'node:inspector/promises';
import path from 'node:path';

export interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Every allocation is counted once about this many bytes have been allocated (V8 samples at random). */
const SAMPLING_INTERVAL = 4096;
const SAMPLING = {
  samplingInterval: SAMPLING_INTERVAL,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
};

/** The total and the bytes by function (`name file:line`, the file from its src/, dist/ or test/ on). */
export function summarizeAllocations(
  head: ProfileNode,
  leaveOut?: RegExp,
): { total: number; byFunction: [string, number][]; leftOut: number } {
  const byFunction = new Map<string, number>();
  let total = 0;
  let leftOut = 0;
  const walk = (n: ProfileNode, owner: string): void => {
    const { functionName, url, lineNumber } = n.callFrame;
    const own = url.startsWith('file:')
      ? `${functionName || '(anonymous)'} ${url.replace(/^.*?\/(src|dist|test|node_modules)\//, '$1/')}:${lineNumber + 1}`
      : owner;
    if (leaveOut?.test(own)) leftOut += n.selfSize;
    else {
      total += n.selfSize;
      byFunction.set(own, (byFunction.get(own) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, own);
  };
  walk(head, '(outside the project)');
  return { total, byFunction: [...byFunction].sort((a, b) => b[1] - a[1]), leftOut };
}

/**
 * Logs the bytes allocated `during` (e.g. "from the first create to all Ready") in all and per pod, and the
 * `top` functions that allocated most, per pod; returns the bytes per pod. What functions matching `leaveOut`
 * allocated themselves (a test fixture's fakes standing in for the API server) is left out and said so.
 */
export function logAllocations(
  head: ProfileNode,
  opts: { pods: number; during: string; top: number; log: (s: string) => void; leaveOut?: RegExp },
): number {
  const { pods, log } = opts;
  const { total, byFunction, leftOut } = summarizeAllocations(head, opts.leaveOut);
  const kb = (b: number): string => `${(b / pods / 1024).toFixed(1)} KB`;
  const without = leftOut > 0 ? ` (${kb(leftOut)} per pod by ${String(opts.leaveOut)} left out)` : '';
  log(`allocated ${(total / 2 ** 20).toFixed(0)} MiB ${opts.during}, ${kb(total)} per pod${without}`);
  for (const [fn, bytes] of byFunction.slice(0, opts.top)) log(`  ${kb(bytes).padStart(9)}  ${fn}`);
  return total / pods;
}

/** Counts what `run` allocates between its `start()` and its end, in this process. */
export async function sampleAllocations<T>(
  run: (start: () => void) => Promise<T>,
): Promise<{ head: ProfileNode; result: T }> {
  const session = new inspector.Session();
  session.connect();
  try {
    const result = await run(() => void session.post('HeapProfiler.startSampling', SAMPLING));
    const stopped = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
    return { head: stopped.profile.head, result };
  } finally {
    session.disconnect();
  }
}

/**
 * node flags that load a preload into the operator: it starts sampling once `<file>.start` exists and writes
 * the profile to `file` once `<file>.stop` does (it looks every 50 ms; nothing else changes in the process).
 */
export function allocProfileNodeArgs(file: string): string[] {
  const f = JSON.stringify(path.resolve(file));
  const preload = `
    import inspector from 'node:inspector';
    import { existsSync, writeFileSync } from 'node:fs';
    const s = new inspector.Session();
    s.connect();
    let on = false;
    const t = setInterval(() => {
      if (!on && existsSync(${f} + '.start')) {
        on = true;
        s.post('HeapProfiler.startSampling', ${JSON.stringify(SAMPLING)});
      } else if (on && existsSync(${f} + '.stop')) {
        clearInterval(t);
        s.post('HeapProfiler.stopSampling', (err, r) => {
          if (err) console.error('allocation profile:', err);
          else writeFileSync(${f}, JSON.stringify(r.profile));
        });
      }
    }, 50);
    t.unref();`;
  return [`--import=data:text/javascript,${encodeURIComponent(preload)}`];
}

/** The benchmark's side of allocProfileNodeArgs: opens the window, closes it and reads what was counted. */
export class AllocWindow {
  constructor(private readonly file: string) {}

  async open(): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    await writeFile(`${this.file}.start`, '');
  }

  /**
   * Closes the window and waits (up to a minute) for the operator to write its profile: until then the read
   * finds no file, or a file still being written that does not parse, and is tried again.
   */
  async close(): Promise<ProfileNode> {
    await writeFile(`${this.file}.stop`, '');
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        return (JSON.parse(await readFile(this.file, 'utf8')) as { head: ProfileNode }).head;
      } catch (err) {
        if (Date.now() > deadline) {
          throw new Error(`no allocation profile in ${this.file} after 60 s: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
}

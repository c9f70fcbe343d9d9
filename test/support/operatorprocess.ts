/**
 * The real operator process (`node --import tsx src/main.ts`) for tests that kill, restart or run several of
 * them against one API server: its output goes to a log file, readiness is its /readyz, and every child
 * still running is SIGKILLed by `killLive` (tests call it in `after`) or, as a last resort, at exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { REPO_ROOT } from './controlplane.js';
import { eventually } from './eventually.js';

/** One operator process; its output goes to `logPath`. */
export class OperatorProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private exitedFlag = false;

  constructor(
    readonly logPath: string,
    kubeconfig: string,
    /** More flags (e.g. the shard Lease settings). */
    extraArgs: readonly string[] = [],
  ) {
    const fd = openSync(logPath, 'a');
    try {
      // `node --import tsx` (not the tsx CLI) so that the pid is the operator itself, not a wrapper.
      this.child = spawn(
        process.execPath,
        [
          // KO_TEST_OPERATOR_NODE_ARGS: node flags for the operator only, e.g. `--prof` to profile a run.
          ...(process.env.KO_TEST_OPERATOR_NODE_ARGS ?? '').split(' ').filter(Boolean),
          '--import',
          'tsx',
          'src/main.ts',
          '--kubeconfig',
          kubeconfig,
          '--http-port',
          '0',
          '--http-address',
          '127.0.0.1',
          '--log-level',
          'debug',
          ...extraArgs,
        ],
        { cwd: REPO_ROOT, stdio: ['ignore', fd, fd], env: { ...process.env, KUBECONFIG: '' } },
      );
    } finally {
      closeSync(fd);
    }
    live.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        this.exitedFlag = true;
        live.delete(this.child);
        resolve(code);
      }),
    );
  }

  get running(): boolean {
    return !this.exitedFlag;
  }

  /** The health port from the process's log line, then /readyz = 200. */
  async waitReady(timeoutMs = 60_000): Promise<number> {
    const port = await eventually(
      () => {
        if (!this.running) throw new Error(`operator exited; log:\n${this.tail()}`);
        for (const line of readFileSync(this.logPath, 'utf8').split('\n')) {
          if (!line.includes('serving health and metrics')) continue;
          const port = (JSON.parse(line) as { port?: number }).port;
          if (port) return port;
        }
        return undefined;
      },
      timeoutMs,
      'the operator to serve health',
    );
    await eventually(
      async () => {
        if (!this.running) throw new Error(`operator exited; log:\n${this.tail()}`);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        return res.status === 200 ? true : undefined;
      },
      timeoutMs,
      'the operator to be ready',
    );
    return port;
  }

  async kill(signal: NodeJS.Signals): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }

  /** The last `max` log lines that contain every one of `words` (a failure's context), one per line. */
  grep(words: readonly string[], max = 40): string {
    try {
      const lines = readFileSync(this.logPath, 'utf8').split('\n');
      return lines
        .filter((l) => words.every((w) => l.includes(w)))
        .slice(-max)
        .join('\n');
    } catch {
      return '(no log)';
    }
  }

  tail(lines = 30): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Every operator child still running; SIGKILLed in `after` and, as a last resort, at process exit. */
const live = new Set<ChildProcess>();
export const killLive = (): void => {
  for (const c of live) c.kill('SIGKILL');
};
process.on('exit', killLive);

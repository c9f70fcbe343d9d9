// Wall-clock phases of a startup, for the breakdown `npm run up` prints at the end. Phases may overlap
// (containerd starts while the control plane does), so each shows when it started and ended after t0.

interface Phase {
  name: string;
  startMs: number;
  endMs?: number;
  note?: string;
}

export class Phases {
  private readonly phases: Phase[] = [];
  private readonly t0: number;

  /** `t0` defaults to now; `npm run up` passes its process's start. */
  constructor(
    private readonly now: () => number = Date.now,
    t0?: number,
  ) {
    this.t0 = t0 ?? now();
  }

  /** Runs `fn` as the phase `name`; a phase that throws is recorded as failed, and the error passes on. */
  async time<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const phase: Phase = { name, startMs: this.now() - this.t0 };
    this.phases.push(phase);
    try {
      return await fn();
    } catch (err) {
      phase.note = 'failed';
      throw err;
    } finally {
      phase.endMs = this.now() - this.t0;
    }
  }

  /** Milliseconds since t0. */
  elapsedMs(): number {
    return this.now() - this.t0;
  }

  /** One aligned line per phase: `name   start -> end   (duration)`, then the total. */
  lines(): string[] {
    const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
    const width = Math.max(...this.phases.map((p) => p.name.length), 'total'.length);
    const rows = this.phases.map((p) => {
      const end = p.endMs === undefined ? 'running' : s(p.endMs);
      const took = p.endMs === undefined ? '' : `  (${s(p.endMs - p.startMs)})`;
      return `${p.name.padEnd(width)}  ${s(p.startMs).padStart(7)} -> ${end.padStart(7)}${took}${p.note ? ` ${p.note}` : ''}`;
    });
    return [...rows, `${'total'.padEnd(width)}  ${s(this.elapsedMs()).padStart(18)}`];
  }
}

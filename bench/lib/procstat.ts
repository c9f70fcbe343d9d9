// CPU seconds and resident memory of a process from /proc, measured the same way for every agent under test
// (our operator is a Node process, kwok a Go binary): utime+stime from /proc/<pid>/stat, VmRSS and VmHWM
// from /proc/<pid>/status. The parsers are pure; ProcSampler polls them on a timer.
import { readFileSync } from 'node:fs';

/** Clock ticks per second for /proc/<pid>/stat (USER_HZ; 100 on Linux for every common architecture). */
export const CLK_TCK = 100;

/** utime+stime of a /proc/<pid>/stat line, in seconds. */
export function parseProcStatCpu(text: string, clkTck = CLK_TCK): number {
  // The command name (field 2) is in parentheses and may hold spaces: fields count from after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('malformed /proc/<pid>/stat');
  return (utime + stime) / clkTck;
}

/** VmRSS and VmHWM (peak RSS) of a /proc/<pid>/status text, in MiB. */
export function parseProcStatusMem(text: string): { rssMiB: number; hwmMiB: number } {
  const kb = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    if (!m) throw new Error(`no ${field} in /proc/<pid>/status`);
    return Number(m[1]);
  };
  return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
}

export interface ProcSample {
  /** Epoch ms. */
  t: number;
  cpuSec: number;
  rssMiB: number;
  hwmMiB: number;
}

export function readProc(pid: number): ProcSample | undefined {
  try {
    const cpuSec = parseProcStatCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    const mem = parseProcStatusMem(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { t: Date.now(), cpuSec, ...mem };
  } catch {
    return undefined;
  }
}

/** Samples a process every `intervalMs` until stopped; keeps every sample. */
export class ProcSampler {
  readonly samples: ProcSample[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly pid: number,
    private readonly intervalMs = 1000,
  ) {}

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  sample(): ProcSample | undefined {
    const s = readProc(this.pid);
    if (s) this.samples.push(s);
    return s;
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  /** Samples taken in [fromMs, toMs]. */
  between(fromMs: number, toMs: number): ProcSample[] {
    return this.samples.filter((s) => s.t >= fromMs && s.t <= toMs);
  }
}

/** CPU seconds used and the largest RSS seen across samples of one window (first to last sample). */
export function windowUsage(samples: readonly ProcSample[]): { cpuSec: number; maxRssMiB: number } {
  if (samples.length === 0) return { cpuSec: Number.NaN, maxRssMiB: Number.NaN };
  return {
    cpuSec: samples[samples.length - 1]!.cpuSec - samples[0]!.cpuSec,
    maxRssMiB: Math.max(...samples.map((s) => s.rssMiB)),
  };
}

/** RSS at every whole minute of a window (the sample nearest to it), and at its end when that is later. */
export function rssTimeline(
  samples: readonly ProcSample[],
  from: number,
  to: number,
): { minute: number; rssMiB: number }[] {
  const out: { minute: number; rssMiB: number }[] = [];
  if (samples.length === 0) return out;
  const nearest = (t: number): ProcSample =>
    samples.reduce((best, s) => (Math.abs(s.t - t) < Math.abs(best.t - t) ? s : best));
  for (let m = 0; from + m * 60_000 <= to; m++)
    out.push({ minute: m, rssMiB: nearest(from + m * 60_000).rssMiB });
  // A tail of less than a second past the last whole minute is that minute's sample again.
  if ((to - from) % 60_000 >= 1000)
    out.push({ minute: (to - from) / 60_000, rssMiB: samples[samples.length - 1]!.rssMiB });
  return out;
}

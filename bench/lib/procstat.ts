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

/**
 * The machine's CPU time from the first line of /proc/stat, in seconds: `busy` is every state but idle and
 * iowait (user, nice, system, irq, softirq, steal), `all` every state. Guest time is already in user.
 */
export function parseProcStatMachine(text: string, clkTck = CLK_TCK): { busySec: number; allSec: number } {
  const end = text.indexOf('\n');
  const f = (end < 0 ? text : text.slice(0, end)).trim().split(/\s+/);
  if (f[0] !== 'cpu' || f.length < 8) throw new Error('malformed /proc/stat');
  // user nice system idle iowait irq softirq [steal [guest [guest_nice]]]
  const v = f.slice(1, 9).map(Number);
  if (v.some((x) => !Number.isFinite(x))) throw new Error('malformed /proc/stat');
  const all = v.reduce((a, b) => a + b, 0);
  const idle = v[3]! + v[4]!;
  return { busySec: (all - idle) / clkTck, allSec: all / clkTck };
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

/** The whole machine as a sample: `cpuSec` is the busy time of all its CPUs; no memory figures. */
export function readMachine(): ProcSample | undefined {
  try {
    const { busySec } = parseProcStatMachine(readFileSync('/proc/stat', 'utf8'));
    return { t: Date.now(), cpuSec: busySec, rssMiB: Number.NaN, hwmMiB: Number.NaN };
  } catch {
    return undefined;
  }
}

/** Samples a process (or, with `read`, something else) every `intervalMs` until stopped; keeps every sample. */
export class ProcSampler {
  readonly samples: ProcSample[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly pid: number,
    private readonly intervalMs = 1000,
    private readonly read: () => ProcSample | undefined = () => readProc(pid),
  ) {}

  start(): this {
    this.sample();
    // Never what keeps the process alive: a run that failed before stop() still ends.
    this.timer = setInterval(() => this.sample(), this.intervalMs).unref();
    return this;
  }

  sample(): ProcSample | undefined {
    const s = this.read();
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

/**
 * Container logs as the kubelet serves them on /containerLogs: the CRI log format
 * (`<RFC3339Nano> stdout|stderr F|P <text>`), the PodLogOptions query, and the filters (sinceTime,
 * tailLines, timestamps, limitBytes) applied to a stream of records.
 *
 * Contract: parsing and filtering are pure; sources (a CRI log file, the simulated runtime's lines) are
 * async iterables that pause while the consumer does not pull, so a slow HTTP client only ever holds
 * one chunk in memory. Following ends when the source says the container is gone or stopped.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import { KindError } from '../../util/errors.js';

export type LogStream = 'stdout' | 'stderr';

/** One line of a CRI log file. `partial` = the runtime split a long line; the next record continues it. */
export interface CriLogRecord {
  /** The timestamp exactly as written (RFC3339Nano). */
  time: string;
  /** Epoch nanoseconds of `time`. */
  timeNs: bigint;
  stream: LogStream;
  partial: boolean;
  text: string;
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** Epoch nanoseconds of an RFC3339 (optionally fractional) timestamp, or undefined. */
export function parseRFC3339Nano(s: string): bigint | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return undefined;
  const frac = BigInt((m[2] ?? '').padEnd(9, '0'));
  return BigInt(ms) * 1_000_000n + frac;
}

/** Parses one CRI log line (without its newline). Throws InvalidArgument on a malformed line. */
export function parseCriLogLine(line: string): CriLogRecord {
  const s1 = line.indexOf(' ');
  const s2 = s1 < 0 ? -1 : line.indexOf(' ', s1 + 1);
  if (s1 < 0 || s2 < 0)
    throw new KindError('InvalidArgument', `malformed CRI log line: ${line.slice(0, 80)}`);
  const time = line.slice(0, s1);
  const stream = line.slice(s1 + 1, s2);
  const timeNs = parseRFC3339Nano(time);
  if (timeNs === undefined) throw new KindError('InvalidArgument', `bad timestamp in CRI log line: ${time}`);
  if (stream !== 'stdout' && stream !== 'stderr')
    throw new KindError('InvalidArgument', `bad stream in CRI log line: ${stream}`);
  // The tag field (F, P, or a future colon-separated list) is optional in old runtimes.
  const s3 = line.indexOf(' ', s2 + 1);
  const tag = s3 < 0 ? line.slice(s2 + 1) : line.slice(s2 + 1, s3);
  if (/^[A-Z](?::[A-Z])*$/.test(tag)) {
    return {
      time,
      timeNs,
      stream,
      partial: tag.split(':').includes('P'),
      text: s3 < 0 ? '' : line.slice(s3 + 1),
    };
  }
  return { time, timeNs, stream, partial: false, text: line.slice(s2 + 1) };
}

/** PodLogOptions as the node API reads them from the query. */
export interface LogOptions {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  /** Only records at or after this time (epoch ns); from sinceSeconds or sinceTime. */
  sinceNs?: bigint;
}

function parseBool(name: string, v: string): boolean {
  // Go's strconv.ParseBool, which the API server's query conversion uses.
  if (['1', 't', 'T', 'TRUE', 'true', 'True', ''].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw new KindError('InvalidArgument', `${name}: invalid boolean ${JSON.stringify(v)}`);
}

function parseInt64(name: string, v: string, min: number): number {
  if (!/^-?\d+$/.test(v))
    throw new KindError('InvalidArgument', `${name}: invalid integer ${JSON.stringify(v)}`);
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new KindError('InvalidArgument', `${name}: out of range`);
  if (n < min) throw new KindError('InvalidArgument', `${name}: must be greater than or equal to ${min}`);
  return n;
}

const KNOWN_PARAMS = new Set([
  'follow',
  'previous',
  'timestamps',
  'tailLines',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
  'insecureSkipTLSVerifyBackend',
  'container',
  'pretty',
]);

/**
 * Reads PodLogOptions from a query. Throws InvalidArgument (-> 400) on a malformed value, on both
 * sinceSeconds and sinceTime, or on an unknown parameter.
 */
export function parseLogOptions(q: URLSearchParams, nowMs: number): LogOptions {
  for (const k of q.keys()) {
    if (!KNOWN_PARAMS.has(k))
      throw new KindError('InvalidArgument', `unknown query parameter ${JSON.stringify(k)}`);
  }
  const get = (k: string): string | undefined => q.get(k) ?? undefined;
  const opts: LogOptions = {
    follow: get('follow') !== undefined ? parseBool('follow', get('follow')!) : false,
    previous: get('previous') !== undefined ? parseBool('previous', get('previous')!) : false,
    timestamps: get('timestamps') !== undefined ? parseBool('timestamps', get('timestamps')!) : false,
  };
  if (get('tailLines') !== undefined) opts.tailLines = parseInt64('tailLines', get('tailLines')!, 0);
  if (get('limitBytes') !== undefined) opts.limitBytes = parseInt64('limitBytes', get('limitBytes')!, 1);
  const ss = get('sinceSeconds');
  const st = get('sinceTime');
  if (ss !== undefined && st !== undefined)
    throw new KindError('InvalidArgument', 'at most one of sinceTime or sinceSeconds may be specified');
  if (ss !== undefined) {
    const secs = parseInt64('sinceSeconds', ss, 1);
    opts.sinceNs = (BigInt(nowMs) - BigInt(secs) * 1000n) * 1_000_000n;
  }
  if (st !== undefined) {
    const ns = parseRFC3339Nano(st);
    if (ns === undefined)
      throw new KindError('InvalidArgument', `sinceTime: invalid RFC3339 time ${JSON.stringify(st)}`);
    opts.sinceNs = ns;
  }
  return opts;
}

/** Formats what a client sees for one record: the text, a newline for a full line, an optional timestamp. */
export function formatRecord(r: CriLogRecord, timestamps: boolean, atLineStart: boolean): string {
  const prefix = timestamps && atLineStart ? `${r.time} ` : '';
  return `${prefix}${r.text}${r.partial ? '' : '\n'}`;
}

/**
 * Applies the options to records as they arrive: sinceTime, timestamps, limitBytes. (tailLines is applied
 * by the source, which can find the tail without reading everything.) Yields output chunks; stops at the
 * byte limit.
 */
export async function* renderLogs(
  records: AsyncIterable<CriLogRecord>,
  opts: Pick<LogOptions, 'sinceNs' | 'timestamps' | 'limitBytes'>,
): AsyncGenerator<Buffer> {
  let left = opts.limitBytes ?? Infinity;
  let atLineStart = true;
  for await (const r of records) {
    if (opts.sinceNs !== undefined && r.timeNs < opts.sinceNs) {
      atLineStart = !r.partial;
      continue;
    }
    let out = Buffer.from(formatRecord(r, opts.timestamps, atLineStart), 'utf8');
    atLineStart = !r.partial;
    if (out.length >= left) {
      out = out.subarray(0, left);
      if (out.length > 0) yield out;
      return;
    }
    left -= out.length;
    yield out;
  }
}

// ---------------------------------------------------------------------------------------------- sources

/** Whether a followed container can still write: false ends the stream once the file is drained. */
export type StillWriting = () => Promise<boolean>;

export interface FollowControl {
  follow: boolean;
  /** Polled while following; false (or a throw) ends the stream after the last bytes are read. */
  stillWriting: StillWriting;
  signal: AbortSignal;
  pollMs?: number;
}

const CHUNK = 64 * 1024;

/** Offset where the last `n` lines of the file start, reading backwards in chunks. */
async function fileTailOffset(fh: FileHandle, size: number, n: number): Promise<number> {
  if (n <= 0) return size;
  let pos = size;
  let newlines = 0;
  const buf = Buffer.alloc(CHUNK);
  // The file's final newline ends the last line; it does not start a new one.
  let skipLast = true;
  while (pos > 0) {
    const len = Math.min(CHUNK, pos);
    pos -= len;
    await fh.read(buf, 0, len, pos);
    for (let i = len - 1; i >= 0; i--) {
      if (buf[i] !== 0x0a) continue;
      if (skipLast && pos + i === size - 1) continue;
      newlines++;
      if (newlines === n) return pos + i + 1;
    }
    skipLast = false;
  }
  return 0;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * Raw lines of a CRI log file from the start (or the last `tailLines` file lines). When following, waits
 * for more; when the path is re-created by rotation (another inode), drains the old file and continues
 * with the new one from its start.
 */
export async function* criFileLines(
  path: string,
  tailLines: number | undefined,
  ctl: FollowControl,
): AsyncGenerator<string> {
  let fh = await open(path, 'r');
  try {
    let ino = (await fh.stat()).ino;
    let pos = tailLines !== undefined ? await fileTailOffset(fh, (await fh.stat()).size, tailLines) : 0;
    let rest = '';
    const buf = Buffer.alloc(CHUNK);
    for (;;) {
      if (ctl.signal.aborted) return;
      const { bytesRead } = await fh.read(buf, 0, CHUNK, pos);
      if (bytesRead > 0) {
        pos += bytesRead;
        const text = rest + buf.toString('utf8', 0, bytesRead);
        const lines = text.split('\n');
        rest = lines.pop()!;
        for (const l of lines) yield l;
        continue;
      }
      if (!ctl.follow) break;
      // At the end of this file: a rotated-in file replaces it, else wait for the writer.
      const cur = await stat(path).catch(() => undefined);
      if (cur && cur.ino !== ino) {
        await fh.close();
        fh = await open(path, 'r');
        ino = (await fh.stat()).ino;
        pos = 0;
        rest = '';
        continue;
      }
      const writing = await ctl.stillWriting().catch(() => false);
      if (!writing) {
        // One last read: the container may have written its final bytes after our EOF.
        const last = await fh.read(buf, 0, CHUNK, pos);
        if (last.bytesRead > 0) {
          pos += last.bytesRead;
          const lines = (rest + buf.toString('utf8', 0, last.bytesRead)).split('\n');
          rest = lines.pop()!;
          for (const l of lines) yield l;
          continue;
        }
        break;
      }
      await sleep(ctl.pollMs ?? 200, ctl.signal);
    }
    if (rest !== '') yield rest;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * Raw lines from a function returning all lines written so far (the simulated runtime). Following polls
 * for lines beyond those already sent; a throw (container removed) ends the stream.
 */
export async function* polledLines(
  read: () => string[],
  tailLines: number | undefined,
  ctl: FollowControl,
): AsyncGenerator<string> {
  let lines = read();
  let sent = tailLines !== undefined ? Math.max(0, lines.length - tailLines) : 0;
  for (;;) {
    while (sent < lines.length) yield lines[sent++]!;
    if (!ctl.follow || ctl.signal.aborted) return;
    const writing = await ctl.stillWriting().catch(() => false);
    try {
      lines = read();
    } catch {
      return;
    }
    if (sent < lines.length) continue;
    if (!writing) return;
    await sleep(ctl.pollMs ?? 200, ctl.signal);
    try {
      lines = read();
    } catch {
      return;
    }
  }
}

/** Parses raw lines into records, skipping blank and malformed lines (the kubelet logs and skips them). */
export async function* parseLines(lines: AsyncIterable<string>): AsyncGenerator<CriLogRecord> {
  for await (const l of lines) {
    if (l === '') continue;
    try {
      yield parseCriLogLine(l);
    } catch {
      // A torn or foreign line: skip it as the kubelet does.
    }
  }
}

/**
 * Certificate files read again when they change, as the kubelet's dynamic file content
 * (ReloadKubeletServerCertificateFile for --tls-cert-file/--tls-private-key-file, ReloadKubeletClientCAFile
 * for --client-ca-file; apiserver's dynamiccertificates): the serving certificate and key, and the client CA
 * bundle, of the node API.
 *
 * Contract: the files must be readable and valid at start (create() throws, as the kubelet then does not
 * start). Afterwards they are read every `intervalMs` (the kubelet reacts to file events and re-checks every
 * minute; polling the few kilobytes is both); new content that is valid replaces the current one, logged;
 * content that is unreadable or invalid (empty, not PEM, a key that does not match the certificate, a pair
 * caught half-written) is logged once per distinct failure and the old content stays in use. Connections
 * already open keep what they were set up with; new ones get the current content.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import tls from 'node:tls';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { errorMessage, KindError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { ServingCertificate } from './tlsfront.js';

/** What parsing a file set gives: its value, or why it is refused. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A serving certificate (chain) and key, both PEM, that belong together (what Go's tls.X509KeyPair checks). */
export function parseServingPair(cert: Buffer, key: Buffer): Parsed<ServingCertificate> {
  if (cert.length === 0 || key.length === 0) return { ok: false, error: 'missing content for serving cert' };
  try {
    // Builds the context Node would serve with: fails on bad PEM and on a key that is not the certificate's.
    tls.createSecureContext({ cert, key });
  } catch (err) {
    return { ok: false, error: errorMessage(err) };
  }
  return { ok: true, value: { cert, key } };
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * A client CA bundle: PEM holding at least one CERTIFICATE block, each a valid certificate; other blocks
 * are skipped (as the kubelet's certutil.ParseCertsPEM).
 */
export function parseCaBundle(pem: Buffer): Parsed<Buffer> {
  if (pem.length === 0) return { ok: false, error: 'missing content for CA bundle' };
  let n = 0;
  for (const m of pem.toString('latin1').matchAll(PEM_BLOCK)) {
    if (m[1] !== 'CERTIFICATE') continue;
    try {
      new X509Certificate(m[0]);
    } catch (err) {
      return { ok: false, error: `certificate ${n + 1}: ${errorMessage(err)}` };
    }
    n++;
  }
  if (n === 0) return { ok: false, error: 'data does not contain any valid RSA or ECDSA certificates' };
  return { ok: true, value: pem };
}

/** What to do with a file set just read, given the bytes of what is in use and of the last refusal. */
export type ReloadDecision<T> =
  | { action: 'keep' }
  | { action: 'use'; value: T }
  /** `log` is false when this very failure was logged before. */
  | { action: 'refuse'; error: string; log: boolean };

/**
 * Pure: the same bytes as in use change nothing; new bytes are used when they parse, refused (the old ones
 * stay) when they do not or could not be read. A refusal is logged when it differs from the last one.
 */
export function reloadDecision<T>(
  inUse: readonly Buffer[],
  read: readonly Buffer[] | { error: string },
  parse: (bufs: readonly Buffer[]) => Parsed<T>,
  lastRefusal: string | undefined,
): ReloadDecision<T> {
  let p: Parsed<T>;
  if ('error' in read) {
    p = { ok: false, error: read.error };
  } else {
    if (read.length === inUse.length && read.every((b, i) => b.equals(inUse[i]!))) return { action: 'keep' };
    p = parse(read);
  }
  if (p.ok) return { action: 'use', value: p.value };
  return { action: 'refuse', error: p.error, log: p.error !== lastRefusal };
}

export interface DynamicFileContentOptions<T> {
  /** Names the content in logs (e.g. `serving-cert::<cert>::<key>`). */
  name: string;
  files: string[];
  parse(bufs: readonly Buffer[]): Parsed<T>;
  clock: Clock;
  logger: Logger;
  /** How often the files are read again; default 5 s. */
  intervalMs?: number;
}

async function readAll(files: readonly string[]): Promise<Buffer[] | { error: string }> {
  try {
    return await Promise.all(files.map((f) => readFile(f)));
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

export class DynamicFileContent<T> {
  private value: T;
  private bytes: readonly Buffer[];
  private lastRefusal: string | undefined;
  private timer: TimerHandle | undefined;
  private running = false;
  private readonly listeners = new Set<(v: T) => void>();

  private constructor(
    private readonly opts: DynamicFileContentOptions<T>,
    bytes: readonly Buffer[],
    value: T,
  ) {
    this.bytes = bytes;
    this.value = value;
  }

  /** Reads and parses the files once; throws InvalidArgument when they cannot be read or are invalid. */
  static async create<T>(opts: DynamicFileContentOptions<T>): Promise<DynamicFileContent<T>> {
    const read = await readAll(opts.files);
    if ('error' in read) throw new KindError('InvalidArgument', `${opts.name}: ${read.error}`);
    const p = opts.parse(read);
    if (!p.ok) throw new KindError('InvalidArgument', `${opts.name}: ${p.error}`, { files: opts.files });
    return new DynamicFileContent(opts, read, p.value);
  }

  /** The content in use. */
  current(): T {
    return this.value;
  }

  /** Calls `fn` with each new content once it is in use; returns the unsubscribe. */
  onChange(fn: (v: T) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Starts reading the files every interval. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.arm();
  }

  stop(): void {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Reads the files once and applies the decision (what each tick does). */
  async check(): Promise<void> {
    const read = await readAll(this.opts.files);
    const d = reloadDecision(this.bytes, read, (b) => this.opts.parse(b), this.lastRefusal);
    switch (d.action) {
      case 'keep':
        this.lastRefusal = undefined;
        return;
      case 'use':
        this.value = d.value;
        this.bytes = read as Buffer[];
        this.lastRefusal = undefined;
        this.opts.logger.info('loaded new content', { name: this.opts.name });
        for (const fn of this.listeners) fn(d.value);
        return;
      case 'refuse':
        if (d.log) {
          this.opts.logger.warn('new content refused, still serving the old', {
            name: this.opts.name,
            error: d.error,
          });
        }
        this.lastRefusal = d.error;
        return;
      default:
        d satisfies never;
    }
  }

  private arm(): void {
    this.timer = this.opts.clock.setTimer(this.opts.intervalMs ?? 5_000, () => {
      void this.check()
        .catch((err: unknown) =>
          this.opts.logger.warn('reading files failed', { name: this.opts.name, error: errorMessage(err) }),
        )
        .finally(() => {
          if (this.running) this.arm();
        });
    });
  }
}

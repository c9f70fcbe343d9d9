/**
 * The state a backoff case plays against: a fake clock, one Backoff, a pod with its containers and their
 * runtime records, and the image-pull policy over the same Backoff. Operations are the ones the cases
 * name; each returns what a step's `expect` may assert.
 */
import type { Container, Pod } from '../../../src/api/core.js';
import { doBackOff, getStableKey, type Backoff, type DoBackOffResult } from '../../../src/kubelet/backoff.js';
import { asContainerID, type KubeContainerStatus } from '../../../src/kubelet/container/types.js';
import {
  ImagePullBackOff,
  imagePullBackOffKey,
  type EnsureImageResult,
} from '../../../src/kubelet/images/pullbackoff.js';
import { Uninterpretable } from '../types.js';
import { resolveTime, type Stmt } from './backoff-script.js';

export interface NextObservation {
  key: string;
  beforeMs: number;
  afterMs: number;
}

export interface SyncOutcome {
  result: DoBackOffResult;
  started: boolean;
  key: string;
  backoffAfterMs: number;
}

export interface PullStepOutcome {
  result: EnsureImageResult;
  key: string;
  backoffAfterMs: number;
}

export class BackoffWorld {
  now = 0;
  readonly nexts: NextObservation[] = [];
  readonly recorded: (number | boolean)[] = [];
  /** Every key any operation touched, in first-use order. */
  readonly keys: string[] = [];
  private readonly records: KubeContainerStatus[] = [];
  private readonly images: ImagePullBackOff;
  private seq = 0;

  constructor(
    readonly backoff: Backoff,
    readonly pod: Pod,
  ) {
    this.images = new ImagePullBackOff(backoff);
  }

  private touch(key: string): void {
    if (!this.keys.includes(key)) this.keys.push(key);
  }

  /** Moves the clock to `ms`; the fake clock never runs backwards. */
  setClock(ms: number, where: string): void {
    if (ms < this.now)
      throw new Uninterpretable(`${where}: time goes backwards (${ms / 1000}s < ${this.now / 1000}s)`);
    this.now = ms;
  }

  container(name: unknown, where: string): Container {
    const all = this.pod.spec.containers;
    if (name === undefined) {
      if (all.length !== 1) throw new Uninterpretable(`${where}: several containers; the step must name one`);
      return all[0]!;
    }
    const c = all.find((x) => x.name === name);
    if (!c) throw new Uninterpretable(`${where}: unknown container ${JSON.stringify(name)}`);
    return c;
  }

  /** Calls Next on the Backoff and remembers the delay before and after. */
  private next(key: string, eventTime: number): void {
    this.touch(key);
    const beforeMs = this.backoff.get(key);
    this.backoff.next(key, eventTime, this.now);
    this.nexts.push({ key, beforeMs, afterMs: this.backoff.get(key) });
  }

  run(stmts: readonly Stmt[]): void {
    for (const s of stmts) {
      if (s.kind === 'advance') {
        this.setClock(this.now + s.ms, 'clock +=');
        continue;
      }
      if (s.kind === 'setClock') {
        this.setClock(resolveTime(s.time, this.now), 'clock =');
        continue;
      }
      const c = s.call;
      let value: number | boolean | undefined;
      switch (c.fn) {
        case 'Next':
          this.next(c.key, resolveTime(c.time, this.now));
          break;
        case 'Get':
          this.touch(c.key);
          value = this.backoff.get(c.key) / 1000;
          break;
        case 'Reset':
          this.touch(c.key);
          this.backoff.reset(c.key);
          break;
        case 'GC':
          this.backoff.gc(this.now);
          break;
        case 'IsInBackOffSince':
          this.touch(c.key);
          value = this.backoff.isInBackOffSince(c.key, resolveTime(c.time, this.now), this.now);
          break;
        case 'IsInBackOffSinceUpdate':
          this.touch(c.key);
          value = this.backoff.isInBackOffSinceUpdate(c.key, resolveTime(c.time, this.now));
          break;
      }
      if (s.record) {
        if (value === undefined) throw new Uninterpretable(`'record ${c.fn}(...)' records nothing`);
        this.recorded.push(value);
      }
    }
  }

  /** The container's current record: its newest one, if any. */
  private newest(name: string): KubeContainerStatus | undefined {
    return this.records.find((r) => r.name === name);
  }

  /** The running instance (or a fresh one) ends at `finishedAt`. */
  containerExited(c: Container, finishedAt: number, exitCode: number): void {
    const cur = this.newest(c.name);
    if (cur && cur.state === 'running') {
      cur.state = 'exited';
      cur.finishedAt = finishedAt;
      cur.exitCode = exitCode;
      return;
    }
    this.records.unshift({
      id: asContainerID(`${c.name}-${++this.seq}`),
      name: c.name,
      state: 'exited',
      exitCode,
      finishedAt,
      restartCount: this.records.filter((r) => r.name === c.name).length,
      hash: '',
    });
  }

  /**
   * What SyncPod does for one container that needs a start: doBackOff, then (when not in back-off) a new
   * running instance.
   */
  syncPod(c: Container): SyncOutcome {
    const key = getStableKey(this.pod, c);
    this.touch(key);
    const before = this.backoff.get(key);
    const result = doBackOff(this.pod, c, { containers: this.records }, this.backoff, this.now);
    const after = this.backoff.get(key);
    if (!result.inBackOff && this.records.some((r) => r.name === c.name && r.state === 'exited')) {
      // doBackOff advanced the schedule; keep the observation like a direct Next call.
      this.nexts.push({ key, beforeMs: before, afterMs: after });
    }
    if (!result.inBackOff) {
      this.records.unshift({
        id: asContainerID(`${c.name}-${++this.seq}`),
        name: c.name,
        state: 'running',
        startedAt: this.now,
        restartCount: this.records.filter((r) => r.name === c.name).length,
        hash: '',
      });
    }
    return { result, started: !result.inBackOff, key, backoffAfterMs: after };
  }

  /**
   * Crashes and restarts `c` as fast as back-off allows (exit right after each start, sync as soon as
   * the delay has passed) until the delay reaches `targetMs`. Returns false if it never does.
   */
  crashLoopUntil(c: Container, targetMs: number): boolean {
    for (let i = 0; i < 64; i++) {
      this.containerExited(c, this.now, 1);
      let out = this.syncPod(c);
      if (out.result.inBackOff) {
        const exited = this.records.find((r) => r.name === c.name && r.state === 'exited');
        this.setClock((exited?.finishedAt ?? this.now) + this.backoff.get(out.key), 'crash loop');
        out = this.syncPod(c);
        if (out.result.inBackOff) return false;
      }
      if (out.backoffAfterMs === targetMs) return true;
      if (out.backoffAfterMs > targetMs) return false;
    }
    return false;
  }

  /** One EnsureImageExists call for `c`; `pull` is undefined when the case did not say how a pull ends. */
  async ensureImage(
    c: Container,
    pull: { ok: boolean; message: string } | undefined,
    where: string,
  ): Promise<PullStepOutcome> {
    const image = c.image ?? '';
    const uid = this.pod.metadata.uid ?? '';
    const key = imagePullBackOffKey(uid, image);
    this.touch(key);
    const result = await this.images.ensureImage(
      uid,
      image,
      () => {
        if (!pull)
          throw new Uninterpretable(`${where}: a pull happens but the step does not say how it ends`);
        return pull.ok ? { ok: true, imageRef: `sha256:${image}` } : { ok: false, message: pull.message };
      },
      { now: () => this.now },
    );
    if (!result.ok && result.pullAttempted && !pull) {
      throw new Uninterpretable(`${where}: a pull happens but the step does not say how it ends`);
    }
    return { result, key, backoffAfterMs: this.backoff.get(key) };
  }
}

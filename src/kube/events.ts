/**
 * Events as the kubelet records them: core/v1 Events with `source.component: kubelet` and the node as host,
 * deduplicated into `count`/`lastTimestamp` updates, similar events aggregated, and a per-object spam filter.
 *
 * The correlator (eventcorrelator.ts) is pure: it decides create / patch / drop from what it has seen and
 * `now`. The recorder does the I/O through a small sink on a background queue, so recording never blocks a
 * pod worker and a failed write is logged, never thrown. A write that could not reach the API server is tried
 * again after a sleep, as client-go's recorder does; one the server refused is not.
 */
import { sleepOnTimer, type Clock } from '../util/clock.js';
import { errorKind, errorMessage, isNotFound, KindError } from '../util/errors.js';
import type { StartupHold } from './startuphold.js';
import {
  annotateEvent,
  EventCorrelator,
  type CoreEvent,
  type EventType,
  type EventWrite,
  type ObjectReference,
} from './eventcorrelator.js';

export { EventCorrelator } from './eventcorrelator.js';
export type { Correlation, CoreEvent, EventType, EventWrite, ObjectReference } from './eventcorrelator.js';

export interface EventSink {
  create(namespace: string, event: CoreEvent): Promise<void>;
  /** Merge patch of count/lastTimestamp/message on an existing Event. */
  patch(namespace: string, name: string, patch: Partial<CoreEvent>): Promise<void>;
}

export interface EventLogger {
  warn(msg: string, meta?: Record<string, unknown>): void;
}

/** At most one log line per this long about Events a full queue dropped. */
const DROP_LOG_MS = 10_000;

/** Tries of one write that cannot reach the API server, and the sleep between them (client-go's recorder). */
export const EVENT_WRITE_TRIES = 12;
export const EVENT_RETRY_SLEEP_MS = 10_000;

/**
 * A failure to reach the API server (connection refused or reset, a timeout): the request got no answer, so
 * it may be tried again. An answer, even 5xx or 429, is the server's word (client-go's recorder does not try
 * again then). Any Retry-After it carried has already been waited out, by KubeClient.request as by
 * client-go's REST client.
 */
function unanswered(err: unknown): boolean {
  return (
    err instanceof KindError &&
    (err.kind === 'Unavailable' || err.kind === 'DeadlineExceeded') &&
    err.context['code'] === undefined
  );
}

/**
 * Which waiting write gives way when the queue is full, lowest first: an update of an Event already written
 * (patch: the next patch carries the whole count again), then a new Normal Event, then a new Warning about an
 * object that has had one before; last of all an object's first Warning, the Event that says what went wrong.
 */
function priority(type: EventType, action: EventWrite['action'], firstWarning: boolean): number {
  if (action === 'patch') return type === 'Warning' ? 1 : 0;
  if (type === 'Normal') return 2;
  return firstWarning ? 4 : 3;
}

/**
 * Records Events for one node. `event()` returns at once; writes happen in order on a background pump, with
 * at most `maxPending` waiting. Like the kubelet's broadcaster (1,000 queued, the rest dropped) the queue is
 * bounded and written one at a time. Unlike it, nothing is lost that a later write would repeat, and what is
 * lost is the least telling:
 * - a write of an Event that still waits to be written merges into the waiting one (its count, last
 *   timestamp and message move on; a waiting create becomes the create of the Event as it is now), so a
 *   flood of repeats costs one write per Event, not one per repeat;
 * - a write that finds the queue full takes the place of the oldest waiting write of lower priority
 *   (`priority`), so that a flood of Pulled/Created/Started or of count updates never costs a pod the one
 *   Event that says what went wrong.
 */
export class EventRecorder {
  private readonly correlator: EventCorrelator;
  /** Writes waiting, each kept compact (its body is built when it is made), with its priority on it. */
  private queue: (EventWrite | undefined)[] = [];
  private head = 0;
  private waiting = 0;
  /**
   * Waiting writes by their Event's sequence number, which names one Event of this recorder's correlator (taken
   * off when the pump takes them): a later write of the same Event merges into the waiting one.
   */
  private readonly bySeq = new Map<number, EventWrite>();
  private running = false;
  private pump: Promise<void> = Promise.resolve();
  /** Writes wait while it holds (see StartupHold). */
  private hold: StartupHold | undefined;
  /**
   * Writes by outcome. `dropped` counts every Event write not made: `filtered` of them by the correlator's
   * spam filter, the rest because the queue was full (`displaced` of those gave way to a later write of
   * higher priority). `merged`: writes folded into a waiting write of the same Event (nothing lost).
   */
  readonly stats = {
    created: 0,
    patched: 0,
    merged: 0,
    dropped: 0,
    filtered: 0,
    displaced: 0,
    failed: 0,
    /** Tries of a write that got no answer and were made again after a sleep. */
    retried: 0,
  };
  /** Full-queue drops since the last log line about them, and when that line was written. */
  private unlogged = 0;
  private loggedAt = -Infinity;
  /** Aborted by close(): a write no longer waits to be tried again. */
  private readonly closing = new AbortController();

  constructor(
    private readonly sink: EventSink,
    private readonly clock: Clock,
    host: string,
    private readonly logger?: EventLogger,
    private readonly maxPending = 1000,
    component = 'kubelet',
  ) {
    this.correlator = new EventCorrelator({ component, host });
  }

  /** Records an Event; `annotations` go on the Event created (client-go AnnotatedEventf), not on a patch. */
  event(
    ref: ObjectReference,
    type: EventType,
    reason: string,
    message: string,
    annotations?: Readonly<Record<string, string>>,
  ): void {
    const firstWarning = type === 'Warning' && !this.correlator.hasEvent(ref, 'Warning');
    const c = this.correlator.correlate(ref, type, reason, message, this.clock.now());
    if (c.action === 'drop') {
      this.stats.dropped++;
      this.stats.filtered++;
      return;
    }
    if (annotations && Object.keys(annotations).length > 0) annotateEvent(c, annotations);
    const waiting = this.bySeq.get(c.seq);
    if (waiting) {
      // The waiting write takes on the Event as it is now: a create stays a create.
      waiting.merge(c);
      this.stats.merged++;
      return;
    }
    c.priority = priority(type, c.action, firstWarning);
    if (this.waiting >= this.maxPending && !this.displace(c.priority)) {
      this.stats.dropped++;
      this.dropLogged(ref, type, reason);
      return;
    }
    this.queue.push(c);
    this.bySeq.set(c.seq, c);
    this.waiting++;
    if (!this.running) {
      this.running = true;
      this.pump = this.drain();
    }
  }

  /** From now on each write waits while `hold` holds. */
  holdWith(hold: StartupHold): void {
    this.hold = hold;
  }

  /** See EventCorrelator.forget: the object is gone for good. */
  forget(ref: ObjectReference): void {
    this.correlator.forget(ref);
  }

  /**
   * The node stops: what waits is still written, each write tried once, and a write sleeping before its next
   * try gives up now. flush() after it resolves without waiting out sleeps.
   */
  close(): void {
    this.closing.abort();
  }

  /** Resolves when every recorded event has been written (or failed). */
  async flush(): Promise<void> {
    while (this.running) await this.pump;
  }

  /** Events waiting to be written. */
  get pending(): number {
    return this.waiting;
  }

  /**
   * Says that Events are lost to a full queue (client-go logs each one; a flood here would log thousands, so
   * one line at most every DROP_LOG_MS, naming the latest and how many went since the last line).
   */
  private dropLogged(ref: ObjectReference, type: EventType, reason: string): void {
    this.unlogged++;
    const now = this.clock.now();
    if (now - this.loggedAt < DROP_LOG_MS) return;
    this.logger?.warn('unable to record event: too many queued events, dropped', {
      dropped: this.unlogged,
      queued: this.waiting,
      type,
      reason,
      object: `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`,
    });
    this.unlogged = 0;
    this.loggedAt = now;
  }

  /**
   * Removes the oldest of the lowest-priority waiting writes if its priority is below `than`; false when no
   * waiting write is below it.
   */
  private displace(than: number): boolean {
    let at = -1;
    let lowest = than;
    for (let i = this.head; i < this.queue.length && lowest > 0; i++) {
      const q = this.queue[i];
      if (!q) continue;
      if (q.priority < lowest) {
        lowest = q.priority;
        at = i;
      }
    }
    const q = at < 0 ? undefined : this.queue[at];
    if (!q) return false;
    this.queue[at] = undefined;
    this.bySeq.delete(q.seq);
    this.waiting--;
    this.stats.dropped++;
    this.stats.displaced++;
    this.dropLogged(q.involvedObject, q.type, q.reason);
    return true;
  }

  /** Writes the queue out in order; `running` drops in the same turn as the last look at the queue. */
  private async drain(): Promise<void> {
    try {
      while (this.head < this.queue.length) {
        const q = this.queue[this.head];
        this.queue[this.head++] = undefined;
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        if (!q) continue;
        this.bySeq.delete(q.seq);
        const held = this.hold?.wait();
        if (held) await held;
        this.waiting--;
        await this.write(q);
      }
      this.queue = [];
      this.head = 0;
    } finally {
      this.running = false;
    }
  }

  /**
   * One Event write, tried up to EVENT_WRITE_TRIES times while the API server cannot be reached, sleeping
   * EVENT_RETRY_SLEEP_MS between tries (the first sleep a random part of it, so that nodes that lost the
   * server together do not come back together). The queue waits meanwhile, as the kubelet's does.
   */
  private async write(q: EventWrite): Promise<void> {
    const ref = q.involvedObject;
    const object = `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
    const reason = q.reason;
    for (let tries = 1; ; tries++) {
      let error: unknown;
      try {
        await this.writeOnce(q);
        return;
      } catch (err) {
        error = err;
      }
      const again =
        tries < EVENT_WRITE_TRIES &&
        unanswered(error) &&
        (await this.sleepBeforeTry(tries, () => ({ reason, object, error: errorMessage(error) })));
      if (!again) {
        this.stats.failed++;
        this.logger?.warn('event write failed', {
          reason,
          object,
          tries,
          error: errorMessage(error),
        });
        return;
      }
      this.stats.retried++;
    }
  }

  /**
   * False when the recorder closed before or during the sleep. Says so in the log before the first one. The
   * sleep is a clock timer, which never keeps the process alive on its own (a recorder nobody closes, such
   * as the node API's, must not hold up the exit).
   */
  private async sleepBeforeTry(tries: number, meta: () => Record<string, unknown>): Promise<boolean> {
    if (this.closing.signal.aborted) return false;
    if (tries === 1) this.logger?.warn('unable to write event, will try again after sleeping', meta());
    const ms = tries === 1 ? Math.random() * EVENT_RETRY_SLEEP_MS : EVENT_RETRY_SLEEP_MS;
    return sleepOnTimer(this.clock, ms, this.closing.signal).then(
      () => true,
      () => false,
    );
  }

  /** A waiting create may have gone through on a try whose answer was lost: AlreadyExists is done. */
  private async writeOnce(c: EventWrite): Promise<void> {
    const namespace = c.namespace;
    if (c.action === 'patch') {
      try {
        await this.sink.patch(namespace, c.name, c.patch);
        this.stats.patched++;
        return;
      } catch (err) {
        // The Event is gone (its create was dropped or failed, or it expired): create it whole with its
        // count, as client-go's recorder does when a patch finds nothing.
        if (!isNotFound(err)) throw err;
      }
    }
    try {
      await this.sink.create(namespace, c.event);
    } catch (err) {
      if (errorKind(err) !== 'AlreadyExists') throw err;
    }
    this.stats.created++;
  }
}

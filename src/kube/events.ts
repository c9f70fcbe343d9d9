/**
 * Events as the kubelet records them: core/v1 Events with `source.component: kubelet` and the node as host,
 * deduplicated into `count`/`lastTimestamp` updates, similar events aggregated, and a per-object spam filter.
 *
 * The correlator (eventcorrelator.ts) is pure: it decides create / patch / drop from what it has seen and
 * `now`. The recorder does the I/O through a small sink on a background queue, so recording never blocks a
 * pod worker and a failed write is logged, never thrown.
 */
import type { Clock } from '../util/clock.js';
import { errorMessage, isNotFound } from '../util/errors.js';
import type { EventHold } from './eventhold.js';
import {
  EventCorrelator,
  type Correlation,
  type CoreEvent,
  type EventType,
  type ObjectReference,
} from './eventcorrelator.js';

export { EventCorrelator } from './eventcorrelator.js';
export type { Correlation, CoreEvent, EventType, ObjectReference } from './eventcorrelator.js';

export interface EventSink {
  create(namespace: string, event: CoreEvent): Promise<void>;
  /** Merge patch of count/lastTimestamp/message on an existing Event. */
  patch(namespace: string, name: string, patch: Partial<CoreEvent>): Promise<void>;
}

export interface EventLogger {
  warn(msg: string, meta?: Record<string, unknown>): void;
}

type Write = Exclude<Correlation, { action: 'drop' }>;

interface Queued {
  write: Write;
  ref: ObjectReference;
  type: EventType;
  reason: string;
}

/**
 * Records Events for one node. `event()` returns at once; writes happen in order on a background pump, with
 * at most `maxPending` waiting. Like the kubelet's broadcaster (1,000 queued, the rest dropped) the queue is
 * bounded; unlike it, a Warning that finds the queue full takes the place of the oldest waiting Normal Event,
 * so that a flood of Pulled/Created/Started never costs a pod the one Event that says what went wrong.
 */
export class EventRecorder {
  private readonly correlator: EventCorrelator;
  private queue: (Queued | undefined)[] = [];
  private head = 0;
  private waiting = 0;
  private running = false;
  private pump: Promise<void> = Promise.resolve();
  /** Writes wait while it holds (see EventHold). */
  private hold: EventHold | undefined;
  readonly stats = { created: 0, patched: 0, dropped: 0, displaced: 0, failed: 0 };

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

  event(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    const c = this.correlator.correlate(ref, type, reason, message, this.clock.now());
    if (c.action === 'drop') {
      this.stats.dropped++;
      return;
    }
    if (this.waiting >= this.maxPending && !(type === 'Warning' && this.displaceNormal())) {
      this.stats.dropped++;
      return;
    }
    this.queue.push({ write: c, ref, type, reason });
    this.waiting++;
    if (!this.running) {
      this.running = true;
      this.pump = this.drain();
    }
  }

  /** From now on each write waits while `hold` holds. */
  holdWith(hold: EventHold): void {
    this.hold = hold;
  }

  /** See EventCorrelator.forget: the object is gone for good. */
  forget(ref: ObjectReference): void {
    this.correlator.forget(ref);
  }

  /** Resolves when every recorded event has been written (or failed). */
  async flush(): Promise<void> {
    while (this.running) await this.pump;
  }

  /** Removes the oldest waiting Normal Event; false when every waiting one is a Warning. */
  private displaceNormal(): boolean {
    for (let i = this.head; i < this.queue.length; i++) {
      if (this.queue[i]?.type !== 'Normal') continue;
      this.queue[i] = undefined;
      this.waiting--;
      this.stats.dropped++;
      this.stats.displaced++;
      return true;
    }
    return false;
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

  private async write({ write: c, ref, reason }: Queued): Promise<void> {
    try {
      if (c.action === 'create') {
        await this.sink.create(c.event.metadata.namespace, c.event);
        this.stats.created++;
        return;
      }
      try {
        await this.sink.patch(c.event.metadata.namespace, c.event.metadata.name, c.patch);
        this.stats.patched++;
      } catch (err) {
        // The Event is gone (its create was dropped or failed, or it expired): create it whole with its
        // count, as client-go's recorder does when a patch finds nothing.
        if (!isNotFound(err)) throw err;
        await this.sink.create(c.event.metadata.namespace, c.event);
        this.stats.created++;
      }
    } catch (err) {
      this.stats.failed++;
      this.logger?.warn('event write failed', {
        reason,
        object: `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`,
        error: errorMessage(err),
      });
    }
  }
}

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
import { EventCorrelator, type CoreEvent, type EventType, type ObjectReference } from './eventcorrelator.js';

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

/**
 * Records Events for one node. `event()` returns at once; writes happen in order on a background chain,
 * with at most `maxPending` outstanding (older ones beyond that are dropped and counted).
 */
export class EventRecorder {
  private readonly correlator: EventCorrelator;
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  readonly stats = { created: 0, patched: 0, dropped: 0, failed: 0 };

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
    if (c.action === 'drop' || this.pending >= this.maxPending) {
      this.stats.dropped++;
      return;
    }
    this.pending++;
    this.chain = this.chain.then(async () => {
      try {
        if (c.action === 'create') {
          await this.sink.create(c.event.metadata.namespace, c.event);
          this.stats.created++;
        } else {
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
        }
      } catch (err) {
        this.stats.failed++;
        this.logger?.warn('event write failed', {
          reason,
          object: `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`,
          error: errorMessage(err),
        });
      } finally {
        this.pending--;
      }
    });
  }

  /** See EventCorrelator.forget: the object is gone for good. */
  forget(ref: ObjectReference): void {
    this.correlator.forget(ref);
  }

  /** Resolves when every recorded event has been written (or failed). */
  flush(): Promise<void> {
    return this.chain;
  }
}

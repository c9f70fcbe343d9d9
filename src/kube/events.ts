/**
 * Events as the kubelet records them: core/v1 Events with `source.component: kubelet` and the node as host,
 * deduplicated into `count`/`lastTimestamp` updates, similar events aggregated, and a per-object spam filter.
 *
 * The correlator is pure (decides create / patch / drop from what it has seen and `now`); the recorder does
 * the I/O through a small sink on a background queue, so recording never blocks a pod worker and a failed
 * write is logged, never thrown.
 */
import type { Clock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';

export type EventType = 'Normal' | 'Warning';

export interface ObjectReference {
  kind: string;
  apiVersion?: string;
  namespace?: string;
  name: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export interface CoreEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  source: { component: string; host?: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  type: EventType;
  reportingComponent: string;
  reportingInstance: string;
}

export interface EventSink {
  create(namespace: string, event: CoreEvent): Promise<void>;
  /** Merge patch of count/lastTimestamp/message on an existing Event. */
  patch(namespace: string, name: string, patch: Partial<CoreEvent>): Promise<void>;
}

export type Correlation =
  | { action: 'create'; event: CoreEvent }
  | { action: 'patch'; event: CoreEvent; patch: Pick<CoreEvent, 'count' | 'lastTimestamp' | 'message'> }
  | { action: 'drop' };

const MAX_LRU = 4096;
/** Events of one key more than this far apart start a new Event object. */
const DEDUP_WINDOW_MS = 10 * 60_000;
/** More than this many distinct messages for one (object, reason) in the window are combined. */
const AGGREGATE_THRESHOLD = 10;
/** Spam filter per involved object: burst 25, one more token every 5 minutes. */
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60_000;

function iso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function objectId(ref: ObjectReference): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}/${ref.uid ?? ''}`;
}

/** Bounded map with least-recently-used eviction. */
class Lru<V> {
  private readonly m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > this.max) this.m.delete(this.m.keys().next().value as string);
  }
  /** Reads without refreshing the entry's recency. */
  peek(k: string): V | undefined {
    return this.m.get(k);
  }
  delete(k: string): void {
    this.m.delete(k);
  }
  get size(): number {
    return this.m.size;
  }
}

/**
 * What the dedup cache keeps of an Event it created: the fields that differ between Events of one
 * correlator and key. The rest (reason, type, source, reporting*) follows from the key and the correlator,
 * so the patch's event is rebuilt identical without keeping every Event object alive (bench/README.md).
 */
interface SeenEvent {
  name: string;
  namespace: string;
  involvedObject: ObjectReference;
  firstTimestamp: string;
  count: number;
  lastMs: number;
}

/**
 * The distinct messages of one (object, type, reason) in the window: almost always one, kept as the string
 * itself (a Set per key cost about 200 bytes for each of a pod's events); a Set from the second on.
 */
type Messages = string | Set<string>;

function withMessage(m: Messages, message: string): Messages {
  if (typeof m !== 'string') return m.add(message);
  return m === message ? m : new Set([m, message]);
}

export class EventCorrelator {
  private readonly seen = new Lru<SeenEvent>(MAX_LRU);
  private readonly similar = new Lru<{ messages: Messages; firstMs: number }>(MAX_LRU);
  /** Per involved object: its spam bucket, and the keys of its entries in `seen` and `similar`. */
  private readonly spam = new Lru<{ tokens: number; lastMs: number; keys: string[] }>(MAX_LRU);
  private seq = 0;

  constructor(private readonly source: { component: string; host: string }) {}

  correlate(
    ref: ObjectReference,
    type: EventType,
    reason: string,
    messageIn: string,
    now: number,
  ): Correlation {
    const objKey = objectId(ref);
    const bucket = this.spam.get(objKey) ?? { tokens: SPAM_BURST, lastMs: now, keys: [] };
    bucket.tokens = Math.min(SPAM_BURST, bucket.tokens + (now - bucket.lastMs) / SPAM_REFILL_MS);
    bucket.lastMs = now;
    this.spam.set(objKey, bucket);

    // Aggregate: many different messages for the same reason collapse into one combined Event.
    let message = messageIn;
    const simKey = `${objKey}|${type}|${reason}`;
    let sim = this.similar.get(simKey);
    if (!sim || now - sim.firstMs > DEDUP_WINDOW_MS) {
      if (!sim) bucket.keys.push(simKey);
      sim = { messages: messageIn, firstMs: now };
    } else sim.messages = withMessage(sim.messages, messageIn);
    this.similar.set(simKey, sim);
    const distinct = typeof sim.messages === 'string' ? 1 : sim.messages.size;
    if (distinct > AGGREGATE_THRESHOLD) message = `(combined from similar events): ${messageIn}`;

    const key = `${simKey}|${distinct > AGGREGATE_THRESHOLD ? '*' : messageIn}`;
    const prior = this.seen.get(key);
    if (prior && now - prior.lastMs <= DEDUP_WINDOW_MS) {
      if (bucket.tokens < 1) return { action: 'drop' };
      bucket.tokens -= 1;
      const event = this.build(prior, type, reason, message, prior.count + 1, iso(now));
      this.seen.set(key, { ...prior, count: event.count, lastMs: now });
      return {
        action: 'patch',
        event,
        patch: { count: event.count, lastTimestamp: event.lastTimestamp, message },
      };
    }
    if (bucket.tokens < 1) return { action: 'drop' };
    bucket.tokens -= 1;
    // Nanosecond-style suffix as client-go makes it; in bigint, since now * 1e6 is past 2^53 and a float would
    // give events recorded in the same millisecond the same name (the second create then fails AlreadyExists).
    const name = `${ref.name}.${(BigInt(Math.floor(now)) * 1_000_000n + BigInt(this.seq++)).toString(16)}`;
    const at = iso(now);
    const seen: SeenEvent = {
      name,
      namespace: ref.namespace ?? 'default',
      involvedObject: ref,
      firstTimestamp: at,
      count: 1,
      lastMs: now,
    };
    if (!prior) bucket.keys.push(key);
    this.seen.set(key, seen);
    return { action: 'create', event: this.build(seen, type, reason, message, 1, at) };
  }

  /**
   * Drops what the caches hold for one object (the owner calls it once a pod is gone from the API). A UID
   * never comes back, so no later event could have matched those entries: the Events written are the same,
   * and a node that churns through pods no longer keeps up to MAX_LRU entries per cache alive.
   */
  forget(ref: ObjectReference): void {
    const objKey = objectId(ref);
    const bucket = this.spam.peek(objKey);
    if (!bucket) return;
    for (const k of bucket.keys) {
      this.seen.delete(k);
      this.similar.delete(k);
    }
    this.spam.delete(objKey);
  }

  /** Entries in the three caches (tests). */
  size(): { seen: number; similar: number; spam: number } {
    return { seen: this.seen.size, similar: this.similar.size, spam: this.spam.size };
  }

  private build(
    seen: SeenEvent,
    type: EventType,
    reason: string,
    message: string,
    count: number,
    lastTimestamp: string,
  ): CoreEvent {
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: seen.name, namespace: seen.namespace },
      involvedObject: seen.involvedObject,
      reason,
      message,
      source: { component: this.source.component, host: this.source.host },
      firstTimestamp: seen.firstTimestamp,
      lastTimestamp,
      count,
      type,
      reportingComponent: this.source.component,
      reportingInstance: this.source.host,
    };
  }
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
          await this.sink.patch(c.event.metadata.namespace, c.event.metadata.name, c.patch);
          this.stats.patched++;
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

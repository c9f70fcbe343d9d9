/**
 * Event correlation as the kubelet does it, a pure function of what was seen before and `now`: an Event
 * seen again within ten minutes patches the Event already written (count, lastTimestamp), more than ten
 * different messages for one (object, type, reason) collapse into one combined Event, and a token bucket per
 * involved object drops bursts.
 *
 * Memory (issue #17): what is kept of an object lives in one ObjectState under one map key: its numbers in
 * one array of plain doubles (none boxed per field), its strings and references in one other, no key string
 * built per Event. The Event a patch carries is rebuilt from those, equal to the one created.
 */
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
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
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

/** The `source` and reporting fields of every Event one correlator decides on. */
interface EventSource {
  component: string;
  host: string;
}

/**
 * Write times are kept as whole ms after this: small integers, held in the write itself, where a time since the
 * epoch would take a boxed number of its own. Only whole ms ever matter (a name floors its time, timestamps are
 * seconds), and ms past it of any size are still exact.
 */
const TIME_BASE = Date.now();

/**
 * The annotations of the few Events that carry any (client-go AnnotatedEventf: the kubelet's evictions), kept
 * beside the writes rather than in a field every write would pay for.
 */
const annotationsOf = new WeakMap<EventWrite, Readonly<Record<string, string>>>();

/** Gives a write the annotations its Event is created with. */
export function annotateEvent(write: EventWrite, annotations: Readonly<Record<string, string>>): void {
  annotationsOf.set(write, annotations);
}

/**
 * A write the correlator decided on, kept as numbers and shared strings: a node's Events can wait seconds to be
 * written (one at a time, behind a burst's others), and a body built at once would wait with them. The body,
 * the patch and the name are built when asked, equal each time. The recorder sets its priority once as it
 * queues it; while it waits, a later write of the same Event merges into it (`merge`); nothing else changes it.
 */
export class EventWrite {
  private first: number;
  private last: number;
  /** The recorder's: which waiting write gives way when its queue is full (events.ts). */
  priority = 0;

  constructor(
    readonly action: 'create' | 'patch',
    public involvedObject: ObjectReference,
    readonly type: EventType,
    readonly reason: string,
    public message: string,
    firstMs: number,
    lastMs: number,
    public count: number,
    /** The correlator's sequence number of the Event: with the first time, it names it; one per Event. */
    readonly seq: number,
    private readonly source: EventSource,
  ) {
    this.first = Math.floor(firstMs) - TIME_BASE;
    this.last = Math.floor(lastMs) - TIME_BASE;
  }

  /** When the Event was first seen, in whole ms. */
  get firstMs(): number {
    return this.first + TIME_BASE;
  }

  /** When the Event was last seen, in whole ms. */
  get lastMs(): number {
    return this.last + TIME_BASE;
  }

  get namespace(): string {
    return this.involvedObject.namespace ?? 'default';
  }

  get name(): string {
    return eventName(this.involvedObject.name, this.firstMs, this.seq);
  }

  /** The Event whole, as created (a patch that finds no Event creates this). */
  get event(): CoreEvent {
    const { component, host } = this.source;
    const annotations = annotationsOf.get(this);
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: annotations
        ? { name: this.name, namespace: this.namespace, annotations: { ...annotations } }
        : { name: this.name, namespace: this.namespace },
      involvedObject: this.involvedObject,
      reason: this.reason,
      message: this.message,
      source: { component, host },
      firstTimestamp: iso(this.firstMs),
      lastTimestamp: iso(this.lastMs),
      count: this.count,
      type: this.type,
      reportingComponent: component,
      reportingInstance: host,
    };
  }

  /** What a patch of the Event carries. */
  get patch(): Pick<CoreEvent, 'count' | 'lastTimestamp' | 'message'> {
    return { count: this.count, lastTimestamp: iso(this.lastMs), message: this.message };
  }

  /**
   * Takes on a later write of the same Event (same seq) while this one waits: the Event as it is now, its count,
   * last time, message and involvedObject; a waiting create stays a create of the Event as it is now.
   */
  merge(later: EventWrite): void {
    this.involvedObject = later.involvedObject;
    this.message = later.message;
    this.last = later.last;
    this.count = later.count;
  }
}

export type Correlation = EventWrite | { action: 'drop' };

/** Involved objects kept at most; past this the least recently used one is forgotten whole. */
const MAX_OBJECTS = 4096;
/** Rows (see ObjectState) one object keeps at most; past this its least recently written row goes. */
const MAX_ROWS_PER_OBJECT = 64;
/** Rows over all objects at most; past this the least recently used objects are forgotten whole. */
const MAX_ROWS = 4 * MAX_OBJECTS;
/** Events of one key more than this far apart start a new Event object. */
const DEDUP_WINDOW_MS = 10 * 60_000;
/** More than this many distinct messages for one (object, type, reason) in the window are combined. */
const AGGREGATE_THRESHOLD = 10;
/** Spam filter per involved object: burst 25, one more token every 5 minutes. */
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60_000;
/** Strings the pool shares at most; when full it starts over. */
const POOL_MAX = 512;
/**
 * The dedup key of a combined Event, in place of a message. A message that is itself '*' shares it, as it
 * did when the key was the joined string `object|type|reason|*`.
 */
const COMBINED = '*';

/** The second last formatted by iso, and its text: a burst of Events formats the same second again and again. */
let isoSecond = Number.NaN;
let isoText = '';

function iso(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoText = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    isoSecond = second;
  }
  return isoText;
}

function objectId(ref: ObjectReference): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}/${ref.uid ?? ''}`;
}

/** Refs to one involved object: same kind, namespace, name and UID (missing the same as empty). */
function sameObject(a: ObjectReference, b: ObjectReference): boolean {
  if (a.kind !== b.kind || a.name !== b.name) return false;
  return (a.namespace ?? '') === (b.namespace ?? '') && (a.uid ?? '') === (b.uid ?? '');
}

/** Same own enumerable properties with the same values: the two serialise alike. */
function sameRef(a: ObjectReference, b: ObjectReference): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (a[k as keyof ObjectReference] !== b[k as keyof ObjectReference]) return false;
    n++;
  }
  for (const _k in b) n--;
  return n === 0;
}

function withFieldPath(base: ObjectReference, fieldPath: string): ObjectReference {
  return { ...base, fieldPath };
}

/** Nanosecond-style name suffix as client-go makes it, in bigint: now * 1e6 is past 2^53. */
function eventName(name: string, firstMs: number, seq: number): string {
  return `${name}.${(BigInt(Math.floor(firstMs)) * 1_000_000n + BigInt(seq)).toString(16)}`;
}

/**
 * One copy of each string the rows keep, shared between objects: pods repeat messages ("Created container:
 * app") and field paths. Equal strings are interchangeable, so sharing changes no value. It holds at most
 * POOL_MAX strings and is emptied when full (rows keep theirs).
 */
class StringPool {
  private readonly m = new Map<string, string>();
  intern(s: string): string {
    const p = this.m.get(s);
    if (p !== undefined) return p;
    if (this.m.size >= POOL_MAX) this.m.clear();
    this.m.set(s, s);
    return s;
  }
}

/**
 * The distinct messages of one (object, type, reason) in the window: almost always one, kept as the string
 * itself; a Set from the second on, which stops growing past the threshold (until the window restarts the
 * count only matters as "more than AGGREGATE_THRESHOLD").
 */
type Messages = string | Set<string>;

function withMessage(m: Messages, message: string): Messages {
  if (typeof m !== 'string') return m.size > AGGREGATE_THRESHOLD ? m : m.add(message);
  return m === message ? m : new Set([m, message]);
}

/**
 * A row's involvedObject, next to the object's first ref: undefined when the same; a string when it is that
 * ref with this fieldPath (a pod's container events differ in nothing else); else the whole ref.
 */
type RefCell = ObjectReference | string | undefined;

function refCell(ref: ObjectReference, base: ObjectReference, pool: StringPool): RefCell {
  if (sameRef(ref, base)) return undefined;
  const path = ref.fieldPath;
  return typeof path === 'string' && sameRef(ref, withFieldPath(base, path)) ? pool.intern(path) : ref;
}

// A row's cells: the Event's type and reason; its dedup key (the message or COMBINED; undefined while its
// (type, reason) has messages but no Event); its involvedObject as a RefCell; its (type, reason)'s messages.
const [C_TYPE, C_REASON, C_KEY, C_REF, C_MESSAGES, CELLS] = [0, 1, 2, 3, 4, 5] as const;
// A row's numbers, after the bucket's (tokens, last refill): its Event's first and last time (ms), count and
// name sequence number; when its (type, reason)'s window of messages started.
const [N_FIRST, N_LAST, N_COUNT, N_SEQ, N_GROUP_FIRST, NUMS, BUCKET] = [0, 1, 2, 3, 4, 5, 2] as const;

type Cell = string | Set<string> | ObjectReference | undefined;

/**
 * What the correlator keeps of one involved object: its spam bucket and a row per Event it wrote, keyed by
 * (type, reason, key) and found by linear scan (an object has a handful). Invariants: no two rows share
 * (type, reason, key); the rows of one (type, reason) hold the same messages and window start; a
 * (type, reason) with messages and no Event has one row, whose key is undefined. Both arrays grow by concat,
 * so they are no longer than their rows.
 */
class ObjectState {
  /** Spam bucket [tokens, last refill ms], then NUMS numbers per row: only numbers, stored unboxed. */
  nums: number[];
  /** CELLS cells per row. */
  cells: Cell[] = [];

  constructor(
    /** The first ref recorded for the object (see RefCell). */
    readonly ref: ObjectReference,
    now: number,
  ) {
    this.nums = [SPAM_BURST, now];
  }

  /** Adds the tokens earned since the last refill, up to the burst. */
  refill(now: number): void {
    const n = this.nums;
    n[0] = Math.min(SPAM_BURST, n[0]! + (now - n[1]!) / SPAM_REFILL_MS);
    n[1] = now;
  }

  /** Spends a token if there is a whole one. */
  takeToken(): boolean {
    if (this.nums[0]! < 1) return false;
    this.nums[0] = this.nums[0]! - 1;
    return true;
  }

  get rows(): number {
    return this.cells.length / CELLS;
  }

  /** The first row of (type, reason), or -1. */
  group(type: EventType, reason: string): number {
    const c = this.cells;
    for (let i = 0; i < c.length; i += CELLS)
      if (c[i + C_REASON] === reason && c[i + C_TYPE] === type) return i / CELLS;
    return -1;
  }

  /** The row of (type, reason, key), or -1. */
  find(type: EventType, reason: string, key: string | undefined): number {
    const c = this.cells;
    for (let i = 0; i < c.length; i += CELLS)
      if (c[i + C_KEY] === key && c[i + C_REASON] === reason && c[i + C_TYPE] === type) return i / CELLS;
    return -1;
  }

  cell(row: number, field: number): Cell {
    return this.cells[row * CELLS + field];
  }

  num(row: number, field: number): number {
    return this.nums[BUCKET + row * NUMS + field]!;
  }

  setNum(row: number, field: number, value: number): void {
    this.nums[BUCKET + row * NUMS + field] = value;
  }

  /** Sets the messages and window start of (type, reason) on its rows; `now` is a touch for eviction. */
  setGroup(type: EventType, reason: string, messages: Messages, firstMs: number, now: number): void {
    const c = this.cells;
    for (let r = 0; r < this.rows; r++)
      if (c[r * CELLS + C_REASON] === reason && c[r * CELLS + C_TYPE] === type) {
        c[r * CELLS + C_MESSAGES] = messages;
        this.setNum(r, N_GROUP_FIRST, firstMs);
        if (c[r * CELLS + C_KEY] === undefined) this.setNum(r, N_LAST, now);
      }
  }

  /** Adds a row of (type, reason) without an Event; returns its index. */
  addRow(type: EventType, reason: string, messages: Messages, groupFirstMs: number, now: number): number {
    this.cells = this.cells.concat([type, reason, undefined, undefined, messages]);
    this.nums = this.nums.concat([0, now, 0, 0, groupFirstMs]);
    return this.rows - 1;
  }

  /** Makes `row` the record of an Event created `now`. */
  setEvent(row: number, key: string, ref: RefCell, now: number, seq: number): void {
    this.cells[row * CELLS + C_KEY] = key;
    this.cells[row * CELLS + C_REF] = ref;
    this.setNum(row, N_FIRST, now);
    this.setNum(row, N_LAST, now);
    this.setNum(row, N_COUNT, 1);
    this.setNum(row, N_SEQ, seq);
  }

  /** Whether a row holds an Event of `type`. */
  hasEvent(type: EventType): boolean {
    const c = this.cells;
    for (let i = 0; i < c.length; i += CELLS)
      if (c[i + C_TYPE] === type && c[i + C_KEY] !== undefined) return true;
    return false;
  }

  /** Drops the row written longest ago. */
  dropOldestRow(): void {
    let oldest = 0;
    for (let r = 1; r < this.rows; r++) if (this.num(r, N_LAST) < this.num(oldest, N_LAST)) oldest = r;
    this.cells.splice(oldest * CELLS, CELLS);
    this.nums.splice(BUCKET + oldest * NUMS, NUMS);
  }
}

export class EventCorrelator {
  /**
   * Least recently used first. An object's key is its UID when it has one and no other object holds that
   * key (a string the caller's refs already share, so none is built per object), else its objectId.
   */
  private readonly objects = new Map<string, ObjectState>();
  /** Rows over all objects. */
  private rows = 0;
  private seq = 0;
  private readonly pool = new StringPool();
  /** The ref refOf built last, with the first ref it was built from. */
  private lastPathRef: { base: ObjectReference; ref: ObjectReference } | undefined;

  private readonly source: EventSource;

  constructor(source: EventSource) {
    // A copy of its own: every write of this correlator shares it, and the caller's object may change.
    this.source = { component: source.component, host: source.host };
  }

  correlate(
    ref: ObjectReference,
    type: EventType,
    reason: string,
    message: string,
    now: number,
  ): Correlation {
    const id = this.key(ref);
    let o = this.objects.get(id);
    if (o) this.objects.delete(id);
    // Kept with its field path interned: a container's path (`spec.containers{app}`) is made per event.
    else o = new ObjectState(ref.fieldPath ? withFieldPath(ref, this.pool.intern(ref.fieldPath)) : ref, now);
    this.objects.set(id, o);
    const c = this.decide(o, ref, type, reason, this.pool.intern(message), now);
    this.bound(o);
    return c;
  }

  private decide(
    o: ObjectState,
    ref: ObjectReference,
    type: EventType,
    reason: string,
    messageIn: string,
    now: number,
  ): Correlation {
    o.refill(now);

    // Aggregate: many different messages for the same reason collapse into one combined Event.
    let g = o.group(type, reason);
    let messages: Messages = messageIn;
    if (g < 0) {
      g = o.addRow(type, reason, messages, now, now);
      this.rows++;
    } else {
      const firstMs = o.num(g, N_GROUP_FIRST);
      const within = now - firstMs <= DEDUP_WINDOW_MS;
      if (within) messages = withMessage(o.cell(g, C_MESSAGES) as Messages, messageIn);
      o.setGroup(type, reason, messages, within ? firstMs : now, now);
    }
    const combined = typeof messages !== 'string' && messages.size > AGGREGATE_THRESHOLD;
    const message = combined ? `(combined from similar events): ${messageIn}` : messageIn;

    const key = combined ? COMBINED : messageIn;
    let row = o.find(type, reason, key);
    if (row >= 0 && now - o.num(row, N_LAST) <= DEDUP_WINDOW_MS) {
      if (!o.takeToken()) return { action: 'drop' };
      const count = o.num(row, N_COUNT) + 1;
      o.setNum(row, N_COUNT, count);
      o.setNum(row, N_LAST, now);
      return this.write('patch', o, row, type, reason, message, this.refOf(o, o.cell(row, C_REF) as RefCell));
    }
    if (!o.takeToken()) return { action: 'drop' };
    if (row < 0) row = o.find(type, reason, undefined);
    if (row < 0) {
      row = o.addRow(type, reason, messages, o.num(g, N_GROUP_FIRST), now);
      this.rows++;
    }
    const cell = refCell(ref, o.ref, this.pool);
    o.setEvent(row, key, cell, now, this.seq++);
    return this.write('create', o, row, type, reason, message, this.refOf(o, cell));
  }

  /** Brings the object's rows, all rows and the objects within their bounds; `o` was used last. */
  private bound(o: ObjectState): void {
    while (o.rows > MAX_ROWS_PER_OBJECT) {
      o.dropOldestRow();
      this.rows--;
    }
    while (this.rows > MAX_ROWS || this.objects.size > MAX_OBJECTS) {
      const [id, oldest] = this.objects.entries().next().value as [string, ObjectState];
      if (oldest === o) break;
      this.objects.delete(id);
      this.rows -= oldest.rows;
    }
  }

  /**
   * Drops what is kept for one object (the owner calls it once a pod is gone from the API). A UID never
   * comes back, so no later event could have matched it: the Events written are the same, and a node that
   * churns through pods keeps only its live ones.
   */
  forget(ref: ObjectReference): void {
    const id = this.key(ref);
    const o = this.objects.get(id);
    if (!o) return;
    this.rows -= o.rows;
    this.objects.delete(id);
  }

  /**
   * The key `ref`'s object is kept under, or is to be if new. A UID key has no '/' and an objectId has
   * three, so the two never meet; an objectId key belongs to that object alone.
   */
  private key(ref: ObjectReference): string {
    const uid = ref.uid;
    if (uid && !uid.includes('/')) {
      const o = this.objects.get(uid);
      if (o === undefined) {
        // New, or kept under its objectId as it came while another object held the UID key.
        const id = objectId(ref);
        return this.objects.has(id) ? id : uid;
      }
      if (sameObject(o.ref, ref)) return uid;
    }
    return objectId(ref);
  }

  /** Whether an Event of `type` about `ref`'s object was created and is still remembered. Touches nothing. */
  hasEvent(ref: ObjectReference, type: EventType): boolean {
    return this.objects.get(this.key(ref))?.hasEvent(type) ?? false;
  }

  /** Events kept (seen), (object, type, reason) message sets (similar) and objects (spam); for tests. */
  size(): { seen: number; similar: number; spam: number } {
    let seen = 0;
    let similar = 0;
    for (const o of this.objects.values())
      for (let r = 0; r < o.rows; r++) {
        if (o.cell(r, C_KEY) !== undefined) seen++;
        if (o.group(o.cell(r, C_TYPE) as EventType, o.cell(r, C_REASON) as string) === r) similar++;
      }
    return { seen, similar, spam: this.objects.size };
  }

  /**
   * The involvedObject a row's RefCell stands for, equal to the ref its Event was created with. A waiting write
   * holds it, so it is the object's first ref when the same, and a ref with another field path is built once
   * for a run of Events about it (a container's Pulled, Created, Started), not once each.
   */
  private refOf(o: ObjectState, cell: RefCell): ObjectReference {
    if (cell === undefined) return o.ref;
    if (typeof cell !== 'string') return cell;
    const last = this.lastPathRef;
    if (last !== undefined && last.base === o.ref && last.ref.fieldPath === cell) return last.ref;
    const ref = withFieldPath(o.ref, cell);
    this.lastPathRef = { base: o.ref, ref };
    return ref;
  }

  /** The write of `row`'s Event as it is now, about `ref`. */
  private write(
    action: EventWrite['action'],
    o: ObjectState,
    row: number,
    type: EventType,
    reason: string,
    message: string,
    ref: ObjectReference,
  ): EventWrite {
    return new EventWrite(
      action,
      ref,
      type,
      reason,
      message,
      o.num(row, N_FIRST),
      o.num(row, N_LAST),
      o.num(row, N_COUNT),
      o.num(row, N_SEQ),
      this.source,
    );
  }
}

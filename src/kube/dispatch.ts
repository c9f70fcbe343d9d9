/**
 * A request and a watch on a transport's pool (transport.ts), as undici's dispatch handlers: one object per
 * request gathers the answer (or streams it, for a watch), and what ends a request early (its deadline, a
 * watch's signal) ends it whether it is on a connection yet or still waits for one.
 */
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { headerText } from './apierrors.js';
import type { Transport } from './transport.js';

/** A request's answer: its status, its body (empty when not kept) and its `Retry-After`. */
export interface Answer {
  status: number;
  bytes: Buffer;
  retryAfter: string | undefined;
  /** When its last byte was read (Date.now()); the answer settles a loop turn later (whenConnectionFree). */
  endedAt: number;
}

/**
 * Runs `fn` once the connection that just finished an answer is free for the pool's next request: undici
 * hands a connection its next request only a loop turn after an answer (a setImmediate it queues once the
 * handler's end call returns), and a caller that sends its next request, or watch, as soon as this one is
 * over must find it free, not open another.
 */
function whenConnectionFree(fn: () => void): void {
  process.nextTick(() => setImmediate(fn));
}

/**
 * One request's handler on the pool: gathers the answer and settles the request's promise. `destroy` (its
 * deadline, see deadline.ts) fails the request at once, also while it still waits for a connection, and
 * aborts it on the connection as soon as it has one.
 */
class AnswerHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private failure: Error | undefined;
  private readonly chunks: Buffer[] = [];
  private status = 0;
  private keep = true;
  private retryAfter: string | undefined;

  constructor(
    private readonly resolve: (a: Answer) => void,
    private readonly reject: (err: Error) => void,
    /** A successful answer's body is not wanted. */
    private readonly dropSuccess: boolean,
  ) {}

  destroy(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.controller?.abort(err);
    this.reject(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.failure) controller.abort(this.failure);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: Record<string, unknown>): void {
    this.status = status;
    this.keep = !this.dropSuccess || status < 200 || status >= 300;
    this.retryAfter = headerText(headers['retry-after'] as string | string[] | undefined);
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.keep) this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const endedAt = Date.now();
    whenConnectionFree(() => this.settle(endedAt));
  }

  private settle(endedAt: number): void {
    const { status, chunks, retryAfter } = this;
    const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    this.resolve({ status, bytes, retryAfter, endedAt });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.failure ??= err;
    this.reject(err);
  }
}

/**
 * A request over the transport's pool, with its headers after the transport's own; `attach` gets what ends
 * it early (the request's deadline). `dropSuccess`: a successful answer's body is read but not kept.
 */
export function sendRequest(
  t: Transport,
  method: Dispatcher.HttpMethod,
  target: string,
  headers: Record<string, string>,
  body: string | undefined,
  dropSuccess: boolean,
  attach: (req: { destroy(err: Error): void }) => void,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const handler = new AnswerHandler(resolve, reject, dropSuccess);
    attach(handler);
    t.pool.dispatch(
      {
        path: target,
        method,
        headers: Object.assign({}, t.headers, headers),
        body: body ?? null,
        // undici closes a connection after a request with a body its method is not expected to carry (the
        // kubelet's DELETE sends DeleteOptions), for servers that leave such a body unread. The API server
        // reads it, and client-go keeps the connection: without this every pod's final DELETE cost a new TLS
        // connection (a third more CPU in the benchmark's delete phase).
        reset: false,
      },
      handler,
    );
  });
}

/** A streamed answer (a watch): its status, its `Retry-After`, and its body as it arrives. */
export interface StreamAnswer {
  status: number;
  retryAfter: string | undefined;
  body: Readable;
}

/**
 * A watch's handler on the pool: resolves once the answer's head is in, then streams the body, pausing the
 * connection while the reader is behind. `abort` (the caller's signal) ends it at any point, also while it
 * waits for a connection; a reader that destroys the body ends the request too.
 */
class StreamHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private body: Readable | undefined;
  private failure: Error | undefined;
  private ended = false;

  constructor(
    private readonly resolve: (a: StreamAnswer) => void,
    private readonly reject: (err: Error) => void,
    /** Called once when the request is over, however it ends (lets go of the caller's signal). */
    private readonly done: () => void,
  ) {}

  abort(err: Error): void {
    if (this.failure || this.ended) return;
    this.failure = err;
    this.done();
    this.controller?.abort(err);
    if (this.body) this.body.destroy(err);
    else this.reject(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.failure) controller.abort(this.failure);
  }

  onResponseStart(c: Dispatcher.DispatchController, status: number, headers: Record<string, unknown>): void {
    this.body = new Readable({
      read: () => c.resume(),
      destroy: (err, cb) => {
        if (!this.ended && !this.failure) {
          this.failure = err ?? new Error('watch stream closed by its reader');
          this.done();
          c.abort(this.failure);
        }
        cb(err);
      },
    });
    this.resolve({
      status,
      retryAfter: headerText(headers['retry-after'] as string | string[]),
      body: this.body,
    });
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.body!.push(chunk)) c.pause();
  }

  onResponseEnd(): void {
    this.ended = true;
    this.done();
    // The reader sees the end once the connection is free: a watch sent again right away then reuses it.
    const body = this.body!;
    whenConnectionFree(() => body.push(null));
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.ended) return;
    if (!this.failure) {
      this.failure = err;
      this.done();
    }
    if (this.body) this.body.destroy(err);
    else this.reject(err);
  }
}

/** A watch over the transport's pool (HTTP/1.1), its answer streamed; `signal` ends it. */
export function openStream(t: Transport, target: string, signal: AbortSignal): Promise<StreamAnswer> {
  return new Promise((resolve, reject) => {
    const handler = new StreamHandler(resolve, reject, () => signal.removeEventListener('abort', onAbort));
    const onAbort = (): void =>
      handler.abort(
        Object.assign(new Error('The operation was aborted', { cause: signal.reason }), {
          name: 'AbortError',
        }),
      );
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    t.pool.dispatch({ path: target, method: 'GET', headers: t.headers }, handler);
  });
}

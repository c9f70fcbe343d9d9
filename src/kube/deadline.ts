/**
 * A request's deadline: its timeout and its caller's abort signal in one small object, shared by every
 * attempt a client makes of the request (see KubeClient.request).
 */

/** What a deadline ends: a ClientRequest (destroying it fails the request with the error). */
interface Destroyable {
  destroy(err: Error): unknown;
}

/** See requestDeadline; every request a client sends again shares its first attempt's deadline. */
export interface RequestDeadline {
  /** When its timeout ends (a Date.now() time); the parent may abort it earlier. */
  readonly endsAt: number;
  attach(req: Destroyable): void;
  timedOut(): boolean;
  release(): void;
}

/**
 * The deadline of one request: after `timeoutMs` (a TimeoutError, as AbortSignal.timeout) or when `parent`
 * aborts (an AbortError whose cause is the parent's reason, as Node's `signal` option), it destroys the
 * request attached to it. No AbortController per request: creating one, and Node wiring it into the request,
 * was about 4 % of the operator's CPU while pods start. `release()` frees the timer and the parent listener as
 * soon as the request is over (a timeout signal otherwise stays registered, with what its listeners hold, for
 * the whole timeout after a request that took milliseconds: tens of MiB at thousands of requests a minute).
 */
export function requestDeadline(timeoutMs: number, parent?: AbortSignal): RequestDeadline {
  let req: Destroyable | undefined;
  let failure: Error | undefined;
  let timedOut = false;
  const fail = (err: Error): void => {
    if (failure) return;
    failure = err;
    req?.destroy(err);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    fail(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  timer.unref();
  const onParentAbort = (): void =>
    fail(
      Object.assign(new Error('The operation was aborted', { cause: parent?.reason }), {
        name: 'AbortError',
      }),
    );
  if (parent?.aborted) onParentAbort();
  else parent?.addEventListener('abort', onParentAbort, { once: true });
  return {
    endsAt: Date.now() + timeoutMs,
    attach: (r) => {
      req = r;
      if (failure) r.destroy(failure);
    },
    timedOut: () => timedOut,
    release: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
      req = undefined;
    },
  };
}

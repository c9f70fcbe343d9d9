/**
 * A pod sync's cancellation (the kubelet cancels a pod worker's context when the pod is to be terminated).
 * Most syncs are never cancelled and only ask `aborted`; an AbortController costs an EventTarget and its
 * listener bookkeeping per sync, so the real AbortSignal is made only for a caller that waits on it (a hook,
 * a sleep), already aborted when the sync was. `onAbort` serves the worker's own wait without one.
 */
export class SyncCancel {
  private done = false;
  private reason: Error | undefined;
  private controller: AbortController | undefined;
  private waiters: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.done;
  }

  /** An AbortSignal that fires with this cancel (made on first use). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.done) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason?: Error): void {
    if (this.done) return;
    this.done = true;
    this.reason = reason ?? new Error('pod sync cancelled');
    this.controller?.abort(this.reason);
    const waiters = this.waiters;
    this.waiters = undefined;
    if (waiters) for (const w of waiters) w();
  }

  /** Calls `fn` once when cancelled (at once if it is); returns what takes it back. */
  onAbort(fn: () => void): () => void {
    if (this.done) {
      fn();
      return () => undefined;
    }
    (this.waiters ??= []).push(fn);
    return () => {
      const i = this.waiters?.indexOf(fn) ?? -1;
      if (i >= 0) this.waiters!.splice(i, 1);
    };
  }
}

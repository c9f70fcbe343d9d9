/**
 * Fault injection for the simulated runtime: a runtime that is down (every call fails Unavailable, as when
 * containerd's socket refuses connections, while the containers keep running), and one-shot or counted
 * failures of a named call with a chosen error kind.
 */
import { KindError, type ErrorKind } from '../../util/errors.js';
import type { Runtime } from '../types.js';

/** The Runtime calls that can fail (close never does). */
export type RuntimeOp = Exclude<
  { [K in keyof Runtime]: Runtime[K] extends (...args: never[]) => unknown ? K : never }[keyof Runtime],
  'close'
>;

export interface Fault {
  /** The call that fails; '*' for any call. */
  op: RuntimeOp | '*';
  kind: ErrorKind;
  /** How many calls fail before the fault is used up (default 1; Infinity until clearFaults). */
  count?: number;
  message?: string;
}

interface ActiveFault {
  op: RuntimeOp | '*';
  kind: ErrorKind;
  remaining: number;
  message: string;
}

export class FaultInjector {
  private down = false;
  private faults: ActiveFault[] = [];

  setDown(down: boolean): void {
    this.down = down;
  }

  isDown(): boolean {
    return this.down;
  }

  inject(f: Fault): void {
    const count = f.count ?? 1;
    if (!(count === Infinity || (Number.isInteger(count) && count >= 1))) {
      throw new KindError(
        'InvalidArgument',
        `sim runtime: fault count must be a positive integer or Infinity, got ${count}`,
        {
          field: 'count',
        },
      );
    }
    this.faults.push({
      op: f.op,
      kind: f.kind,
      remaining: count,
      message: f.message ?? `injected ${f.kind} fault on ${f.op}`,
    });
  }

  clear(): void {
    this.faults = [];
  }

  /** Neither down nor holding a fault: every call goes through. */
  quiet(): boolean {
    return !this.down && this.faults.length === 0;
  }

  /** Throws when the runtime is down or a fault applies to this call (using it up). */
  check(op: RuntimeOp, context: Record<string, unknown>): void {
    if (this.down) {
      throw new KindError(
        'Unavailable',
        'connection error: desc = "transport: Error while dialing: dial unix sim.sock: connect: connection refused"',
        { op, ...context },
      );
    }
    if (this.faults.length === 0) return;
    const i = this.faults.findIndex((f) => f.op === op || f.op === '*');
    if (i < 0) return;
    const f = this.faults[i]!;
    if (--f.remaining <= 0) this.faults.splice(i, 1);
    throw new KindError(f.kind, f.message, { op, injected: true, ...context });
  }
}

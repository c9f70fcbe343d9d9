/**
 * In-place resize on the simulated runtime, as containerd behaves: a created or running container takes new
 * limits, an exited one refuses. The container's behaviour profile can make the update fail (`resizeError`)
 * and delay when the new values take effect and ContainerStatus shows them (`resizeLatencyMs`, the runtime
 * catching up). New limits take effect at a definite clock time (now, or the end of the latency), which is
 * when the usage bookkeeping (usage.ts) switches to the new cpu cap and memory limit, however late anyone
 * looks.
 */
import { KindError } from '../../util/errors.js';
import type { LinuxContainerResources } from '../types.js';
import type { ContainerRecord } from './records.js';
import { resourcesChanging } from './usage.js';

/** A resize the runtime is still applying: it takes effect at `atMs` (clock time). */
export interface PendingResize {
  readonly resources: LinuxContainerResources;
  readonly atMs: number;
}

/** Kept beside the records rather than in them: few containers are ever waiting for a resize. */
const pending = new WeakMap<ContainerRecord, PendingResize>();

export function pendingResize(c: ContainerRecord): PendingResize | undefined {
  return pending.get(c);
}

/** Applies a resize whose latency has passed by `nowMs`. */
export function settleResize(c: ContainerRecord, nowMs: number): void {
  const p = pending.get(c);
  if (p && p.atMs <= nowMs) {
    resourcesChanging(c, p.resources, p.atMs);
    c.resources = p.resources;
    pending.delete(c);
  }
}

export function resizeContainer(c: ContainerRecord, resources: LinuxContainerResources, nowMs: number): void {
  const context = { containerId: c.id };
  if (c.state !== 'created' && c.state !== 'running') {
    throw new KindError(
      'Unknown',
      `container ${c.id} is in ${c.state} state, resources cannot be updated`,
      context,
    );
  }
  if (c.behaviour.resizeError !== undefined) {
    throw new KindError('Unknown', c.behaviour.resizeError, { ...context, injected: true });
  }
  // A resize already due takes effect first (it is not lost under this one).
  settleResize(c, nowMs);
  const next = { ...(c.resources ?? {}), ...resources };
  if (c.behaviour.resizeLatencyMs > 0) {
    // The same update again (a kubelet re-actuating while it waits) does not start the wait over.
    const waiting = pending.get(c);
    if (waiting && JSON.stringify(waiting.resources) === JSON.stringify(next)) return;
    pending.set(c, { resources: next, atMs: nowMs + c.behaviour.resizeLatencyMs });
  } else {
    resourcesChanging(c, next, nowMs);
    c.resources = next;
    pending.delete(c);
  }
}

/**
 * In-place resize on the simulated runtime, as containerd behaves: a created or running container takes new
 * limits, an exited one refuses. The container's behaviour profile can make the update fail (`resizeError`),
 * delay when ContainerStatus shows the new values (`resizeLatencyMs`, the runtime catching up), and state the
 * memory usage that ContainerStats reports (`memoryUsageBytes`) while the container runs.
 */
import { KindError } from '../../util/errors.js';
import type { ContainerStats, LinuxContainerResources } from '../types.js';
import type { ContainerRecord } from './store.js';

/** Applies a resize whose latency has passed by `nowMs`. */
export function settleResize(c: ContainerRecord, nowMs: number): void {
  if (c.pendingResize && c.pendingResize.atMs <= nowMs) {
    c.resources = c.pendingResize.resources;
    c.pendingResize = undefined;
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
  const next = { ...(c.resources ?? {}), ...resources };
  if (c.behaviour.resizeLatencyMs > 0) {
    // The same update again (a kubelet re-actuating while it waits) does not start the wait over.
    if (c.pendingResize && JSON.stringify(c.pendingResize.resources) === JSON.stringify(next)) return;
    c.pendingResize = { resources: next, atMs: nowMs + c.behaviour.resizeLatencyMs };
  } else {
    c.resources = next;
    c.pendingResize = undefined;
  }
}

export function containerStatsOf(c: ContainerRecord): ContainerStats {
  const usage = c.state === 'running' ? c.behaviour.memoryUsageBytes : 0;
  return { memory: { usageBytes: usage, workingSetBytes: usage } };
}

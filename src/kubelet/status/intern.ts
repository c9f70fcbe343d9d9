/**
 * Interned statuses (src/util/intern.ts): a node's hostIPs, the conditions of pods that changed in the same
 * second, `state.running` of containers started in the same second, empty `resources` and image names exist
 * once, not once per pod. The pod informer interns every status it keeps; the status manager those of its
 * cached statuses that the informer's did not replace (compaction.ts).
 */
import type { ContainerStatus, PodStatus } from '../../api/core.js';
import type { Interner } from '../../util/intern.js';

function internContainer(c: ContainerStatus, i: Interner): ContainerStatus {
  // A spread keeps a decoded status's layout, every field in the object itself; one built key by key from {}
  // keeps all but four in a second array (24 bytes more per container).
  const out = { ...c } as Record<string, unknown>;
  for (const k of Object.keys(out)) {
    const v = out[k];
    if (k === 'image' || k === 'imageID') out[k] = i.string(v as string);
    else if (typeof v === 'object' && v !== null) out[k] = i.value(v);
  }
  return out as unknown as ContainerStatus;
}

/**
 * `status` with its shareable parts replaced by the interned instances; what is the pod's own (podIP,
 * podIPs, the container IDs) stays, podIPs[0] holding the very string of podIP. Equal to the input by
 * value; the input is not modified.
 */
export function internPodStatus(status: PodStatus, i: Interner): PodStatus {
  const out: PodStatus = { ...status };
  if (status.conditions) out.conditions = i.value(status.conditions);
  if (status.hostIPs) out.hostIPs = i.value(status.hostIPs);
  if (status.hostIP !== undefined) out.hostIP = i.string(status.hostIP);
  if (status.startTime !== undefined) out.startTime = i.string(status.startTime);
  // podIPs[0] repeats podIP: one string, not a second decoded copy.
  const first = status.podIPs?.[0];
  if (first && status.podIP !== undefined && first.ip === status.podIP) {
    out.podIPs = [{ ...first, ip: status.podIP }, ...status.podIPs!.slice(1)];
  }
  for (const k of ['initContainerStatuses', 'containerStatuses', 'ephemeralContainerStatuses'] as const) {
    const list = status[k];
    if (list) out[k] = list.map((c) => internContainer(c, i));
  }
  return out;
}

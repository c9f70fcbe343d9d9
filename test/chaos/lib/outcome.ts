/**
 * What a hostile pod came to, in words a test can count: why it is not Running and Ready as its own status
 * says (a pod reason, a container's waiting or terminated reason, a condition's reason), and a one-line
 * description of a pod with its Events for a failure message.
 */
import type { Pod } from '../../../src/api/core.js';
import type { KubeClient } from '../../../src/kube/client.js';

export interface CoreEvent {
  involvedObject: { uid?: string; name?: string };
  reason?: string;
  type?: string;
}

/** Why a pod is not Running and Ready, in its own status; undefined when the status says nothing. */
export function statusReason(p: Pod): string | undefined {
  const s = p.status ?? {};
  if (s.reason) return `pod:${s.reason}`;
  for (const c of [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])]) {
    const waiting = c.state?.waiting?.reason;
    if (waiting && waiting !== 'ContainerCreating' && waiting !== 'PodInitializing')
      return `waiting:${waiting}`;
    const term = c.state?.terminated?.reason ?? c.lastState?.terminated?.reason;
    if (term) return `terminated:${term}`;
  }
  // Not stuck: a container runs (an init container that takes its time, an app behind its probes).
  if ([...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])].some((c) => c.state?.running))
    return `running:${s.phase}`;
  if (s.phase === 'Running' || s.phase === 'Succeeded' || s.phase === 'Failed') {
    const cond = (s.conditions ?? []).find((c) => c.status !== 'True' && c.reason);
    if (cond) return `${s.phase}:${cond.type}=${cond.reason}`;
    if (s.phase !== 'Running') return `phase:${s.phase}`;
  }
  return undefined;
}

/** One line on a pod: its mutations, phase, conditions, container states and every Event about it. */
export async function describePod(
  client: KubeClient,
  ns: string,
  name: string,
  mutations: string[],
): Promise<string> {
  try {
    const p = await client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods/${name}` });
    const events = await client.request<{ items: CoreEvent[] }>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/events`,
      query: { fieldSelector: `involvedObject.uid=${p.metadata.uid}` },
    });
    const s = p.status ?? {};
    const states = [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])]
      .map((c) => `${c.name}=${Object.keys(c.state ?? {}).join('')}:${c.state?.waiting?.reason ?? ''}`)
      .join(',');
    const conds = (s.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason ?? ''}`).join(',');
    return `${name.slice(0, 30)} [${mutations.join('+')}] phase=${s.phase} conds=${conds} states=${states} events=${events.items.map((e) => `${e.type}/${e.reason}`).join(',')}`;
  } catch (err) {
    return `${name.slice(0, 30)}: ${String(err)}`;
  }
}

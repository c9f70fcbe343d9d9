/** Waiting for a pod's Events in tests that check them. */
import type { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { eventually } from './eventually.js';

/**
 * What `read` returns once every reason in `reasons` is among its Events: a node writes Events one at a
 * time, behind the pod's status, so a check right after a status change must wait for them (up to 10 s).
 */
export function eventsWithReasons(
  read: () => Promise<CoreEvent[]>,
  reasons: readonly string[],
  what: string,
): Promise<CoreEvent[]> {
  return eventually(
    async () => {
      const items = await read();
      return reasons.every((r) => items.some((e) => e.reason === r)) ? items : undefined;
    },
    10_000,
    `events ${reasons.join(', ')} of ${what}`,
  );
}

/** The Events of the object named `name` in `namespace` (field selector involvedObject.name). */
export async function eventsOf(client: KubeClient, namespace: string, name: string): Promise<CoreEvent[]> {
  const list = await client.request<{ items: CoreEvent[] }>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/events`,
    query: { fieldSelector: `involvedObject.name=${name}` },
  });
  return list.items;
}

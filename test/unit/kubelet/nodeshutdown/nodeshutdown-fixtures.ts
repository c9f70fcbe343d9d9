import type { Pod } from '../../../../src/api/core.js';

/** A one-container pod with an optional priority and terminationGracePeriodSeconds. */
export function makePod(name: string, priority?: number, terminationGracePeriodSeconds?: number): Pod {
  return {
    metadata: { name, namespace: 'default', uid: name },
    spec: {
      containers: [{ name: 'c', image: 'i' }],
      ...(priority !== undefined ? { priority } : {}),
      ...(terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds } : {}),
    },
  } as Pod;
}

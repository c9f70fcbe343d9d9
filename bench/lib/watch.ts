import type { KubeClient } from '../../src/kube/client.js';

/** A watch kept open until `stop()`. */
export interface KeptWatch {
  stop(): Promise<void>;
}

/**
 * Watches `path` until stopped: a watch that ends or breaks starts over (after `retryMs`), and each start lists
 * the current state first (a watch without a resourceVersion sends ADDED for everything), so nothing is missed.
 */
export function keepWatching(
  client: KubeClient,
  path: string,
  onEvent: (e: { type: string; object: unknown }) => void,
  retryMs = 1000,
): KeptWatch {
  const abort = new AbortController();
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      await client
        .watch(path, { timeoutSeconds: 3600 }, onEvent, abort.signal)
        .catch(() => (retryMs > 0 ? new Promise((r) => setTimeout(r, retryMs)) : undefined));
    }
  };
  const done = loop();
  return {
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

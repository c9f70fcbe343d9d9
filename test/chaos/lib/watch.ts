/**
 * A watch for the chaos scenarios that outlives what they do to the cluster: it lists once, then watches
 * from the list's resourceVersion, and whenever the stream ends or breaks (the API server stopped, a timeout)
 * it watches again from the last resourceVersion it saw, retrying every half second for as long as it runs.
 * Only when the server says that version is gone (410) does it list again, delivering the list as `SYNC`
 * events. Every object reaches `onEvent` with the local time it arrived.
 */
import type { KubeClient } from '../../../src/kube/client.js';

export interface WatchedObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export type WatchEventType = 'SYNC' | 'ADDED' | 'MODIFIED' | 'DELETED';

export class ResumingWatch<T extends WatchedObject> {
  /** Watch streams opened after the first (each break, timeout or relist). */
  reconnects = 0;
  relists = 0;
  private rv = '';
  private readonly abort = new AbortController();
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: KubeClient,
    private readonly path: string,
    private readonly onEvent: (type: WatchEventType, obj: T, at: number) => void,
    private readonly query: Record<string, string> = {},
  ) {}

  /** Resolves after the first list (its objects delivered); watching goes on in the background. */
  async start(): Promise<void> {
    await this.list();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async list(): Promise<void> {
    const list = await this.client.request<{ metadata: { resourceVersion: string }; items: T[] }>({
      method: 'GET',
      path: this.path,
      query: this.query,
    });
    const at = Date.now();
    for (const o of list.items) this.onEvent('SYNC', o, at);
    this.rv = list.metadata.resourceVersion;
  }

  private async run(): Promise<void> {
    let first = true;
    while (!this.abort.signal.aborted) {
      if (!first) this.reconnects++;
      first = false;
      let gone = false;
      const stream = new AbortController();
      const onStop = (): void => stream.abort();
      this.abort.signal.addEventListener('abort', onStop, { once: true });
      try {
        await this.client.watch(
          this.path,
          { ...this.query, resourceVersion: this.rv, allowWatchBookmarks: true, timeoutSeconds: 300 },
          (e) => {
            const obj = e.object as T & { code?: number };
            if (e.type === 'ERROR') {
              gone = obj.code === 410;
              stream.abort();
              return;
            }
            if (obj.metadata?.resourceVersion) this.rv = obj.metadata.resourceVersion;
            if (e.type === 'BOOKMARK') return;
            this.onEvent(e.type as WatchEventType, obj, Date.now());
          },
          stream.signal,
        );
      } catch (err) {
        gone ||= (err as { context?: { code?: number } }).context?.code === 410;
      } finally {
        this.abort.signal.removeEventListener('abort', onStop);
      }
      if (this.abort.signal.aborted) return;
      if (gone) {
        try {
          this.relists++;
          await this.list();
          continue;
        } catch {
          // Not answering yet: retry below.
        }
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

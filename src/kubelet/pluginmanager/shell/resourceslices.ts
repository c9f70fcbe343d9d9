/**
 * Which nodes have ResourceSlices, for the start-up wipe of every node of the process. A kubelet deletes its
 * node's ResourceSlices once at start, after its Node exists (DRAPluginManager wipeResourceSlices: a
 * DeleteCollection by spec.nodeName), so that no pod is scheduled onto devices whose driver may never come
 * back. A process that starts 1,000 nodes would send 1,000 DeleteCollections, each a list on the API server,
 * nearly all of them finding nothing: here the nodes share lists of every ResourceSlice instead, and only a
 * node that has some sends its DeleteCollection.
 *
 * A node may trust only a list begun after it asked (after its Node exists, as the kubelet's wipe): a caller
 * while a list is under way waits for the next one, which every such caller shares, so a start of 1,000 nodes
 * costs a few lists.
 */
import type { KubeClient } from '../../../kube/client.js';
import { errorKind } from '../../../util/errors.js';

export const RESOURCE_SLICES_PATH = '/apis/resource.k8s.io/v1/resourceslices';

/**
 * Invariant: `running` is the list under way, if any; `queued` the list every caller since it began shares,
 * begun as soon as `running` settles.
 */
export class NodeResourceSlices {
  private running: Promise<ReadonlySet<string>> | undefined;
  private queued: Promise<ReadonlySet<string>> | undefined;
  /** Lists begun (tests and the bench read it). */
  lists = 0;

  /** `list`: the spec.nodeName of every ResourceSlice ('' for one not local to a node). */
  constructor(private readonly list: () => Promise<readonly string[]>) {}

  /** The nodes with a ResourceSlice, from a list begun after this call; rejects when that list fails. */
  nodesWithSlices(): Promise<ReadonlySet<string>> {
    if (this.queued) return this.queued;
    if (!this.running) return this.begin();
    const queued = this.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.queued = undefined;
        return this.begin();
      });
    this.queued = queued;
    return queued;
  }

  private begin(): Promise<ReadonlySet<string>> {
    this.lists++;
    const p = this.list().then((names) => new Set(names));
    this.running = p;
    const done = (): void => {
      if (this.running === p) this.running = undefined;
    };
    p.then(done, done);
    return p;
  }
}

/**
 * The ResourceSlices' node names over the API. A server without the v1 ResourceSlice API (DRA off) has none:
 * the kubelet's DeleteCollection would find nothing there either.
 */
export function restNodeResourceSlices(client: Pick<KubeClient, 'request'>): NodeResourceSlices {
  return new NodeResourceSlices(async () => {
    try {
      const res = await client.request<{ items?: { spec?: { nodeName?: string } }[] }>({
        method: 'GET',
        path: RESOURCE_SLICES_PATH,
        timeoutMs: 60_000,
        dropManagedFields: true,
      });
      return (res.items ?? []).map((s) => s.spec?.nodeName ?? '');
    } catch (err) {
      if (errorKind(err) === 'NotFound') return [];
      throw err;
    }
  });
}

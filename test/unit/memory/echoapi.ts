// What the kubelet core sees of an API server and informer after its own status writes: each PATCH of a pod's
// status is applied with the strategic-merge rules of PodStatus, stored as a new version of the pod (new
// resourceVersion, the spec shared as an informer shares unchanged parts) and handed back a moment later as
// an informer update. Without it the pod manager never sees a written status, and the status manager's
// periodic reconcile finds every pod out of date every 10 s, which a real cluster never shows.
import type { Pod } from '../../../src/api/core.js';
import type { RequestOptions } from '../../../src/kube/client.js';
import type { PodStatusPatch } from '../../../src/kubelet/status/patch.js';
import { KindError } from '../../../src/util/errors.js';
import { applyPodStatusPatch } from '../../conformance/areas/statusManager-apiserver.js';

export class EchoingAPI {
  /** Pods by name, as the fixture's FakeAPI keeps them. */
  readonly pods = new Map<string, Pod>();
  patches = 0;
  gets = 0;
  private rv = 1000;

  /** Called with the new and old version after each status write, on a later turn of the event loop. */
  constructor(private readonly onUpdate: (pod: Pod, old: Pod) => void) {}

  async request<T>(req: RequestOptions): Promise<T> {
    const parts = req.path.split('/');
    const name = parts[6] ?? '';
    if (parts[5] !== 'pods') throw new KindError('NotFound', `${req.path} not found`);
    const old = this.pods.get(name);
    if (!old) throw new KindError('NotFound', `pods "${name}" not found`);
    if (req.method === 'GET') {
      this.gets++;
      return structuredClone(old) as T;
    }
    if (req.method !== 'PATCH' || parts[7] !== 'status')
      throw new KindError('InvalidArgument', `${req.method} ${req.path}`);
    const patch = req.body as PodStatusPatch;
    if (patch.metadata.uid !== old.metadata.uid) throw new KindError('Conflict', 'precondition failed: UID');
    this.patches++;
    const pod: Pod = {
      ...old,
      metadata: { ...old.metadata, resourceVersion: String(++this.rv) },
      status: applyPodStatusPatch(old.status ?? {}, patch.status),
    };
    this.pods.set(name, pod);
    setImmediate(() => this.onUpdate(pod, old));
    return { metadata: structuredClone(pod.metadata) } as T;
  }
}

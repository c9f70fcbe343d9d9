// An in-memory NodeAPI with the API server's behaviour where the node module depends on it: UIDs and
// resourceVersions, AlreadyExists / NotFound / Conflict, merge patch and a strategic merge patch of
// status that merges conditions and addresses by type. Failures can be injected per method.
import type { Lease, Node, NodeStatus } from '../../../src/api/node.js';
import type { NodeAPI, NodeEventRecorder } from '../../../src/node/api.js';
import { NodeStatusLoop, type NodeStatusParams } from '../../../src/node/nodestatus.js';
import { RuntimeState } from '../../../src/node/runtimestate.js';
import type {
  RuntimeFeatures,
  RuntimeHandler,
  RuntimeStatus,
  RuntimeVersion,
} from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';

type Method = keyof NodeAPI;

const clone = <T>(v: T): T => structuredClone(v);

function mergePatch(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function mergeByType<T extends { type: string }>(
  base: T[] | undefined,
  patch: T[] | undefined,
): T[] | undefined {
  if (!patch) return base;
  const out = [...(base ?? [])];
  for (const p of patch) {
    const i = out.findIndex((x) => x.type === p.type);
    if (i >= 0) out[i] = { ...out[i]!, ...p };
    else out.push(p);
  }
  return out;
}

export class FakeNodeAPI implements NodeAPI {
  nodes = new Map<string, Node>();
  leases = new Map<string, Lease>();
  /** Every call, stamped with the clock's time when one was given. */
  calls: { method: Method; name: string; at: number }[] = [];
  private failures = new Map<Method, KindError[]>();
  private rv = 1;
  private uidSeq = 0;

  constructor(private readonly clock?: { now(): number }) {}

  /** The next `count` calls of `method` fail with `kind`. */
  fail(method: Method, kind: KindError['kind'], count = 1): void {
    const list = this.failures.get(method) ?? [];
    for (let i = 0; i < count; i++) list.push(new KindError(kind, `injected ${kind} on ${method}`));
    this.failures.set(method, list);
  }

  count(method: Method): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  private enter(method: Method, name: string): void {
    this.calls.push({ method, name, at: this.clock?.now() ?? 0 });
    const err = this.failures.get(method)?.shift();
    if (err) throw err;
  }

  private nextRV(): string {
    return String(++this.rv);
  }

  private mustNode(name: string): Node {
    const n = this.nodes.get(name);
    if (!n) throw new KindError('NotFound', `nodes "${name}" not found`);
    return n;
  }

  async getNode(name: string): Promise<Node> {
    this.enter('getNode', name);
    return clone(this.mustNode(name));
  }

  async createNode(node: Node): Promise<Node> {
    const name = node.metadata.name ?? '';
    this.enter('createNode', name);
    if (this.nodes.has(name)) throw new KindError('AlreadyExists', `nodes "${name}" already exists`);
    const stored: Node = clone({
      ...node,
      metadata: { ...node.metadata, uid: `uid-${name}-${++this.uidSeq}`, resourceVersion: this.nextRV() },
    });
    this.nodes.set(name, stored);
    return clone(stored);
  }

  async patchNode(name: string, patch: unknown): Promise<Node> {
    this.enter('patchNode', name);
    const cur = this.mustNode(name);
    const rv = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (rv && rv !== cur.metadata.resourceVersion)
      throw new KindError('Conflict', 'the object has been modified');
    const next = mergePatch(cur, patch) as Node;
    next.metadata.resourceVersion = this.nextRV();
    this.nodes.set(name, next);
    return clone(next);
  }

  async patchNodeStatus(name: string, patch: unknown): Promise<Node> {
    this.enter('patchNodeStatus', name);
    const cur = this.mustNode(name);
    const p = (patch as { status?: NodeStatus }).status ?? {};
    const status: NodeStatus = {
      ...cur.status,
      ...p,
      conditions: mergeByType(cur.status?.conditions, p.conditions),
      addresses: mergeByType(cur.status?.addresses, p.addresses),
    };
    const next = { ...cur, status, metadata: { ...cur.metadata, resourceVersion: this.nextRV() } };
    this.nodes.set(name, next);
    return clone(next);
  }

  async deleteNode(name: string, opts?: { uid?: string }): Promise<void> {
    this.enter('deleteNode', name);
    const cur = this.mustNode(name);
    if (opts?.uid && cur.metadata.uid !== opts.uid)
      throw new KindError('Conflict', 'precondition failed: UID');
    this.nodes.delete(name);
  }

  async getLease(name: string): Promise<Lease> {
    this.enter('getLease', name);
    const l = this.leases.get(name);
    if (!l) throw new KindError('NotFound', `leases "${name}" not found`);
    return clone(l);
  }

  async createLease(lease: Lease): Promise<Lease> {
    const name = lease.metadata.name ?? '';
    this.enter('createLease', name);
    if (this.leases.has(name)) throw new KindError('AlreadyExists', `leases "${name}" already exists`);
    const stored = clone({
      ...lease,
      metadata: { ...lease.metadata, uid: `lease-${++this.uidSeq}`, resourceVersion: this.nextRV() },
    });
    this.leases.set(name, stored);
    return clone(stored);
  }

  async updateLease(lease: Lease): Promise<Lease> {
    const name = lease.metadata.name ?? '';
    this.enter('updateLease', name);
    const cur = this.leases.get(name);
    if (!cur) throw new KindError('NotFound', `leases "${name}" not found`);
    if (lease.metadata.resourceVersion !== cur.metadata.resourceVersion) {
      throw new KindError('Conflict', 'the object has been modified');
    }
    const stored = clone({ ...lease, metadata: { ...lease.metadata, resourceVersion: this.nextRV() } });
    this.leases.set(name, stored);
    return clone(stored);
  }

  async deleteLease(name: string): Promise<void> {
    this.enter('deleteLease', name);
    if (!this.leases.delete(name)) throw new KindError('NotFound', `leases "${name}" not found`);
  }

  /** Someone else writes the lease (bumps its resourceVersion). */
  touchLease(name: string): void {
    const l = this.leases.get(name);
    if (l) l.metadata.resourceVersion = this.nextRV();
  }
}

/** A node's status parameters as the node status tests use them. */
export const NODE_STATUS_PARAMS: NodeStatusParams = {
  nodeName: 'vn-1',
  internalIP: '127.0.0.2',
  capacity: { cpu: '4', memory: '16Gi', pods: '110' },
  allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
  daemonPort: 10250,
  kubeletVersion: 'v1.37.2-kubelet-operator-0.1.0',
  kernelVersion: '6.1.0',
  osImage: 'test',
};

export class FakeRuntime {
  down = false;
  runtimeReady = true;
  networkReady = true;
  statusCalls = 0;
  /** Pod CIDRs handed over, in order (CRI UpdateRuntimeConfig). */
  podCIDRs: string[] = [];
  /** Like containerd with a CNI config template: the network turns ready once a pod CIDR comes. */
  cniFromPodCIDR = false;
  /** What its Status reports besides the conditions (none, as containerd 1.6). */
  handlers: RuntimeHandler[] = [];
  features: RuntimeFeatures | undefined;
  async updatePodCIDR(podCIDR: string): Promise<void> {
    if (this.down) throw new KindError('Unavailable', 'connection refused');
    this.podCIDRs.push(podCIDR);
    if (this.cniFromPodCIDR) this.networkReady = true;
  }
  async version(): Promise<RuntimeVersion> {
    return { version: 'v1', runtimeName: 'fake', runtimeVersion: '1.2.3', runtimeApiVersion: 'v1' };
  }
  async status(): Promise<RuntimeStatus> {
    this.statusCalls++;
    if (this.down) throw new KindError('Unavailable', 'connection refused');
    const conditions = [
      {
        type: 'RuntimeReady',
        status: this.runtimeReady,
        reason: this.runtimeReady ? '' : 'Broken',
        message: '',
      },
      {
        type: 'NetworkReady',
        status: this.networkReady,
        reason: this.networkReady ? '' : 'NoCNI',
        message: '',
      },
    ];
    return { conditions, handlers: this.handlers, ...(this.features ? { features: this.features } : {}) };
  }
}

export class RecordingRecorder implements NodeEventRecorder {
  events: { kind: string; name: string; uid?: string; type: string; reason: string; message: string }[] = [];
  event(
    ref: { kind: string; name: string; uid?: string },
    type: string,
    reason: string,
    message: string,
  ): void {
    this.events.push({ kind: ref.kind, name: ref.name, uid: ref.uid, type, reason, message });
  }
  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}

/** Lets pending promise callbacks run (the fake API resolves at once, so a few turns suffice). */
export async function flush(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Registers node vn-1 with a NodeStatusLoop on a fake runtime, lets it write once, and returns the Node. */
export async function nodeStatusOnce(
  params: NodeStatusParams,
  configure: (r: FakeRuntime) => void = () => undefined,
) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const api = new FakeNodeAPI(clock);
  const runtime = new FakeRuntime();
  configure(runtime);
  const runtimeState = new RuntimeState({ nodeName: 'vn-1', runtime, clock });
  const loop = new NodeStatusLoop({
    api,
    clock,
    runtimeState,
    recorder: new RecordingRecorder(),
    params,
    hostNetwork: false,
  });
  await api.createNode({ metadata: { name: 'vn-1' }, status: await loop.initialStatus() });
  loop.start();
  await flush();
  await loop.ready;
  await loop.stop();
  return { node: api.nodes.get('vn-1')!, runtimeState, runtime };
}

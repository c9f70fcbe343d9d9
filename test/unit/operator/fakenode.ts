// A recording ManagedNode and its factory: what the controller asked of each served node, in order.
import type { Pod } from '../../../src/api/core.js';
import type { VirtualNode, VirtualNodeSpec } from '../../../src/api/virtualnode.js';
import type {
  ManagedNode,
  ManagedNodeFactory,
  ManagedNodeObservation,
  NodeWatches,
} from '../../../src/operator/managednode.js';

export class FakeManagedNode implements ManagedNode {
  readonly events: string[] = [];
  readonly pods = new Map<string, Pod>();
  /** How many drain calls still report pods left. */
  podsLeft = 0;
  startError: Error | undefined;
  /** When set, start() settles only after it does (a slow registration). */
  startWaits: Promise<void> | undefined;
  /** When set, stop() settles only after it does (a kubelet waiting for its syncs in flight). */
  stopWaits: Promise<void> | undefined;
  observation: ManagedNodeObservation = {
    registered: true,
    problems: [],
    runtimeReady: true,
    runtime: { name: 'fake', version: '1.0' },
    internalIP: '10.0.0.9',
    pods: { total: 0, running: 0, pending: 0 },
  };

  constructor(
    readonly vn: VirtualNode,
    public spec: VirtualNodeSpec,
    readonly nodeName: string,
    /** What the controller handed over (absent when a test builds the node itself). */
    readonly watches?: NodeWatches,
  ) {}

  async start(): Promise<void> {
    this.events.push('start');
    if (this.startWaits) await this.startWaits;
    if (this.startError) throw this.startError;
  }
  async update(spec: VirtualNodeSpec): Promise<void> {
    this.spec = spec;
    this.events.push(`update ${JSON.stringify(spec.labels)}`);
  }
  async drain(): Promise<boolean> {
    this.events.push('drain');
    return this.podsLeft-- <= 0;
  }
  async remove(): Promise<void> {
    this.events.push('remove');
  }
  async stop(): Promise<void> {
    this.events.push('stop');
    if (this.stopWaits) await this.stopWaits;
  }
  podAdded(p: Pod): void {
    this.events.push(`add ${p.metadata.name}`);
    this.pods.set(p.metadata.name ?? '', p);
  }
  podUpdated(_o: Pod, p: Pod): void {
    this.events.push(`update-pod ${p.metadata.name}`);
    this.pods.set(p.metadata.name ?? '', p);
  }
  podDeleted(p: Pod): void {
    this.events.push(`delete ${p.metadata.name}`);
    this.pods.delete(p.metadata.name ?? '');
  }
  observe(): ManagedNodeObservation {
    return structuredClone(this.observation);
  }
}

export class FakeFactory implements ManagedNodeFactory {
  /** Every node created, oldest first (a restart adds a new one). */
  readonly created: FakeManagedNode[] = [];
  /** Applied to each node as it is created (e.g. to make its start fail). */
  prepare: (n: FakeManagedNode) => void = () => {};

  create(vn: VirtualNode, spec: VirtualNodeSpec, nodeName: string, watches?: NodeWatches): ManagedNode {
    const n = new FakeManagedNode(vn, spec, nodeName, watches);
    this.prepare(n);
    this.created.push(n);
    return n;
  }

  /** needsRestart calls so far: each is a comparison of a served spec with a VirtualNode's. */
  restartChecks = 0;

  needsRestart(a: VirtualNodeSpec, b: VirtualNodeSpec): boolean {
    this.restartChecks++;
    return JSON.stringify(a.runtime) !== JSON.stringify(b.runtime);
  }

  /** The newest node serving `nodeName`. */
  node(nodeName: string): FakeManagedNode {
    const n = this.created.filter((c) => c.nodeName === nodeName).at(-1);
    if (!n) throw new Error(`no node ${nodeName} created`);
    return n;
  }
}

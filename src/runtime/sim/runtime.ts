/**
 * SimRuntime: the Runtime seam in memory, deterministic under an injected Clock. It mirrors containerd's CRI
 * plugin where the kubelet can tell the difference (error kinds and wording, name reservation, exit reasons,
 * PID 1 signal rules, log paths, nanosecond bigint timestamps) and takes what containers do from behaviour
 * profiles (profile.ts, command.ts). Every call is O(1) in the number of containers except unfiltered lists;
 * each running container with a finite run holds one clock timer, and a pending stop one more.
 *
 * Its capabilities: the kubelet lays out no host log directories and removes no host cgroups (nothing
 * touches the host), network probes are answered by `probePort` (pod IPs are made up), logs come from
 * `readLogs`, pod annotations under SimAnnotationPrefix reach the containers (behaviour profiles), and
 * container IDs read `sim://<id>`. Beyond Runtime it offers tests `setDown` and `injectFault`. probePort and
 * readLogs model the pod, not the runtime API, so they ignore faults and `setDown` (podview.ts). In-place
 * resize: resize.ts; declared usage, stats and OOM kills: usage.ts, stats.ts, process.ts.
 */
import { createHash } from 'node:crypto';
import { KindError } from '../../util/errors.js';
import type { Clock } from '../../util/clock.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatus,
  PortProbeOutcome,
  Runtime,
  RuntimeCapabilities,
  RuntimeCondition,
  RuntimeVersion,
  SandboxFilter,
  StreamingRequest,
} from '../types.js';
import { BehaviourResolver } from './behaviour.js';
import { criLogLines, toContainer, toContainerStatus, toPodSandbox, toPodSandboxStatus } from './convert.js';
import * as errs from './errors.js';
import { execInContainer } from './exec.js';
import { FaultInjector, type Fault, type RuntimeOp } from './faults.js';
import { SimImageService } from './imageservice.js';
import { ImageStore, parseImageReference } from './images.js';
import { IPAllocator, parseIPv4 } from './ipam.js';
import { fileViewOf, probePortOf, type NodeFiles } from './podview.js';
import { Processes } from './process.js';
import { SimAnnotationPrefix } from './profile.js';
import { containerRecord, sandboxRecord } from './records.js';
import { resizeContainer, settleResize } from './resize.js';
import { containerRemoved, containerStatsOf, listedContainerStats, sandboxStatsOf } from './stats.js';
import { SimStore, type ContainerRecord, type SandboxRecord } from './store.js';

export interface SimRuntimeOptions {
  clock: Clock;
  /** Pod network range (default 10.88.0.0/16, containerd's default bridge range). */
  podCIDR?: string;
  /** What host-network sandboxes report as their IP (default 10.0.0.2). */
  nodeIP?: string;
  /** SimProfiles data (profile.ts), validated here: `{ defaults?, images? }`. */
  profiles?: unknown;
  /** Images present from the start, as if imported. */
  images?: readonly string[];
  /** Seeds the deterministic IDs (default "sim"): two runtimes with different seeds never share an ID. */
  idSeed?: string;
  /**
   * The node's files (its in-memory pod directories): a container's `cat` of a path under one of its mounts
   * reads them, so probes and hooks that read volumes, /etc/hosts or tokens behave.
   */
  files?: NodeFiles;
  runtimeVersion?: string;
}

/** What probePort answers (kept under its old name for callers of the sim's own API). */
export type ProbeOutcome = PortProbeOutcome;

const RUNTIME_NAME = 'kubelet-operator-sim';

export class SimRuntime implements Runtime {
  readonly kind = 'sim' as const;
  readonly capabilities: RuntimeCapabilities = Object.freeze({
    hostLogDirectories: false,
    hostPodCgroups: false,
    probePort: (id: string, port: number, protocol: 'http' | 'tcp') => this.probePort(id, port, protocol),
    readLogs: (id: string) => this.readLogs(id),
    podAnnotationPrefix: SimAnnotationPrefix,
    runtimeType: 'sim',
  });
  private readonly clock: Clock;
  private readonly store = new SimStore();
  private readonly images = new ImageStore();
  private readonly imageService: SimImageService;
  private readonly ipam: IPAllocator;
  private readonly nodeIP: string;
  private readonly behaviours: BehaviourResolver;
  private readonly faults = new FaultInjector();
  private readonly idSeed: string;
  private readonly files: SimRuntimeOptions['files'];
  private readonly runtimeVersion: string;
  private readonly processes: Processes;
  private seq = 0;
  private closed = false;

  /** Throws InvalidArgument for a bad CIDR, node IP, image reference or profile data. */
  constructor(opts: SimRuntimeOptions) {
    if (!opts || typeof opts.clock?.setTimer !== 'function')
      throw errs.optionError('clock', 'options.clock is required');
    this.clock = opts.clock;
    this.processes = new Processes(opts.clock);
    this.ipam = new IPAllocator(opts.podCIDR ?? '10.88.0.0/16');
    this.nodeIP = opts.nodeIP ?? '10.0.0.2';
    if (parseIPv4(this.nodeIP) === undefined) {
      throw errs.optionError('nodeIP', `nodeIP ${JSON.stringify(this.nodeIP)} is not an IPv4 address`);
    }
    this.behaviours = new BehaviourResolver(opts.profiles);
    this.imageService = new SimImageService(this.images, this.behaviours, (ms) => this.processes.delay(ms));
    for (const image of opts.images ?? []) {
      const r = parseImageReference(image);
      if (!r) throw errs.optionError('images', `images: ${JSON.stringify(image)} is not an image reference`);
      this.images.add(r);
    }
    this.idSeed = opts.idSeed ?? 'sim';
    this.files = opts.files;
    this.runtimeVersion = opts.runtimeVersion ?? '0.1.0';
  }

  // ------------------------------------------------------------------------------------------ runtime

  async version(): Promise<RuntimeVersion> {
    this.enter('version');
    return {
      version: '0.1.0',
      runtimeName: RUNTIME_NAME,
      runtimeVersion: this.runtimeVersion,
      runtimeApiVersion: 'v1',
    };
  }

  async status(): Promise<RuntimeCondition[]> {
    this.enter('status');
    return [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ];
  }

  // ----------------------------------------------------------------------------------------- sandboxes

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    this.enter('runPodSandbox');
    const md = config?.metadata;
    if (!md || !md.name || !md.namespace || !md.uid) {
      throw new KindError(
        'InvalidArgument',
        'sandbox config must include metadata with name, namespace and uid',
      );
    }
    const nameKey = `${md.name}_${md.namespace}_${md.uid}_${md.attempt ?? 0}`;
    this.reserve(nameKey, { pod: `${md.namespace}/${md.name}` });
    const id = this.newId('sandbox');
    const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? 'POD';
    const ip = networkMode === 'NODE' ? this.nodeIP : this.ipam.allocate(id);
    const sandbox = sandboxRecord(config, { id, nameKey, ip, createdAt: this.processes.nowNs() });
    this.store.addSandbox(sandbox);
    return id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    this.enter('stopPodSandbox', { sandboxId: id });
    const sandbox = this.sandbox(id);
    for (const cid of sandbox.containers) {
      const c = this.store.containers.get(cid);
      if (c) this.processes.kill(c);
    }
    sandbox.state = 'notready';
  }

  async removePodSandbox(id: string): Promise<void> {
    this.enter('removePodSandbox', { sandboxId: id });
    const sandbox = this.store.getSandbox(id);
    if (!sandbox) return;
    for (const cid of [...sandbox.containers]) {
      const c = this.store.containers.get(cid);
      if (c) this.dropContainer(c);
    }
    sandbox.state = 'notready';
    if (sandbox.podNetwork) this.ipam.release(sandbox.ip);
    this.store.deleteSandbox(sandbox);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    this.enter('podSandboxStatus', { sandboxId: id });
    const s = this.sandbox(id);
    return toPodSandboxStatus(s);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]> {
    this.enter('listPodSandbox');
    return this.store.listSandboxes(filter).map(toPodSandbox);
  }

  // ---------------------------------------------------------------------------------------- containers

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string> {
    const name = config?.metadata?.name;
    this.enter('createContainer', { sandboxId: podSandboxId, container: name });
    if (!name) throw new KindError('InvalidArgument', 'container config must include metadata with a name');
    const context = { sandboxId: podSandboxId, container: name };
    if (!sandboxConfig?.metadata) {
      throw new KindError(
        'InvalidArgument',
        'CreateContainer needs the sandbox config (containerd does)',
        context,
      );
    }
    const sandbox = this.store.getSandbox(podSandboxId);
    if (!sandbox) throw errs.sandboxIdNotFound(podSandboxId, context);
    if (sandbox.state !== 'ready') throw errs.sandboxNotRunning(podSandboxId, context);
    const ref = parseImageReference(config.image ?? '');
    const image = ref && this.images.get(ref.ref);
    if (!ref || !image) throw errs.imageNotFound(config.image, context);
    const md = sandbox.metadata;
    const attempt = config.metadata.attempt ?? 0;
    const nameKey = `${name}_${md.name}_${md.namespace}_${md.uid}_${attempt}`;
    this.reserve(nameKey, context);
    const behaviour = this.behaviours.forContainer(
      config,
      ref,
      fileViewOf(config.mounts ?? [], sandbox.hostname, this.files),
    );
    if (behaviour.createError !== undefined) {
      throw new KindError('Unknown', behaviour.createError, { ...context, injected: true });
    }
    const c = containerRecord(config, sandbox, image, {
      id: this.newId('container'),
      nameKey,
      behaviour,
      createdAt: this.processes.nowNs(),
    });
    this.store.addContainer(c, sandbox);
    return c.id;
  }

  async startContainer(id: string): Promise<void> {
    this.enter('startContainer', { containerId: id });
    let c = this.container(id);
    this.checkStartable(c);
    const b = c.behaviour;
    if (b.startLatencyMs > 0) {
      c.starting = true;
      try {
        await this.processes.delay(b.startLatencyMs);
      } finally {
        c.starting = false;
      }
      c = this.container(id);
      this.checkStartable(c);
    }
    if (b.startError !== undefined) {
      this.processes.failStart(c, b.startError);
      throw errs.startFailed(id, b.startError);
    }
    this.processes.start(c);
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    this.enter('stopContainer', { containerId: id });
    await this.processes.stop(this.container(id), timeoutSeconds);
  }

  async removeContainer(id: string): Promise<void> {
    this.enter('removeContainer', { containerId: id });
    const c = this.store.getContainer(id);
    if (c) this.dropContainer(c);
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    this.enter('listContainers');
    return this.store.listContainers(filter).map(toContainer);
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    this.enter('containerStatus', { containerId: id });
    const c = this.container(id);
    settleResize(c, this.clock.now());
    return toContainerStatus(c);
  }

  async containerStats(id: string): Promise<ContainerStats> {
    this.enter('containerStats', { containerId: id });
    return containerStatsOf(this.container(id), this.clock.now());
  }

  async listContainerStats(filter?: ContainerStatsFilter): Promise<ContainerStats[]> {
    this.enter('listContainerStats');
    const now = this.clock.now();
    const out: ContainerStats[] = [];
    for (const c of this.store.listContainers({ ...filter, state: 'running' }))
      out.push(listedContainerStats(c, now));
    return out;
  }

  async listPodSandboxStats(filter?: PodSandboxStatsFilter): Promise<PodSandboxStats[]> {
    this.enter('listPodSandboxStats');
    const now = this.clock.now();
    const containers = this.store.containers;
    return this.store
      .listSandboxes({ ...filter, state: 'ready' })
      .map((s) => sandboxStatsOf(s, lookupAll(containers, s.containers), now));
  }

  async updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void> {
    this.enter('updateContainerResources', { containerId: id });
    const c = this.container(id);
    resizeContainer(c, resources, this.clock.now());
    this.processes.resized(c);
  }

  // ----------------------------------------------------------------------------------------------- exec

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    this.enter('execSync', { containerId: id });
    const c = this.container(id);
    const hostname = this.store.getSandbox(c.sandboxId)?.hostname ?? '';
    return execInContainer(c, cmd, timeoutSeconds, {
      processes: this.processes,
      nowMs: this.clock.now(),
      files: fileViewOf(c.mounts, hostname, this.files),
    });
  }

  async exec(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('exec', { containerId: req.containerId });
    this.container(req.containerId);
    throw errs.noStreaming('exec');
  }

  async attach(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('attach', { containerId: req.containerId });
    this.container(req.containerId);
    throw errs.noStreaming('attach');
  }

  async portForward(podSandboxId: string, _ports: number[]): Promise<{ url: string }> {
    this.enter('portForward', { sandboxId: podSandboxId });
    this.sandbox(podSandboxId);
    throw errs.noStreaming('port-forward');
  }

  // --------------------------------------------------------------------------------------------- images

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig): Promise<string> {
    this.enter('pullImage', { image });
    return this.imageService.pull(image, sandboxConfig);
  }

  async imageStatus(image: string): Promise<Image | null> {
    this.enter('imageStatus', { image });
    return this.imageService.status(image);
  }

  async listImages(): Promise<Image[]> {
    this.enter('listImages');
    return this.imageService.list();
  }

  async removeImage(image: string): Promise<void> {
    this.enter('removeImage', { image });
    this.imageService.remove(image);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.processes.close(this.store.containers.values(), errs.closedError());
  }

  // ----------------------------------------------------------------------------------------- sim only

  /** What an http or tcp probe of `port` would see now (podview.ts). NotFound for an unknown container. */
  probePort(containerId: string, port: number, protocol: 'http' | 'tcp'): ProbeOutcome {
    const c = this.container(containerId);
    return probePortOf(c, this.store.sandboxes.get(c.sandboxId)?.ip ?? '', port, protocol, this.clock.now());
  }

  /** The container's log as CRI-format lines (`<RFC3339Nano> <stream> F <line>`), as written so far. */
  readLogs(containerId: string): string[] {
    return criLogLines(this.container(containerId), this.clock.now());
  }

  /** While down, every Runtime call fails Unavailable; containers keep running and exiting. */
  setDown(down: boolean): void {
    this.faults.setDown(down);
  }

  /** The next `count` calls of `op` fail with `kind`. */
  injectFault(fault: Fault): void {
    this.faults.inject(fault);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /** Records examined by lookups and lists so far (work per call, for scale tests). */
  get recordsVisited(): number {
    return this.store.visited;
  }

  /** Pod IPs currently allocated. */
  get allocatedIPs(): number {
    return this.ipam.allocated;
  }

  // ---------------------------------------------------------------------------------------- internals

  private enter(op: RuntimeOp, context: Record<string, unknown> = {}): void {
    if (this.closed) throw errs.closedError(op);
    this.faults.check(op, context);
  }

  private sandbox(id: string): SandboxRecord {
    const s = this.store.getSandbox(id);
    if (!s) throw errs.sandboxNotFound(id);
    return s;
  }

  private container(id: string): ContainerRecord {
    const c = this.store.getContainer(id);
    if (!c) throw errs.containerNotFound(id);
    return c;
  }

  private reserve(nameKey: string, context: Record<string, unknown>): void {
    const holder = this.store.reservedBy(nameKey);
    if (holder !== undefined) throw errs.nameReserved(nameKey, holder, context);
  }

  private checkStartable(c: ContainerRecord): void {
    if (c.state !== 'created' || c.starting)
      throw errs.notStartable(c.id, c.starting ? 'starting' : errs.criState(c.state));
    if (this.store.sandboxes.get(c.sandboxId)?.state !== 'ready') {
      throw errs.sandboxNotRunning(c.sandboxId, { containerId: c.id });
    }
  }

  /** Kills (if running) and forgets a container. */
  private dropContainer(c: ContainerRecord): void {
    this.processes.forget(c);
    containerRemoved(c, this.store.sandboxes.get(c.sandboxId), this.clock.now());
    this.store.deleteContainer(c);
  }

  private newId(kind: string): string {
    return createHash('sha256').update(`${this.idSeed}/${kind}/${this.seq++}`).digest('hex');
  }
}

function* lookupAll<T>(map: ReadonlyMap<string, T>, ids: Iterable<string>): Iterable<T> {
  for (const id of ids) {
    const v = map.get(id);
    if (v !== undefined) yield v;
  }
}

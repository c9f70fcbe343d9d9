/**
 * SimRuntime: the Runtime seam in memory, deterministic under an injected Clock. It mirrors containerd's CRI
 * plugin where the kubelet can tell the difference (error kinds and wording, name reservation, exit reasons,
 * PID 1 signal rules, log paths, nanosecond bigint timestamps) and takes what containers do from behaviour
 * profiles (profile.ts, command.ts). Every call is O(1) in the number of containers except unfiltered lists;
 * each running container with a finite run holds one clock timer, and a pending stop one more.
 *
 * Its capabilities: the kubelet lays out no host log directories and removes no host cgroups (nothing
 * touches the host), network probes are answered by `probePort` (pod IPs are made up), logs come from
 * `readLogs`, pod annotations under SimAnnotationPrefix reach the containers (behaviour profiles),
 * container IDs read `sim://<id>`, a new process adopts what the API recorded (`adopt`: adopt.ts), and
 * image volumes are mounted (`imageVolumes`: recorded, the image's files unknown as the container's own are).
 * Its Status reports what it honours as recorded state: recursive read-only mounts, user namespaces (the
 * pod's mappings kept with its sandbox, shown in /proc/self/uid_map) and the Strict supplemental groups
 * policy (the groups a process gets: identity.ts processUser).
 * Beyond Runtime it offers tests `setDown` and `injectFault`. probePort and readLogs model the pod, not the
 * runtime API, so they ignore faults and `setDown` (podview.ts). In-place resize: resize.ts; declared
 * usage, stats and OOM kills: usage.ts, stats.ts, process.ts.
 */
import { KindError } from '../../util/errors.js';
import type { Clock } from '../../util/clock.js';
import type {
  AuthConfig,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  ImageFsInfo,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatus,
  PortProbeOutcome,
  Runtime,
  RuntimeCapabilities,
  RuntimeStatus,
  RuntimeVersion,
  SandboxFilter,
  StreamingRequest,
} from '../types.js';
import { SimAdopter } from './adopt.js';
import type { BehaviourResolver } from './behaviour.js';
import { criLogLines, toContainer, toContainerStatus, toPodSandbox, toPodSandboxStatus } from './convert.js';
import * as errs from './errors.js';
import { execInContainer } from './exec.js';
import { FaultInjector, type Fault, type RuntimeOp } from './faults.js';
import { SimImageService } from './imageservice.js';
import { fewList } from './few.js';
import { parseImageReference, type ImageStore } from './images.js';
import type { IPAllocator } from './ipam.js';
import { containerKey, sandboxNameKey } from './names.js';
import { setUp, type SimRuntimeOptions } from './options.js';
import { fileViewOf, hostPathOf, probePortOf, processView, type NodeFiles } from './podview.js';
import { Processes } from './process.js';
import { SimAnnotationPrefix } from './profile.js';
import { ipOf, RecordMaker, type ContainerRecord, type SandboxRecord } from './records.js';
import { resizeContainer, settleResize } from './resize.js';
import { mountsOf } from './spec.js';
import { containerRemoved, containerStatsOf, listedContainerStats, sandboxStatsOf } from './stats.js';
import { SimStore } from './store.js';
import { IdSource, type IdKind } from './ids.js';

export type { SimRuntimeOptions } from './options.js';

/** What probePort answers (kept under its old name for callers of the sim's own API). */
export type ProbeOutcome = PortProbeOutcome;

const RUNTIME_NAME = 'kubelet-operator-sim';

export class SimRuntime implements Runtime {
  readonly kind = 'sim' as const;
  readonly capabilities: RuntimeCapabilities = Object.freeze<RuntimeCapabilities>({
    hostLogDirectories: false,
    hostPodCgroups: false,
    probePort: (id: string, port: number, protocol: 'http' | 'tcp') => this.probePort(id, port, protocol),
    readLogs: (id: string) => this.readLogs(id),
    podAnnotationPrefix: SimAnnotationPrefix,
    runtimeType: 'sim',
    imageVolumes: true,
    // Unknown (no promise) while a fault is armed or the runtime is down or closed: a listing must then be
    // asked, to fail as it should.
    listingRevision: () => (this.closed || !this.faults.quiet() ? undefined : this.store.revision),
    adopt: {
      adoptSandbox: (config, fixed) => this.adopter.adoptSandbox(config, fixed),
      adoptContainer: (id, config, sandbox, fixed) => this.adopter.adoptContainer(id, config, sandbox, fixed),
    },
  });
  private readonly clock: Clock;
  private readonly store = new SimStore();
  private readonly records = new RecordMaker();
  /** Containers whose start is waiting out its latency. */
  private readonly starting = new Set<ContainerRecord>();
  private readonly images: ImageStore;
  private readonly imageService: SimImageService;
  private readonly ipam: IPAllocator;
  private readonly nodeIP: string;
  private readonly behaviours: BehaviourResolver;
  private readonly faults = new FaultInjector();
  /** Sandbox and container IDs from sources of their own: an adopted container's ID is never a sandbox's. */
  private readonly ids: Record<IdKind, IdSource>;
  private readonly files: NodeFiles | undefined;
  private readonly runtimeVersion: string;
  private readonly containerFilesystem: 'images' | 'separate';
  private readonly processes: Processes;
  private readonly adopter: SimAdopter;
  private seq = 0;
  private closed = false;

  /** Throws InvalidArgument for a bad CIDR, node IP, image reference or profile data (options.ts). */
  constructor(opts: SimRuntimeOptions) {
    const setup = setUp(opts);
    this.clock = setup.clock;
    this.ipam = setup.ipam;
    this.nodeIP = setup.nodeIP;
    this.behaviours = setup.behaviours;
    this.images = setup.images;
    this.ids = {
      sandbox: new IdSource(`${setup.idSeed}/sandbox`),
      container: new IdSource(`${setup.idSeed}/container`),
    };
    this.files = setup.files;
    this.runtimeVersion = setup.runtimeVersion;
    this.containerFilesystem = setup.containerFilesystem;
    this.processes = new Processes(this.clock, () => this.store.touch());
    this.imageService = new SimImageService(this.images, this.behaviours, (ms) => this.processes.delay(ms));
    this.adopter = new SimAdopter({
      ...setup,
      store: this.store,
      records: this.records,
      processes: this.processes,
      newId: (kind) => this.newId(kind),
      isClosed: () => this.closed,
    });
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

  async status(): Promise<RuntimeStatus> {
    this.enter('status');
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
      // One handler, the default (no RuntimeClass handlers), as containerd 2 reports its default runtime.
      handlers: [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: true }],
      features: { supplementalGroupsPolicy: true },
    };
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
    const nameKey = sandboxNameKey({ ...md, attempt: md.attempt ?? 0 });
    this.reserve(nameKey, { pod: `${md.namespace}/${md.name}` });
    const id = this.newId('sandbox');
    const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? 'POD';
    const ip = networkMode === 'NODE' ? this.nodeIP : this.ipam.allocateAddress(id);
    this.store.addSandbox(this.records.sandbox(config, { id, ip, createdAt: this.processes.nowNs() }));
    return id;
  }

  async stopPodSandbox(id: string): Promise<void> {
    this.enter('stopPodSandbox', { sandboxId: id });
    const sandbox = this.sandbox(id);
    for (const c of fewList(sandbox.containers)) this.processes.kill(c);
    sandbox.state = 'notready';
    this.store.touch();
  }

  async removePodSandbox(id: string): Promise<void> {
    this.enter('removePodSandbox', { sandboxId: id });
    const sandbox = this.store.getSandbox(id);
    if (!sandbox) return;
    for (const c of [...fewList(sandbox.containers)]) this.dropContainer(c);
    sandbox.state = 'notready';
    this.store.touch();
    if (typeof sandbox.ip === 'number') this.ipam.releaseAddress(sandbox.ip);
    this.store.deleteSandbox(sandbox);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    this.enter('podSandboxStatus', { sandboxId: id });
    const s = this.sandbox(id);
    return toPodSandboxStatus(s);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<readonly PodSandbox[]> {
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
    const nameKey = containerKey(name, config.metadata.attempt ?? 0, sandbox);
    this.reserve(nameKey, context);
    const user = this.behaviours.processUser(config, ref);
    const behaviour = this.behaviours.forContainer(
      config,
      ref,
      fileViewOf(config.mounts ?? [], sandbox.hostname, this.files, processView(user, sandbox)),
    );
    if (behaviour.createError !== undefined) {
      throw new KindError('Unknown', behaviour.createError, { ...context, injected: true });
    }
    const c = this.records.container(config, sandbox, image, {
      id: this.newId('container'),
      behaviour,
      createdAt: this.processes.nowNs(),
      user,
    });
    this.store.addContainer(c);
    return c.id;
  }

  async startContainer(id: string): Promise<void> {
    this.enter('startContainer', { containerId: id });
    let c = this.container(id);
    this.checkStartable(c);
    const b = c.behaviour;
    if (b.startLatencyMs > 0) {
      this.starting.add(c);
      try {
        await this.processes.delay(b.startLatencyMs);
      } finally {
        this.starting.delete(c);
      }
      c = this.container(id);
      this.checkStartable(c);
    }
    if (b.startError !== undefined) {
      this.processes.failStart(c, b.startError);
      throw errs.startFailed(id, b.startError);
    }
    this.processes.start(c);
    this.writeFiles(c);
  }

  /** What the container writes into its mounts as it starts (behaviour `files`), through the node's files. */
  private writeFiles(c: ContainerRecord): void {
    const files = this.files;
    if (c.behaviour.files.length === 0 || !files?.writeFileSync) return;
    const mounts = mountsOf(c.spec, c.hostPaths);
    for (const f of c.behaviour.files) {
      const host = hostPathOf(mounts, f.path, true);
      if (host !== undefined) files.writeFileSync(host, Buffer.from(f.content), f.append);
    }
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

  async listContainers(filter?: ContainerFilter): Promise<readonly Container[]> {
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
    return this.store
      .listSandboxes({ ...filter, state: 'ready' })
      .map((s) => sandboxStatsOf(s, fewList(s.containers), now));
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
    return execInContainer(c, cmd, timeoutSeconds, {
      processes: this.processes,
      nowMs: this.clock.now(),
      files: fileViewOf(
        mountsOf(c.spec, c.hostPaths),
        c.sandbox.hostname,
        this.files,
        processView(c.spec.user, c.sandbox),
      ),
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

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    this.enter('pullImage', { image });
    return this.imageService.pull(image, sandboxConfig, auth);
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

  async imageFsInfo(): Promise<ImageFsInfo> {
    this.enter('imageFsInfo');
    const now = this.clock.now();
    if (this.containerFilesystem === 'images') return this.imageService.fsInfo(BigInt(now) * 1_000_000n);
    // Every container's layer, exited ones too: they stay on disk until the container is removed.
    let bytes = 0;
    let inodes = 0;
    for (const c of this.store.containers.values()) {
      const layer = containerStatsOf(c, now).writableLayer;
      bytes += layer?.usedBytes ?? 0;
      inodes += layer?.inodesUsed ?? 0;
    }
    return this.imageService.fsInfo(BigInt(now) * 1_000_000n, { bytes, inodes });
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
    return probePortOf(c, ipOf(c.sandbox), port, protocol, this.clock.now());
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
    const starting = this.starting.has(c);
    if (c.state !== 'created' || starting)
      throw errs.notStartable(c.id, starting ? 'starting' : errs.criState(c.state));
    if (c.sandbox.state !== 'ready') throw errs.sandboxNotRunning(c.sandbox.id, { containerId: c.id });
  }

  /** Kills (if running) and forgets a container. */
  private dropContainer(c: ContainerRecord): void {
    this.processes.forget(c);
    containerRemoved(c, c.sandbox, this.clock.now());
    this.store.deleteContainer(c);
  }

  /** Derived from the seed and a counter, skipping the IDs adopted from an earlier process of that seed. */
  private newId(kind: IdKind): string {
    for (;;) {
      const id = this.ids[kind].id(this.seq++);
      if (!this.adopter.taken(id)) return id;
    }
  }
}

/**
 * SimRuntime: the Runtime seam in memory, deterministic under an injected Clock. It mirrors containerd's CRI
 * plugin where the kubelet can tell the difference (error kinds and wording, name reservation, exit reasons,
 * PID 1 signal rules, log paths, nanosecond bigint timestamps) and takes what containers do from behaviour
 * profiles (profile.ts, command.ts). Every call is O(1) in the number of containers except unfiltered lists;
 * each running container with a finite run holds one clock timer, and a pending stop one more.
 *
 * Beyond Runtime it offers what the prober and tests need: `probePort` (what an http or tcp probe would
 * see), `readLogs` (the CRI-format log lines written so far), `setDown` and `injectFault`. probePort and
 * readLogs model the pod, not the runtime API, so they ignore faults and `setDown`.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { KindError } from '../../util/errors.js';
import type { Clock } from '../../util/clock.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
  Mount,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStatus,
  Runtime,
  RuntimeCondition,
  RuntimeVersion,
  SandboxFilter,
  StreamingRequest,
} from '../types.js';
import { BehaviourResolver, matchExec } from './behaviour.js';
import { evaluateExec, type FileView } from './command.js';
import { criLogLines, toContainer, toContainerStatus, toPodSandbox, toPodSandboxStatus } from './convert.js';
import {
  closedError,
  containerNotFound,
  criState,
  execTimedOut,
  imageNotFound,
  nameReserved,
  noStreaming,
  notRunning,
  notStartable,
  optionError,
  pullFailed,
  sandboxIdNotFound,
  sandboxNotFound,
  sandboxNotRunning,
  startFailed,
} from './errors.js';
import { FaultInjector, type Fault, type RuntimeOp } from './faults.js';
import { ImageStore, imageUser, parseImageReference, unreachableRegistryMessage } from './images.js';
import { IPAllocator, parseIPv4 } from './ipam.js';
import { Processes } from './process.js';
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
  files?: { readFileSync(path: string): Buffer | undefined };
  runtimeVersion?: string;
}

export interface ProbeOutcome {
  result: 'success' | 'failure';
  /** Why it failed, worded as the kubelet's probers word it; "" on success. */
  output: string;
}

const RUNTIME_NAME = 'kubelet-operator-sim';
const NO_MOUNTS: readonly Mount[] = Object.freeze([]);

export class SimRuntime implements Runtime {
  readonly kind = 'sim' as const;
  private readonly clock: Clock;
  private readonly store = new SimStore();
  private readonly images = new ImageStore();
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
      throw optionError('clock', 'options.clock is required');
    this.clock = opts.clock;
    this.processes = new Processes(opts.clock);
    this.ipam = new IPAllocator(opts.podCIDR ?? '10.88.0.0/16');
    this.nodeIP = opts.nodeIP ?? '10.0.0.2';
    if (parseIPv4(this.nodeIP) === undefined) {
      throw optionError('nodeIP', `nodeIP ${JSON.stringify(this.nodeIP)} is not an IPv4 address`);
    }
    this.behaviours = new BehaviourResolver(opts.profiles);
    for (const image of opts.images ?? []) {
      const r = parseImageReference(image);
      if (!r) throw optionError('images', `images: ${JSON.stringify(image)} is not an image reference`);
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
    const podNetwork = networkMode !== 'NODE';
    const sandbox: SandboxRecord = {
      id,
      metadata: { name: md.name, uid: md.uid, namespace: md.namespace, attempt: md.attempt ?? 0 },
      state: 'ready',
      createdAt: this.processes.nowNs(),
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      networkMode,
      ip: podNetwork ? this.ipam.allocate(id) : this.nodeIP,
      podNetwork,
      logDirectory: config.logDirectory ?? '',
      hostname: config.hostname ?? '',
      nameKey,
      containers: new Set(),
    };
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
    if (!sandbox) throw sandboxIdNotFound(podSandboxId, context);
    if (sandbox.state !== 'ready') throw sandboxNotRunning(podSandboxId, context);
    const ref = parseImageReference(config.image ?? '');
    const image = ref && this.images.get(ref.ref);
    if (!ref || !image) throw imageNotFound(config.image, context);
    const md = sandbox.metadata;
    const attempt = config.metadata.attempt ?? 0;
    const nameKey = `${name}_${md.name}_${md.namespace}_${md.uid}_${attempt}`;
    this.reserve(nameKey, context);
    const behaviour = this.behaviours.forContainer(
      config,
      ref,
      this.fileViewOf(config.mounts ?? [], sandbox.hostname),
    );
    if (behaviour.createError !== undefined) {
      throw new KindError('Unknown', behaviour.createError, { ...context, injected: true });
    }
    const logPath =
      sandbox.logDirectory && config.logPath ? posix.join(sandbox.logDirectory, config.logPath) : '';
    const c: ContainerRecord = {
      id: this.newId('container'),
      sandboxId: podSandboxId,
      metadata: { name, attempt },
      image: config.image,
      imageId: image.id,
      statusImage: image.repoTags[0] ?? config.image,
      statusImageRef: image.repoDigests[0] ?? image.id,
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      logPath,
      env: config.envs?.length ? Object.fromEntries(config.envs.map((e) => [e.key, e.value])) : {},
      mounts: config.mounts?.length ? config.mounts.map((m) => ({ ...m })) : NO_MOUNTS,
      behaviour,
      nameKey,
      createdAt: this.processes.nowNs(),
      state: 'created',
      starting: false,
      startedAt: 0n,
      startedMs: 0,
      finishedAt: 0n,
      finishedMs: 0,
      exitCode: 0,
      reason: '',
      message: '',
      exitTimer: undefined,
      killTimer: undefined,
      killAt: Infinity,
      waiters: undefined,
    };
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
      throw startFailed(id, b.startError);
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
    return toContainerStatus(this.container(id));
  }

  // ----------------------------------------------------------------------------------------------- exec

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    this.enter('execSync', { containerId: id });
    const c = this.container(id);
    if (c.state !== 'running') throw notRunning(id, criState(c.state));
    if (!Array.isArray(cmd) || cmd.length === 0)
      throw new KindError('InvalidArgument', 'exec command must not be empty');
    const rule = matchExec(c.behaviour, cmd, this.clock.now() - c.startedMs);
    const outcome = rule
      ? { durationMs: rule.delayMs, exitCode: rule.exitCode, stdout: rule.stdout, stderr: rule.stderr }
      : evaluateExec(cmd, c.env, this.fileView(c));
    const limitMs = timeoutSeconds > 0 ? timeoutSeconds * 1000 : Infinity;
    const duration = outcome.durationMs ?? Infinity;
    if (duration > limitMs) {
      await this.processes.delay(limitMs);
      throw execTimedOut(id, timeoutSeconds, cmd);
    }
    if (duration === Infinity) {
      // Runs until the container's PID 1 dies, which takes the exec'd process with it.
      await this.processes.waitForExit(c);
      return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 137 };
    }
    if (duration > 0) await this.processes.delay(duration);
    return {
      stdout: Buffer.from(outcome.stdout),
      stderr: Buffer.from(outcome.stderr),
      exitCode: outcome.exitCode,
    };
  }

  async exec(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('exec', { containerId: req.containerId });
    this.container(req.containerId);
    throw noStreaming('exec');
  }

  async attach(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('attach', { containerId: req.containerId });
    this.container(req.containerId);
    throw noStreaming('attach');
  }

  async portForward(podSandboxId: string, _ports: number[]): Promise<{ url: string }> {
    this.enter('portForward', { sandboxId: podSandboxId });
    this.sandbox(podSandboxId);
    throw noStreaming('port-forward');
  }

  // --------------------------------------------------------------------------------------------- images

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig): Promise<string> {
    this.enter('pullImage', { image });
    const r = parseImageReference(image);
    if (!r) {
      throw new KindError(
        'InvalidArgument',
        `failed to pull and unpack image "${image}": invalid reference format`,
      );
    }
    const profile = this.behaviours.pullProfile(r, sandboxConfig);
    if (profile.pullLatencyMs) await this.processes.delay(profile.pullLatencyMs);
    const cause =
      profile.pullError ?? (r.host.endsWith('.invalid') ? unreachableRegistryMessage(r) : undefined);
    if (cause !== undefined) {
      throw pullFailed(r.ref, cause);
    }
    return this.images.add(r);
  }

  async imageStatus(image: string): Promise<Image | null> {
    this.enter('imageStatus', { image });
    const found = this.images.get(image);
    return found ? this.withUser(found) : null;
  }

  async listImages(): Promise<Image[]> {
    this.enter('listImages');
    return this.images.list().map((i) => this.withUser(i));
  }

  /** The image's USER from its profile (default root: neither uid nor username). */
  private withUser(image: Image): Image {
    const r = image.repoTags[0] !== undefined ? parseImageReference(image.repoTags[0]) : undefined;
    return r ? { ...image, ...imageUser(this.behaviours.imageProfile(r).user) } : image;
  }

  async removeImage(image: string): Promise<void> {
    this.enter('removeImage', { image });
    this.images.remove(image);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.processes.close(this.store.containers.values(), closedError());
  }

  // ----------------------------------------------------------------------------------------- sim only

  /** What an http or tcp probe of `port` would see now. NotFound for an unknown container. */
  probePort(containerId: string, port: number, kind: 'http' | 'tcp'): ProbeOutcome {
    const c = this.container(containerId);
    const ip = this.store.sandboxes.get(c.sandboxId)?.ip ?? '';
    const refused = {
      result: 'failure' as const,
      output: `dial tcp ${ip}:${port}: connect: connection refused`,
    };
    const rule = c.behaviour.ports.get(port);
    if (c.state !== 'running' || !rule) return refused;
    const since = this.clock.now() - c.startedMs;
    if (since < rule.readyAfterMs) return refused;
    if (rule.fails || since >= rule.failAfterMs) {
      return kind === 'http'
        ? { result: 'failure', output: 'HTTP probe failed with statuscode: 500' }
        : refused;
    }
    return { result: 'success', output: '' };
  }

  /** What the container sees of its mounted files and its sandbox's hostname. */
  private fileView(c: ContainerRecord): FileView {
    return this.fileViewOf(c.mounts, this.store.getSandbox(c.sandboxId)?.hostname ?? '');
  }

  private fileViewOf(mounts: readonly Mount[], hostname: string): FileView {
    const files = this.files;
    const view: FileView = {};
    if (hostname) view.hostname = hostname;
    if (!files || mounts.length === 0) return view;
    view.readFile = (path) => {
      let best: Mount | undefined;
      for (const m of mounts) {
        const under = path === m.containerPath || path.startsWith(`${m.containerPath.replace(/\/+$/, '')}/`);
        if (under && (!best || m.containerPath.length > best.containerPath.length)) best = m;
      }
      if (!best) return undefined;
      const rest = path.slice(best.containerPath.replace(/\/+$/, '').length);
      const data = files.readFileSync(rest ? posix.join(best.hostPath, rest) : best.hostPath);
      return data === undefined ? null : data.toString('utf8');
    };
    return view;
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
    if (this.closed) throw closedError(op);
    this.faults.check(op, context);
  }

  private sandbox(id: string): SandboxRecord {
    const s = this.store.getSandbox(id);
    if (!s) throw sandboxNotFound(id);
    return s;
  }

  private container(id: string): ContainerRecord {
    const c = this.store.getContainer(id);
    if (!c) throw containerNotFound(id);
    return c;
  }

  private reserve(nameKey: string, context: Record<string, unknown>): void {
    const holder = this.store.reservedBy(nameKey);
    if (holder !== undefined) throw nameReserved(nameKey, holder, context);
  }

  private checkStartable(c: ContainerRecord): void {
    if (c.state !== 'created' || c.starting)
      throw notStartable(c.id, c.starting ? 'starting' : criState(c.state));
    if (this.store.sandboxes.get(c.sandboxId)?.state !== 'ready') {
      throw sandboxNotRunning(c.sandboxId, { containerId: c.id });
    }
  }

  /** Kills (if running) and forgets a container. */
  private dropContainer(c: ContainerRecord): void {
    this.processes.forget(c);
    this.store.deleteContainer(c);
  }

  private newId(kind: string): string {
    return createHash('sha256').update(`${this.idSeed}/${kind}/${this.seq++}`).digest('hex');
  }
}

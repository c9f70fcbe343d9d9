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
import type { Clock, TimerHandle } from '../../util/clock.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStatus,
  ExecSyncResult,
  Image,
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
import { evaluateExec } from './command.js';
import { FaultInjector, type Fault, type RuntimeOp } from './faults.js';
import { ImageStore, parseImageReference, unreachableRegistryMessage } from './images.js';
import { IPAllocator, parseIPv4 } from './ipam.js';
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
  runtimeVersion?: string;
}

export interface ProbeOutcome {
  result: 'success' | 'failure';
  /** Why it failed, worded as the kubelet's probers word it; "" on success. */
  output: string;
}

const RUNTIME_NAME = 'kubelet-operator-sim';

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
  private readonly runtimeVersion: string;
  private readonly delays = new Set<{ handle: TimerHandle; reject: (e: Error) => void }>();
  private seq = 0;
  private lastNs = 0n;
  private closed = false;

  /** Throws InvalidArgument for a bad CIDR, node IP, image reference or profile data. */
  constructor(opts: SimRuntimeOptions) {
    if (!opts || typeof opts.clock?.setTimer !== 'function') {
      throw new KindError('InvalidArgument', 'sim runtime: options.clock is required', { field: 'clock' });
    }
    this.clock = opts.clock;
    this.ipam = new IPAllocator(opts.podCIDR ?? '10.88.0.0/16');
    this.nodeIP = opts.nodeIP ?? '10.0.0.2';
    if (parseIPv4(this.nodeIP) === undefined) {
      throw new KindError(
        'InvalidArgument',
        `sim runtime: nodeIP ${JSON.stringify(this.nodeIP)} is not an IPv4 address`,
        {
          field: 'nodeIP',
        },
      );
    }
    this.behaviours = new BehaviourResolver(opts.profiles);
    for (const image of opts.images ?? []) {
      const r = parseImageReference(image);
      if (!r)
        throw new KindError(
          'InvalidArgument',
          `sim runtime: images: ${JSON.stringify(image)} is not an image reference`,
        );
      this.images.add(r);
    }
    this.idSeed = opts.idSeed ?? 'sim';
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
      createdAt: this.nowNs(),
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      networkMode,
      ip: podNetwork ? this.ipam.allocate(id) : this.nodeIP,
      podNetwork,
      logDirectory: config.logDirectory ?? '',
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
      if (c?.state === 'running') this.exit(c, 137, 'Error');
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
    return { ...toPodSandbox(s), network: { ip: s.ip, additionalIps: [] }, networkMode: s.networkMode };
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
    if (!sandboxConfig?.metadata) {
      throw new KindError(
        'InvalidArgument',
        'sandbox config is required on CreateContainer (containerd needs it)',
        {
          sandboxId: podSandboxId,
          container: name,
        },
      );
    }
    const sandbox = this.store.getSandbox(podSandboxId);
    if (!sandbox) {
      throw new KindError('NotFound', `failed to find sandbox id "${podSandboxId}": not found`, {
        sandboxId: podSandboxId,
      });
    }
    if (sandbox.state !== 'ready') {
      throw new KindError('InvalidArgument', `sandbox container "${podSandboxId}" is not running`, {
        sandboxId: podSandboxId,
        container: name,
      });
    }
    const ref = parseImageReference(config.image ?? '');
    const image = ref && this.images.get(ref.ref);
    if (!ref || !image) {
      throw new KindError('NotFound', `failed to resolve image "${config.image}": not found`, {
        image: config.image,
        container: name,
      });
    }
    const md = sandbox.metadata;
    const attempt = config.metadata.attempt ?? 0;
    const nameKey = `${name}_${md.name}_${md.namespace}_${md.uid}_${attempt}`;
    this.reserve(nameKey, { container: name, sandboxId: podSandboxId });
    const behaviour = this.behaviours.forContainer(config, ref);
    if (behaviour.createError !== undefined) {
      throw new KindError('Unknown', behaviour.createError, {
        container: name,
        sandboxId: podSandboxId,
        injected: true,
      });
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
      behaviour,
      nameKey,
      createdAt: this.nowNs(),
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
        await this.delay(b.startLatencyMs);
      } finally {
        c.starting = false;
      }
      c = this.container(id);
      this.checkStartable(c);
    }
    if (b.startError !== undefined) {
      c.state = 'exited';
      c.finishedAt = this.nowNs();
      c.finishedMs = this.clock.now();
      c.exitCode = 128;
      c.reason = 'StartError';
      c.message = b.startError;
      throw new KindError('Unknown', `failed to create containerd task: ${b.startError}`, {
        containerId: id,
        injected: true,
      });
    }
    c.state = 'running';
    c.startedAt = this.nowNs();
    c.startedMs = this.clock.now();
    if (b.exitAfterMs === 0) this.naturalExit(c);
    else if (b.exitAfterMs !== undefined) {
      const rec = c;
      c.exitTimer = this.clock.setTimer(b.exitAfterMs, () => this.naturalExit(rec));
    }
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    this.enter('stopContainer', { containerId: id });
    const c = this.container(id);
    if (c.state !== 'running') return;
    const b = c.behaviour;
    if (!b.ignoresSigterm) return this.exit(c, b.sigtermExitCode, reasonFor(b.sigtermExitCode));
    if (!(timeoutSeconds > 0)) return this.exit(c, 137, 'Error');
    const killAt = this.clock.now() + timeoutSeconds * 1000;
    if (killAt < c.killAt) {
      c.killTimer?.cancel();
      c.killAt = killAt;
      c.killTimer = this.clock.setTimer(timeoutSeconds * 1000, () => this.exit(c, 137, 'Error'));
    }
    await this.waitForExit(c);
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
    return {
      ...toContainer(c),
      image: c.statusImage,
      imageRef: c.statusImageRef,
      startedAt: c.startedAt,
      finishedAt: c.finishedAt,
      exitCode: c.exitCode,
      reason: c.reason,
      message: c.message,
      logPath: c.logPath,
    };
  }

  // ----------------------------------------------------------------------------------------------- exec

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    this.enter('execSync', { containerId: id });
    const c = this.container(id);
    if (c.state !== 'running') {
      throw new KindError(
        'InvalidArgument',
        `container ${id} is not running: in CONTAINER_${c.state.toUpperCase()} state`,
        {
          containerId: id,
        },
      );
    }
    if (!Array.isArray(cmd) || cmd.length === 0)
      throw new KindError('InvalidArgument', 'exec command must not be empty');
    const rule = matchExec(c.behaviour, cmd, this.clock.now() - c.startedMs);
    const outcome = rule
      ? { durationMs: rule.delayMs, exitCode: rule.exitCode, stdout: rule.stdout, stderr: rule.stderr }
      : evaluateExec(cmd, c.env);
    const limitMs = timeoutSeconds > 0 ? timeoutSeconds * 1000 : Infinity;
    const duration = outcome.durationMs ?? Infinity;
    if (duration > limitMs) {
      await this.delay(limitMs);
      throw new KindError(
        'DeadlineExceeded',
        `timeout ${timeoutSeconds}s exceeded: context deadline exceeded`,
        {
          containerId: id,
          cmd,
        },
      );
    }
    if (duration === Infinity) {
      // Runs until the container's PID 1 dies, which takes the exec'd process with it.
      await this.waitForExit(c);
      return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 137 };
    }
    if (duration > 0) await this.delay(duration);
    return {
      stdout: Buffer.from(outcome.stdout),
      stderr: Buffer.from(outcome.stderr),
      exitCode: outcome.exitCode,
    };
  }

  async exec(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('exec', { containerId: req.containerId });
    this.container(req.containerId);
    throw new KindError('Unimplemented', 'the simulated runtime has no streaming server (exec)');
  }

  async attach(req: StreamingRequest): Promise<{ url: string }> {
    this.enter('attach', { containerId: req.containerId });
    this.container(req.containerId);
    throw new KindError('Unimplemented', 'the simulated runtime has no streaming server (attach)');
  }

  async portForward(podSandboxId: string, _ports: number[]): Promise<{ url: string }> {
    this.enter('portForward', { sandboxId: podSandboxId });
    this.sandbox(podSandboxId);
    throw new KindError('Unimplemented', 'the simulated runtime has no streaming server (port-forward)');
  }

  // --------------------------------------------------------------------------------------------- images

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig): Promise<string> {
    this.enter('pullImage', { image });
    const r = parseImageReference(image);
    if (!r)
      throw new KindError(
        'InvalidArgument',
        `failed to pull and unpack image "${image}": invalid reference format`,
      );
    const profile = this.behaviours.pullProfile(r, sandboxConfig);
    if (profile.pullLatencyMs) await this.delay(profile.pullLatencyMs);
    const cause =
      profile.pullError ?? (r.host.endsWith('.invalid') ? unreachableRegistryMessage(r) : undefined);
    if (cause !== undefined) {
      throw new KindError('Unknown', `failed to pull and unpack image "${r.ref}": ${cause}`, {
        image: r.ref,
      });
    }
    return this.images.add(r);
  }

  async imageStatus(image: string): Promise<Image | null> {
    this.enter('imageStatus', { image });
    return this.images.get(image) ?? null;
  }

  async listImages(): Promise<Image[]> {
    this.enter('listImages');
    return this.images.list();
  }

  async removeImage(image: string): Promise<void> {
    this.enter('removeImage', { image });
    this.images.remove(image);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const gone = new KindError('Unavailable', 'sim runtime closed');
    for (const d of this.delays) {
      d.handle.cancel();
      d.reject(gone);
    }
    this.delays.clear();
    for (const c of this.store.containers.values()) {
      c.exitTimer?.cancel();
      c.killTimer?.cancel();
      this.release(c, gone);
    }
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

  /** The container's log as CRI-format lines (`<RFC3339Nano> <stream> F <line>`), as written so far. */
  readLogs(containerId: string): string[] {
    const c = this.container(containerId);
    if (c.startedAt === 0n) return [];
    const until = (c.state === 'exited' ? c.finishedMs : this.clock.now()) - c.startedMs;
    return c.behaviour.logs
      .filter((l) => l.afterMs <= until)
      .map((l) => `${rfc3339Nano(c.startedAt + BigInt(l.afterMs) * 1_000_000n)} ${l.stream} F ${l.line}`);
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
    if (this.closed) throw new KindError('Unavailable', 'sim runtime closed', { op });
    this.faults.check(op, context);
  }

  private sandbox(id: string): SandboxRecord {
    const s = this.store.getSandbox(id);
    if (!s)
      throw new KindError('NotFound', `an error occurred when try to find sandbox "${id}": not found`, {
        sandboxId: id,
      });
    return s;
  }

  private container(id: string): ContainerRecord {
    const c = this.store.getContainer(id);
    if (!c)
      throw new KindError('NotFound', `an error occurred when try to find container "${id}": not found`, {
        containerId: id,
      });
    return c;
  }

  private reserve(nameKey: string, context: Record<string, unknown>): void {
    const holder = this.store.reservedBy(nameKey);
    if (holder !== undefined) {
      throw new KindError(
        'AlreadyExists',
        `failed to reserve name "${nameKey}": name "${nameKey}" is reserved for "${holder}"`,
        {
          ...context,
          holder,
        },
      );
    }
  }

  private checkStartable(c: ContainerRecord): void {
    if (c.state !== 'created' || c.starting) {
      const state = c.starting ? 'starting' : `CONTAINER_${c.state.toUpperCase()}`;
      throw new KindError(
        'InvalidArgument',
        `failed to set starting state for container "${c.id}": container is in ${state} state`,
        {
          containerId: c.id,
        },
      );
    }
    if (this.store.sandboxes.get(c.sandboxId)?.state !== 'ready') {
      throw new KindError('InvalidArgument', `sandbox container "${c.sandboxId}" is not running`, {
        containerId: c.id,
        sandboxId: c.sandboxId,
      });
    }
  }

  private naturalExit(c: ContainerRecord): void {
    const b = c.behaviour;
    this.exit(c, b.exitCode, b.oomKilled ? 'OOMKilled' : reasonFor(b.exitCode));
  }

  private exit(c: ContainerRecord, code: number, reason: string): void {
    if (c.state !== 'running') return;
    c.state = 'exited';
    c.finishedAt = this.nowNs();
    c.finishedMs = this.clock.now();
    c.exitCode = code;
    c.reason = reason;
    c.exitTimer?.cancel();
    c.killTimer?.cancel();
    c.exitTimer = c.killTimer = undefined;
    c.killAt = Infinity;
    this.release(c);
  }

  /** Kills (if running) and forgets a container. */
  private dropContainer(c: ContainerRecord): void {
    this.exit(c, 137, 'Error');
    c.exitTimer?.cancel();
    this.release(c);
    this.store.deleteContainer(c);
  }

  private waitForExit(c: ContainerRecord): Promise<void> {
    return new Promise((resolve, reject) =>
      (c.waiters ??= []).push((err) => (err ? reject(err) : resolve())),
    );
  }

  private release(c: ContainerRecord, err?: Error): void {
    const waiters = c.waiters;
    if (!waiters) return;
    c.waiters = undefined;
    for (const w of waiters) w(err);
  }

  /** Waits on the clock; close() cancels it with Unavailable. */
  private delay(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = {
        handle: this.clock.setTimer(ms, () => {
          this.delays.delete(entry);
          resolve();
        }),
        reject,
      };
      this.delays.add(entry);
    });
  }

  /** Nanoseconds since the epoch, strictly increasing across the runtime so that records order by time. */
  private nowNs(): bigint {
    let ns = BigInt(Math.floor(this.clock.now())) * 1_000_000n;
    if (ns <= this.lastNs) ns = this.lastNs + 1n;
    this.lastNs = ns;
    return ns;
  }

  private newId(kind: string): string {
    return createHash('sha256').update(`${this.idSeed}/${kind}/${this.seq++}`).digest('hex');
  }
}

function reasonFor(code: number): string {
  return code === 0 ? 'Completed' : 'Error';
}

function toPodSandbox(s: SandboxRecord): PodSandbox {
  return {
    id: s.id,
    metadata: { ...s.metadata },
    state: s.state,
    createdAt: s.createdAt,
    labels: { ...s.labels },
    annotations: { ...s.annotations },
  };
}

function toContainer(c: ContainerRecord): Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: { ...c.metadata },
    image: c.image,
    imageRef: c.imageId,
    state: c.state,
    createdAt: c.createdAt,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
  };
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros. */
function rfc3339Nano(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${new Date(ms).toISOString().slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

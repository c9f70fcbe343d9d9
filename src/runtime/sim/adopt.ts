/**
 * Adoption (RuntimeAdopter, runtime/types.ts): the simulated runtime keeps its containers in the process, so
 * a new process (an operator restart, or a VirtualNode moving to another replica) starts empty. The kubelet
 * then hands it back what the pods' API statuses recorded, and this rebuilds each record exactly as
 * RunPodSandbox, CreateContainer and StartContainer (and the exit) would have left it: same container IDs,
 * start and finish times, exit codes and reasons, the sandbox's IP reserved in the IPAM. Nothing is pulled
 * (a missing image is made present at once), no latency is waited out, no profile error is injected: the
 * containers were created and started once already.
 *
 * The IDs adopted are remembered, so the runtime never hands one out again (IDs are derived from a seed and a
 * counter that starts over in every process: runtime.ts asks `taken`).
 */
import { KindError } from '../../util/errors.js';
import type {
  AdoptedContainer,
  AdoptedSandbox,
  ContainerConfig,
  PodSandboxConfig,
  RuntimeAdopter,
} from '../types.js';
import type { BehaviourResolver } from './behaviour.js';
import * as errs from './errors.js';
import { parseImageReference, type ImageStore } from './images.js';
import type { IdKind } from './ids.js';
import type { IPAllocator } from './ipam.js';
import { containerKey, sandboxNameKey } from './names.js';
import { fileViewOf, processView, type NodeFiles } from './podview.js';
import { reasonFor, type Processes } from './process.js';
import type { RecordMaker } from './records.js';
import type { SimStore } from './store.js';

/** What adoption shares with the runtime that owns the records. */
export interface AdoptionDeps {
  store: SimStore;
  records: RecordMaker;
  images: ImageStore;
  ipam: IPAllocator;
  nodeIP: string;
  behaviours: BehaviourResolver;
  processes: Processes;
  files: NodeFiles | undefined;
  /** A fresh sandbox or container ID (runtime.ts, ids.ts). */
  newId(kind: IdKind): string;
  /** Once closed, adoption fails Unavailable (faults do not apply: adoption is no CRI call). */
  isClosed(): boolean;
}

const invalid = (message: string, context: Record<string, unknown>): KindError =>
  new KindError('InvalidArgument', `adopt: ${message}`, context);

/** A clock reading usable as a time the record had: a finite, non-negative number of ms. */
function isTime(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0;
}

export class SimAdopter implements RuntimeAdopter {
  /** Every container ID adopted in this process (removed records included: their IDs stay used). */
  private readonly adopted = new Set<string>();

  constructor(private readonly d: AdoptionDeps) {}

  /** Whether `id` was adopted: the runtime must not make it again. */
  taken(id: string): boolean {
    return this.adopted.has(id);
  }

  private checkOpen(op: string): void {
    if (this.d.isClosed()) throw errs.closedError(op);
  }

  adoptSandbox(config: PodSandboxConfig, fixed: AdoptedSandbox): string {
    this.checkOpen('adoptSandbox');
    const md = config?.metadata;
    if (!md || !md.name || !md.namespace || !md.uid) {
      throw invalid('sandbox config must include metadata with name, namespace and uid', {});
    }
    const context = { pod: `${md.namespace}/${md.name}`, podUID: md.uid };
    if (!isTime(fixed?.createdAtMs)) throw invalid(`bad createdAtMs ${String(fixed?.createdAtMs)}`, context);
    const nameKey = sandboxNameKey({ ...md, attempt: md.attempt ?? 0 });
    const holder = this.d.store.reservedBy(nameKey);
    if (holder !== undefined) throw errs.nameReserved(nameKey, holder, context);
    const id = this.d.newId('sandbox');
    const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? 'POD';
    let ip: number | string = this.d.nodeIP;
    if (networkMode !== 'NODE') {
      if (typeof fixed.ip !== 'string' || fixed.ip === '') {
        throw invalid('a pod-network sandbox needs the IP it had', context);
      }
      ip = this.d.ipam.reserve(fixed.ip, id);
    }
    const createdAt = BigInt(Math.floor(fixed.createdAtMs)) * 1_000_000n;
    try {
      this.d.store.addSandbox(this.d.records.sandbox(config, { id, ip, createdAt }));
    } catch (err) {
      if (typeof ip === 'number') this.d.ipam.releaseAddress(ip);
      throw err;
    }
    return id;
  }

  adoptContainer(
    sandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    fixed: AdoptedContainer,
  ): string {
    this.checkOpen('adoptContainer');
    const name = config?.metadata?.name;
    if (!name) throw invalid('container config must include metadata with a name', { sandboxId });
    const id = fixed?.id;
    const context = { sandboxId, container: name, containerId: id };
    if (!sandboxConfig?.metadata) throw invalid('the sandbox config is needed', context);
    if (typeof id !== 'string' || !/^[A-Za-z0-9._-]+$/.test(id)) {
      throw invalid(`bad container ID ${JSON.stringify(id)}`, context);
    }
    checkTimes(fixed, context);
    const { store } = this.d;
    if (store.getContainer(id) || store.getSandbox(id) || this.adopted.has(id)) {
      throw new KindError('AlreadyExists', `adopt: container ID "${id}" is already in use`, context);
    }
    const sandbox = store.getSandbox(sandboxId);
    if (!sandbox) throw errs.sandboxIdNotFound(sandboxId, context);
    if (sandbox.state !== 'ready') throw errs.sandboxNotRunning(sandboxId, context);
    const ref = parseImageReference(config.image ?? '');
    if (!ref) throw invalid(`bad image reference ${JSON.stringify(config.image)}`, context);
    // The image was there when the container was created; it is again, without a pull.
    if (!this.d.images.get(ref.ref)) this.d.images.add(ref);
    const image = this.d.images.get(ref.ref)!;
    const nameKey = containerKey(name, config.metadata.attempt ?? 0, sandbox);
    const holder = store.reservedBy(nameKey);
    if (holder !== undefined) throw errs.nameReserved(nameKey, holder, context);
    const user = this.d.behaviours.processUser(config, ref);
    const behaviour = this.d.behaviours.forContainer(
      config,
      ref,
      fileViewOf(config.mounts ?? [], sandbox.hostname, this.d.files, processView(user, sandbox)),
    );
    const { processes } = this.d;
    const c = this.d.records.container(config, sandbox, image, {
      id,
      behaviour,
      createdAt: processes.nowNs(),
      user,
    });
    store.addContainer(c);
    this.adopted.add(id);
    if (fixed.state === 'running') {
      processes.adopt(c, fixed.startedAtMs);
    } else {
      const code = fixed.exitCode ?? 0;
      processes.adoptExited(c, fixed.startedAtMs, {
        ms: fixed.finishedAtMs ?? 0,
        code,
        reason: fixed.reason ?? reasonFor(code),
        message: fixed.message ?? '',
      });
    }
    return id;
  }
}

/** A running instance has started; an exited one may never have (a failed start), and has an exit code. */
function checkTimes(fixed: AdoptedContainer, context: Record<string, unknown>): void {
  if (fixed.state !== 'running' && fixed.state !== 'exited') {
    throw invalid(`bad state ${JSON.stringify(fixed.state)}`, context);
  }
  if (!isTime(fixed.startedAtMs) || (fixed.state === 'running' && fixed.startedAtMs === 0)) {
    throw invalid(`bad startedAtMs ${String(fixed.startedAtMs)}`, context);
  }
  if (fixed.state === 'running') return;
  if (fixed.finishedAtMs !== undefined && !isTime(fixed.finishedAtMs)) {
    throw invalid(`bad finishedAtMs ${String(fixed.finishedAtMs)}`, context);
  }
  if (fixed.exitCode !== undefined && !Number.isInteger(fixed.exitCode)) {
    throw invalid(`bad exitCode ${String(fixed.exitCode)}`, context);
  }
}

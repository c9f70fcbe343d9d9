/**
 * The simulated runtime's records and their indexes. Invariants:
 * - every container's sandbox exists and lists it (`SandboxRecord.containers`);
 * - `byPodUID` holds exactly the records whose labels carry `io.kubernetes.pod.uid`;
 * - a reserved name maps to the ID holding it, and is freed when that record is removed.
 * Lookups by ID, by sandbox and by pod UID touch only the matching records; only an unfiltered list (or a
 * filter on other labels alone) walks everything. `visited` counts records examined, so tests can check
 * that per-call work does not grow with the number of containers.
 */
import { PodUIDLabel } from '../labels.js';
import type {
  ContainerFilter,
  ContainerMetadata,
  ContainerState,
  LinuxContainerResources,
  Mount,
  NamespaceMode,
  PodSandboxMetadata,
  SandboxFilter,
  SandboxState,
} from '../types.js';
import type { TimerHandle } from '../../util/clock.js';
import type { Behaviour } from './behaviour.js';

export interface SandboxRecord {
  readonly id: string;
  readonly metadata: PodSandboxMetadata;
  state: SandboxState;
  readonly createdAt: bigint;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly networkMode: NamespaceMode;
  /** Pod IP (pod network, from the allocator) or the node IP (host network). */
  readonly ip: string;
  readonly podNetwork: boolean;
  readonly logDirectory: string;
  /** The sandbox's hostname ('' for a host-network sandbox: the node's). */
  readonly hostname: string;
  readonly nameKey: string;
  readonly containers: Set<string>;
}

export interface ContainerRecord {
  readonly id: string;
  readonly sandboxId: string;
  readonly metadata: ContainerMetadata;
  /** The image as the config named it, and the image ID. */
  readonly image: string;
  readonly imageId: string;
  /** What ContainerStatus reports, as containerd does: the repo tag and the repo digest. */
  readonly statusImage: string;
  readonly statusImageRef: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly logPath: string;
  readonly env: Readonly<Record<string, string>>;
  /** As created; the simulated `cat` reads mounted files through them. */
  readonly mounts: readonly Mount[];
  readonly behaviour: Behaviour;
  /** The resources applied now (as created, then as resized); undefined when created without any. */
  resources: LinuxContainerResources | undefined;
  /** A resize the runtime is still applying: it takes effect at `atMs` (clock time). */
  pendingResize: { resources: LinuxContainerResources; atMs: number } | undefined;
  readonly nameKey: string;
  readonly createdAt: bigint;
  state: ContainerState;
  starting: boolean;
  startedAt: bigint;
  /** clock.now() at start, for behaviour windows measured from the start. */
  startedMs: number;
  finishedAt: bigint;
  finishedMs: number;
  exitCode: number;
  reason: string;
  message: string;
  /** The natural exit of the main process. */
  exitTimer: TimerHandle | undefined;
  /** The SIGKILL of a pending stop, and when it fires. */
  killTimer: TimerHandle | undefined;
  killAt: number;
  /** Called once when the container exits or is removed (stop and exec wait on it). */
  waiters: ((err?: Error) => void)[] | undefined;
}

export class SimStore {
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly containers = new Map<string, ContainerRecord>();
  private readonly sandboxesByPodUID = new Map<string, Set<string>>();
  private readonly containersByPodUID = new Map<string, Set<string>>();
  private readonly names = new Map<string, string>();
  /** Records examined by lookups and lists since construction. */
  visited = 0;

  reservedBy(nameKey: string): string | undefined {
    return this.names.get(nameKey);
  }

  getSandbox(id: string): SandboxRecord | undefined {
    this.visited++;
    return this.sandboxes.get(id);
  }

  getContainer(id: string): ContainerRecord | undefined {
    this.visited++;
    return this.containers.get(id);
  }

  addSandbox(s: SandboxRecord): void {
    this.sandboxes.set(s.id, s);
    this.names.set(s.nameKey, s.id);
    addTo(this.sandboxesByPodUID, s.labels[PodUIDLabel], s.id);
  }

  deleteSandbox(s: SandboxRecord): void {
    this.sandboxes.delete(s.id);
    if (this.names.get(s.nameKey) === s.id) this.names.delete(s.nameKey);
    removeFrom(this.sandboxesByPodUID, s.labels[PodUIDLabel], s.id);
  }

  addContainer(c: ContainerRecord, sandbox: SandboxRecord): void {
    this.containers.set(c.id, c);
    this.names.set(c.nameKey, c.id);
    sandbox.containers.add(c.id);
    addTo(this.containersByPodUID, c.labels[PodUIDLabel], c.id);
  }

  deleteContainer(c: ContainerRecord): void {
    this.containers.delete(c.id);
    if (this.names.get(c.nameKey) === c.id) this.names.delete(c.nameKey);
    this.sandboxes.get(c.sandboxId)?.containers.delete(c.id);
    removeFrom(this.containersByPodUID, c.labels[PodUIDLabel], c.id);
  }

  listSandboxes(f: SandboxFilter = {}): SandboxRecord[] {
    const uid = f.labelSelector?.[PodUIDLabel];
    const ids: Iterable<string> | undefined =
      f.id !== undefined ? [f.id] : uid !== undefined ? (this.sandboxesByPodUID.get(uid) ?? []) : undefined;
    const out: SandboxRecord[] = [];
    for (const s of ids === undefined ? this.sandboxes.values() : lookup(this.sandboxes, ids)) {
      this.visited++;
      if (f.state !== undefined && s.state !== f.state) continue;
      if (f.labelSelector && !matches(s.labels, f.labelSelector)) continue;
      out.push(s);
    }
    return out;
  }

  listContainers(f: ContainerFilter = {}): ContainerRecord[] {
    const uid = f.labelSelector?.[PodUIDLabel];
    let ids: Iterable<string> | undefined;
    if (f.id !== undefined) ids = [f.id];
    else if (f.podSandboxId !== undefined) ids = this.sandboxes.get(f.podSandboxId)?.containers ?? [];
    else if (uid !== undefined) ids = this.containersByPodUID.get(uid) ?? [];
    const out: ContainerRecord[] = [];
    for (const c of ids === undefined ? this.containers.values() : lookup(this.containers, ids)) {
      this.visited++;
      if (f.podSandboxId !== undefined && c.sandboxId !== f.podSandboxId) continue;
      if (f.state !== undefined && c.state !== f.state) continue;
      if (f.labelSelector && !matches(c.labels, f.labelSelector)) continue;
      out.push(c);
    }
    return out;
  }
}

function* lookup<T>(map: ReadonlyMap<string, T>, ids: Iterable<string>): Iterable<T> {
  for (const id of ids) {
    const v = map.get(id);
    if (v !== undefined) yield v;
  }
}

function matches(labels: Record<string, string>, selector: Record<string, string>): boolean {
  for (const k of Object.keys(selector))
    if (!Object.hasOwn(labels, k) || labels[k] !== selector[k]) return false;
  return true;
}

function addTo(index: Map<string, Set<string>>, key: string | undefined, id: string): void {
  if (key === undefined) return;
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(id);
}

function removeFrom(index: Map<string, Set<string>>, key: string | undefined, id: string): void {
  if (key === undefined) return;
  const set = index.get(key);
  if (!set) return;
  set.delete(id);
  if (set.size === 0) index.delete(key);
}

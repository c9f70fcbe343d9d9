/**
 * What the simulated runtime keeps of a sandbox or a container: the records store.ts indexes, and how they
 * are made from a config (the runtime has already validated it, reserved the name and chosen the ID, IP and
 * behaviour). A record keeps what cannot be worked out again and nothing derived from it: a container's
 * spec (spec.ts) is shared with its pod's other replicas, sandbox annotations likewise, the log path is
 * joined when asked for, and timestamps are clock readings (process.ts) turned into nanoseconds on demand.
 * Records copy what they keep, so a caller changing its config afterwards changes nothing here.
 */
import { posix } from 'node:path';
import type { TimerHandle } from '../../util/clock.js';
import type {
  ContainerConfig,
  ContainerState,
  Image,
  LinuxContainerResources,
  NamespaceMode,
  PodSandboxConfig,
  PodSandboxMetadata,
  SandboxState,
  UserNamespace,
} from '../types.js';
import type { Behaviour } from './behaviour.js';
import type { Few } from './few.js';
import { SharedValues } from '../../util/sharedvalues.js';
import { CompactCopies, flatString, plainKey } from './intern.js';
import { formatIPv4 } from '../../util/ipv4.js';
import type { ProcessUser } from './identity.js';
import { ContainerSpecs, type ContainerSpec, type HostPaths } from './spec.js';

export interface SandboxRecord {
  readonly id: string;
  /** Its metadata (PodSandboxMetadata), field by field. */
  readonly name: string;
  readonly uid: string;
  readonly namespace: string;
  readonly attempt: number;
  state: SandboxState;
  readonly createdAt: bigint;
  readonly labels: Readonly<Record<string, string>>;
  /** Shared with other sandboxes that have the same (intern.ts). */
  readonly annotations: Readonly<Record<string, string>>;
  readonly networkMode: NamespaceMode;
  /** The pod IP as its 32-bit number (pod network, from the allocator), or the node IP (host network). */
  readonly ip: number | string;
  /**
   * The log directory as configured (logDirectoryOf): whole, or when it is the kubelet's
   * `<root>/<namespace>_<name>_<uid>` for this sandbox's metadata, `<root>/` alone (one string for all such
   * sandboxes), `logDirOfPod` then set.
   */
  readonly logRoot: string;
  readonly logDirOfPod: boolean;
  /** The sandbox's hostname ('' for a host-network sandbox: the node's). */
  readonly hostname: string;
  /** The pod's own user namespace (mode POD, with its mappings); undefined: the host's. */
  readonly userns: Readonly<UserNamespace> | undefined;
  /** Its containers, oldest first (few.ts); store.ts keeps this. */
  containers: Few<ContainerRecord>;
}

/** How a container's main process ended: a clock reading and its stamp (process.ts), code and reason. */
export interface ExitRecord {
  readonly ms: number;
  readonly offNs: number;
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

export interface ContainerRecord {
  readonly id: string;
  /** Its sandbox, which outlives it in the store (a sandbox's containers are removed before it). */
  readonly sandbox: SandboxRecord;
  /** Shared with the pod's other replicas (spec.ts). */
  readonly spec: ContainerSpec;
  /** The host path of each of `spec.mounts` (spec.ts). */
  readonly hostPaths: HostPaths;
  readonly labels: Readonly<Record<string, string>>;
  readonly behaviour: Behaviour;
  /** The resources applied now (as created, then as resized: resize.ts); undefined when created without any. */
  resources: Readonly<LinuxContainerResources> | undefined;
  readonly createdAt: bigint;
  state: ContainerState;
  /** clock.now() at start (0 before), and its stamp: StartedAt is `nanos(startedMs, startedOffNs)`. */
  startedMs: number;
  startedOffNs: number;
  /** Set once, when it exits. */
  exit: ExitRecord | undefined;
  /** The natural exit of the main process (or the next look at its memory). A stop's SIGKILL and the waits
   * for the exit are kept by process.ts, a pending resize by resize.ts: few containers have one. */
  exitTimer: TimerHandle | undefined;
}

/** Distinct sandbox annotation sets kept for sharing, and label key lists kept as templates. */
const ANNOTATIONS_LIMIT = 512;
const LABEL_SHAPES_LIMIT = 256;
/** Distinct pod log roots kept for sharing (a node has one). */
const LOG_ROOTS_LIMIT = 16;

/** Makes records, sharing what replicas have in common. One per runtime. */
export class RecordMaker {
  readonly specs = new ContainerSpecs();
  private readonly annotations = new SharedValues<Readonly<Record<string, string>>>(ANNOTATIONS_LIMIT);
  private readonly labels = new CompactCopies(LABEL_SHAPES_LIMIT);
  private readonly logRoots = new SharedValues<string>(LOG_ROOTS_LIMIT);

  /** A ready sandbox for `config` (whose metadata the runtime checked). */
  sandbox(
    config: PodSandboxConfig,
    fixed: { id: string; ip: number | string; createdAt: bigint },
  ): SandboxRecord {
    const md = config.metadata;
    const { logRoot, logDirOfPod } = this.logDirectory(config.logDirectory ?? '', md);
    return {
      id: fixed.id,
      name: md.name,
      uid: md.uid,
      namespace: md.namespace,
      attempt: md.attempt ?? 0,
      state: 'ready',
      createdAt: fixed.createdAt,
      labels: this.labels.copy(config.labels),
      annotations: this.annotations.get(plainKey(config.annotations ?? {}), () =>
        Object.freeze({ ...config.annotations }),
      ),
      networkMode: config.linux?.securityContext?.namespaceOptions?.network ?? 'POD',
      ip: fixed.ip,
      logRoot,
      logDirOfPod,
      hostname: config.hostname ?? '',
      userns: ownUserNamespace(config),
      containers: undefined,
    };
  }

  /** How a sandbox keeps `dir` (see SandboxRecord.logRoot). */
  private logDirectory(dir: string, md: PodSandboxMetadata): { logRoot: string; logDirOfPod: boolean } {
    if (typeof dir !== 'string') return { logRoot: dir, logDirOfPod: false };
    const own = `/${md.namespace}_${md.name}_${md.uid}`;
    if (dir.length <= own.length || !dir.endsWith(own))
      return { logRoot: flatString(dir), logDirOfPod: false };
    const root = dir.slice(0, dir.length - own.length + 1);
    return { logRoot: this.logRoots.get(root, () => flatString(root)), logDirOfPod: true };
  }

  /** A created, never started container in `sandbox` running `image`. */
  container(
    config: ContainerConfig,
    sandbox: SandboxRecord,
    image: Image,
    fixed: { id: string; behaviour: Behaviour; createdAt: bigint; user: ProcessUser },
  ): ContainerRecord {
    const { spec, hostPaths } = this.specs.of(config, image, fixed.user);
    const c: ContainerRecord = {
      id: fixed.id,
      sandbox,
      spec,
      hostPaths,
      labels: this.labels.copy(config.labels),
      behaviour: fixed.behaviour,
      resources: spec.resources,
      createdAt: fixed.createdAt,
      state: 'created',
      startedMs: 0,
      startedOffNs: 0,
      exit: undefined,
      exitTimer: undefined,
    };
    // A log path that cannot be joined fails the create, not a later status.
    if (typeof sandbox.logRoot !== 'string' || typeof spec.logPath !== 'string') logPathOf(c);
    return c;
  }
}

/** A copy of the sandbox's user namespace when it is one of the pod's own (mode POD). */
function ownUserNamespace(config: PodSandboxConfig): Readonly<UserNamespace> | undefined {
  const u = config.linux?.securityContext?.namespaceOptions?.userNamespace;
  if (u?.mode !== 'POD') return undefined;
  const copy = (list: UserNamespace['uids']) =>
    Object.freeze((list ?? []).map((m) => Object.freeze({ ...m })));
  return Object.freeze({ mode: 'POD' as const, uids: copy(u.uids), gids: copy(u.gids) });
}

/** Nanoseconds since the epoch of clock reading `ms` stamped `offNs` (process.ts). */
export function nanos(ms: number, offNs: number): bigint {
  return BigInt(Math.floor(ms)) * 1_000_000n + BigInt(offNs);
}

/** 0n until started. */
export function startedAt(c: ContainerRecord): bigint {
  return nanos(c.startedMs, c.startedOffNs);
}

/** 0n until exited. */
export function finishedAt(c: ContainerRecord): bigint {
  return c.exit ? nanos(c.exit.ms, c.exit.offNs) : 0n;
}

/** clock.now() at the exit; 0 until exited. */
export function finishedMs(c: ContainerRecord): number {
  return c.exit?.ms ?? 0;
}

/** The sandbox's log directory joined with the config's log path; '' when either is empty. */
export function logPathOf(c: ContainerRecord): string {
  const dir = logDirectoryOf(c.sandbox);
  const rel = c.spec.logPath;
  return dir && rel ? posix.join(dir, rel) : '';
}

/** The sandbox's log directory as configured. */
export function logDirectoryOf(s: SandboxRecord): string {
  return s.logDirOfPod ? `${s.logRoot}${s.namespace}_${s.name}_${s.uid}` : s.logRoot;
}

/** The sandbox's IP, dotted. */
export function ipOf(s: SandboxRecord): string {
  return typeof s.ip === 'number' ? formatIPv4(s.ip) : s.ip;
}

/** A fresh copy of the sandbox's metadata. */
export function sandboxMetadata(s: SandboxRecord): PodSandboxMetadata {
  return { name: s.name, uid: s.uid, namespace: s.namespace, attempt: s.attempt };
}

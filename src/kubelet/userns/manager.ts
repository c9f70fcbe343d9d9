/**
 * Pods' user namespaces (kubelet: pkg/kubelet/userns/userns_manager.go, UserNamespacesSupport, GA in v1.36).
 *
 * A pod with `hostUsers: false` gets a user namespace of its own: container IDs 0..65535 map to a range of
 * 65536 host IDs that no other pod of the node has. The decision comes first and is pure
 * (`userNamespaceRequest`): without `hostUsers: false` the pod uses the host's (NODE); with it, the runtime
 * handler must report user namespace support (CRI runtime_handlers[].features.user_namespaces), else the sandbox
 * is refused with the kubelet's words, which the pod shows as a FailedCreatePodSandBox Event. containerd 1.6
 * reports no handlers at all: every such pod is refused there, as a kubelet on it refuses them.
 *
 * Allocation is the kubelet's with its default configuration (no `kubelet` entry in /etc/subuid): ranges start
 * at 65536 and every multiple of it up to 2^32, one picked at random among the free ones. A pod keeps its range
 * for as long as its pod directory exists: the range is written to `<pod dir>/userns` in the kubelet's JSON
 * and read back from there (a restarted operator on the same disk keeps every pod's mapping). A range whose pod
 * directory is gone (housekeeping removed it) is free again; the manager looks when it allocates.
 */
import type { Pod } from '../../api/core.js';
import type { RuntimeHandler, UserNamespace } from '../../runtime/types.js';
import { errorMessage, KindError } from '../../util/errors.js';
import type { VolumeFS } from '../volume/fs.js';
import { joinPath } from '../volume/paths.js';
import { podDir } from '../volume/podpaths.js';

/** kubelet DefaultKubeletUserNamespacesIDsPerPod: the IDs of one pod's namespace. */
export const UserNsLength = 65536;
/** The kubelet's file in the pod directory. */
export const MappingsFile = 'userns';
/** The first range starts at one length (ID 0 is never mapped), the last ends at 2^32. */
const FIRST_SLOT = 1;
const SLOTS = 2 ** 32 / UserNsLength - FIRST_SLOT;

/** What a pod's user namespace must be, before anything is allocated. */
export type UserNamespaceRequest = { mode: 'NODE' } | { mode: 'POD' } | { mode: 'refused'; message: string };

/**
 * kubelet GetOrCreateUserNamespaceMappings up to the allocation, for the runtime handler `handler` ("" the
 * default; every pod uses it, RuntimeClass handlers are not looked up) among those the runtime reported.
 */
export function userNamespaceRequest(
  pod: Pick<Pod, 'spec'>,
  handlers: readonly RuntimeHandler[],
  handler = '',
): UserNamespaceRequest {
  if (pod.spec.hostUsers !== false) return { mode: 'NODE' };
  // kubelet HandlerSupportsUserNamespaces: no handlers reported means an old runtime without support.
  let supported = false;
  let unknown = false;
  if (handlers.length > 0) {
    const h = handlers.find((x) => x.name === handler);
    if (h) supported = h.userNamespaces;
    else unknown = true;
  }
  if (supported) return { mode: 'POD' };
  let message =
    handler === ''
      ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
      : `can't set \`spec.hostUsers: false\`, RuntimeClass handler ${JSON.stringify(handler)} does not support user namespaces`;
  if (unknown) message += `: the handler ${JSON.stringify(handler)} is not known`;
  return { mode: 'refused', message };
}

/** The user namespace of a pod whose range starts at host ID `hostId`. */
export function podUserNamespace(hostId: number): UserNamespace {
  const mapping = [{ hostId, containerId: 0, length: UserNsLength }];
  return { mode: 'POD', uids: mapping, gids: [{ ...mapping[0]! }] };
}

/** The kubelet's file: `{"uidMappings":[...],"gidMappings":[...]}`. */
export function mappingsFileContent(hostId: number): string {
  const m = [{ hostId, containerId: 0, length: UserNsLength }];
  return JSON.stringify({ uidMappings: m, gidMappings: m });
}

/**
 * The range a mappings file names, checked as the kubelet checks it (parseUserNsFileAndRecord); throws with
 * its message for a file it would not accept.
 */
export function parseMappingsFile(content: string): number {
  let parsed: { uidMappings?: unknown; gidMappings?: unknown };
  try {
    parsed = JSON.parse(content) as typeof parsed;
  } catch (err) {
    throw new KindError('InvalidArgument', `invalid user namespace mappings file: ${errorMessage(err)}`);
  }
  const uids = Array.isArray(parsed?.uidMappings) ? (parsed.uidMappings as Record<string, unknown>[]) : [];
  const gids = Array.isArray(parsed?.gidMappings) ? (parsed.gidMappings as Record<string, unknown>[]) : [];
  const bad = (why: string) =>
    new KindError('InvalidArgument', `invalid user namespace configuration: ${why}`);
  if (uids.length !== 1) throw bad('no more than one mapping allowed.');
  if (gids.length !== 1) throw bad('GID and UID mappings should be identical.');
  const [u, g] = [uids[0]!, gids[0]!];
  if (u.hostId !== g.hostId || u.containerId !== g.containerId || u.length !== g.length)
    throw bad('GID and UID mapping should be identical');
  if (u.containerId !== 0) throw bad('UID 0 must be mapped');
  const hostId = u.hostId;
  if (typeof hostId !== 'number' || u.length !== UserNsLength)
    throw bad(`wrong user namespace length ${String(u.length)}`);
  const slot = hostId / UserNsLength - FIRST_SLOT;
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOTS) throw bad(`id ${hostId} is out of range`);
  return hostId;
}

export interface UsernsManagerDeps {
  fs: VolumeFS;
  podsDir: string;
  /** [0, 1): where the search for a free range starts (the kubelet's random scan). */
  random: () => number;
}

export class UsernsManager {
  /** Host ID of each pod's range. */
  private readonly byPod = new Map<string, number>();
  private readonly used = new Set<number>();
  private loaded: Promise<void> | undefined;

  constructor(private readonly d: UsernsManagerDeps) {}

  /**
   * The pod's user namespace (kubelet GetOrCreateUserNamespaceMappings): the host's unless `hostUsers: false`;
   * then the range it has (in memory or in its pod directory), or a new one. Rejects with the kubelet's message
   * when the runtime handler cannot run it, or when no range is free.
   */
  async getOrCreate(pod: Pod, handlers: readonly RuntimeHandler[]): Promise<UserNamespace> {
    const request = userNamespaceRequest(pod, handlers);
    if (request.mode === 'NODE') return { mode: 'NODE' };
    if (request.mode === 'refused') throw new KindError('Unimplemented', request.message);
    const uid = pod.metadata.uid ?? '';
    await (this.loaded ??= this.load());
    const known = this.byPod.get(uid);
    if (known !== undefined) return podUserNamespace(known);
    const file = joinPath(podDir(this.d.podsDir, uid), MappingsFile);
    const content = await this.read(file);
    if (content !== undefined) {
      let hostId: number;
      try {
        hostId = parseMappingsFile(content);
      } catch (err) {
        throw new KindError('InvalidArgument', `user namespace: ${errorMessage(err)}`);
      }
      this.record(uid, hostId);
      return podUserNamespace(hostId);
    }
    const hostId = await this.allocate(uid);
    try {
      await this.d.fs.mkdir(podDir(this.d.podsDir, uid), 0o750);
      await this.d.fs.writeFile(file, Buffer.from(mappingsFileContent(hostId)), 0o644);
    } catch (err) {
      this.release(uid);
      throw new KindError('Unavailable', `create user namespace: ${errorMessage(err)}`);
    }
    return podUserNamespace(hostId);
  }

  /** Pods holding a range now (for tests and health). */
  get allocated(): number {
    return this.byPod.size;
  }

  /** Records the ranges of the pod directories on disk (the kubelet does it when it starts). */
  private async load(): Promise<void> {
    let uids: string[];
    try {
      uids = await this.d.fs.readdir(this.d.podsDir);
    } catch {
      return;
    }
    for (const uid of uids) {
      const content = await this.read(joinPath(podDir(this.d.podsDir, uid), MappingsFile));
      if (content === undefined) continue;
      try {
        this.record(uid, parseMappingsFile(content));
      } catch {
        // A file the kubelet would refuse: that pod is refused when it asks, its range stays unknown.
      }
    }
  }

  private async read(file: string): Promise<string | undefined> {
    try {
      return (await this.d.fs.readFile(file)).toString('utf8');
    } catch {
      return undefined;
    }
  }

  private record(uid: string, hostId: number): void {
    if (this.used.has(hostId) && this.byPod.get(uid) !== hostId) {
      throw new KindError('AlreadyExists', `user namespace: range picked for pod "${uid}" already taken`);
    }
    this.byPod.set(uid, hostId);
    this.used.add(hostId);
  }

  private release(uid: string): void {
    const hostId = this.byPod.get(uid);
    if (hostId === undefined) return;
    this.byPod.delete(uid);
    this.used.delete(hostId);
  }

  /** A free range for `uid`, after freeing those whose pod directory is gone; scanned from a random slot. */
  private async allocate(uid: string): Promise<number> {
    for (const [other] of [...this.byPod]) {
      if (!(await this.d.fs.lstat(podDir(this.d.podsDir, other)))) this.release(other);
    }
    const start = Math.floor(this.d.random() * SLOTS) % SLOTS;
    for (let i = 0; i < SLOTS; i++) {
      const hostId = (((start + i) % SLOTS) + FIRST_SLOT) * UserNsLength;
      if (this.used.has(hostId)) continue;
      this.record(uid, hostId);
      return hostId;
    }
    throw new KindError(
      'Unavailable',
      'create user namespace: could not find an empty slot to allocate a user namespace',
    );
  }
}

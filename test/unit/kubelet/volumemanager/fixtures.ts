/**
 * In-memory fakes for the volume manager's seams: VolumeSources over maps, a Mounter that counts its calls and
 * can refuse, a MemoryVolumeFS with injectable failures and special files, a token source, an event recorder.
 */
import type { Container, Pod } from '../../../../src/api/core.js';
import type {
  PersistentVolume,
  PersistentVolumeClaim,
  ServiceAccountTokenProjection,
  Volume,
} from '../../../../src/api/volumes.js';
import type { EntryStat } from '../../../../src/kubelet/volume/fs.js';
import { VolumeFSError } from '../../../../src/kubelet/volume/fs.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import { MemoryMounter } from '../../../../src/kubelet/volume/shell/mounter.js';
import type { PluginContext } from '../../../../src/kubelet/volume/plugin.js';
import type { ConfigMapObject, SecretObject, VolumeSources } from '../../../../src/kubelet/volume/sources.js';
import {
  VolumeManager,
  type VolumeManagerDeps,
} from '../../../../src/kubelet/volumemanager/volumemanager.js';
import { FakeClock } from '../../../../src/util/clock.js';

export const PODS = '/var/lib/kubelet/pods';
export const UID = 'uid-1';
export const NS = 'prod';

export const dirs = {
  emptyDir: (name: string, uid = UID) => `${PODS}/${uid}/volumes/kubernetes.io~empty-dir/${name}`,
  emptyDirMeta: (name: string, uid = UID) => `${PODS}/${uid}/plugins/kubernetes.io~empty-dir/${name}`,
  configMap: (name: string, uid = UID) => `${PODS}/${uid}/volumes/kubernetes.io~configmap/${name}`,
  secret: (name: string, uid = UID) => `${PODS}/${uid}/volumes/kubernetes.io~secret/${name}`,
  downwardAPI: (name: string, uid = UID) => `${PODS}/${uid}/volumes/kubernetes.io~downward-api/${name}`,
  projected: (name: string, uid = UID) => `${PODS}/${uid}/volumes/kubernetes.io~projected/${name}`,
};

/** base64 of a UTF-8 string, as the API sends Secret values and ConfigMap binaryData. */
export const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** VolumeSources over maps keyed `<namespace>/<name>` (PVs by name); `fail` makes a key reject. */
export class FakeSources implements VolumeSources {
  readonly configMaps = new Map<string, ConfigMapObject>();
  readonly secrets = new Map<string, SecretObject>();
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly volumes = new Map<string, PersistentVolume>();
  /** `configmaps/<ns>/<name>`, `secrets/...`, `persistentvolumeclaims/...`, `persistentvolumes/<name>` -> error. */
  readonly failures = new Map<string, Error>();
  readonly calls: string[] = [];

  private lookup<T>(kind: string, key: string, map: Map<string, T>): Promise<T | undefined> {
    this.calls.push(`${kind}/${key}`);
    const err = this.failures.get(`${kind}/${key}`);
    if (err) return Promise.reject(err);
    const v = map.get(key);
    return Promise.resolve(v === undefined ? undefined : structuredClone(v));
  }

  getConfigMap(namespace: string, name: string): Promise<ConfigMapObject | undefined> {
    return this.lookup('configmaps', `${namespace}/${name}`, this.configMaps);
  }
  getSecret(namespace: string, name: string): Promise<SecretObject | undefined> {
    return this.lookup('secrets', `${namespace}/${name}`, this.secrets);
  }
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    return this.lookup('persistentvolumeclaims', `${namespace}/${name}`, this.claims);
  }
  getPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    return this.lookup('persistentvolumes', name, this.volumes);
  }
}

/** MemoryMounter that records its calls and can refuse mounts (no CAP_SYS_ADMIN). */
export class RecordingMounter extends MemoryMounter {
  readonly mountCalls: { dir: string; sizeBytes: number | undefined }[] = [];
  readonly unmountCalls: string[] = [];
  refuse: Error | undefined;

  override async mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
    this.mountCalls.push({ dir, sizeBytes });
    if (this.refuse) throw this.refuse;
    return super.mountTmpfs(dir, sizeBytes);
  }

  override async unmount(dir: string): Promise<void> {
    this.unmountCalls.push(dir);
    return super.unmount(dir);
  }
}

/**
 * MemoryVolumeFS with special files (sockets, devices: `stat` reports them as `other`) and injectable `rm`
 * failures, for what the in-memory tree cannot create itself.
 */
export class TestFS extends MemoryVolumeFS {
  readonly specials = new Map<string, EntryStat['special']>();
  readonly failRm = new Set<string>();

  override async stat(path: string): Promise<EntryStat | undefined> {
    const special = this.specials.get(path);
    if (special) return { kind: 'other', special, mode: 0o660, uid: 0, gid: 0, size: 0 };
    return super.stat(path);
  }

  override async rm(path: string): Promise<void> {
    if (this.failRm.has(path)) throw new VolumeFSError('EBUSY', 'rm', path);
    return super.rm(path);
  }
}

export interface RecordedEvent {
  pod: string;
  type: string;
  reason: string;
  message: string;
}

export interface TokenCall {
  pod: string;
  projection: ServiceAccountTokenProjection;
}

export interface Harness {
  fs: TestFS;
  mounter: RecordingMounter;
  sources: FakeSources;
  clock: FakeClock;
  events: RecordedEvent[];
  warnings: { msg: string; meta?: Record<string, unknown> }[];
  tokenCalls: TokenCall[];
  /** What the token source answers (an Error rejects). */
  token: { value: string | Error };
  deps: VolumeManagerDeps;
  vm: VolumeManager;
  /** A second VolumeManager over the same fs, mounter and sources: the operator after a restart. */
  restart(): VolumeManager;
}

export function harness(
  opts: { allocatable?: Record<string, string | number>; tmpfsAllowed?: boolean; umask?: number } = {},
): Harness {
  const fs = new TestFS({ umask: opts.umask ?? 0o022 });
  const mounter = new RecordingMounter();
  const sources = new FakeSources();
  const clock = new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5));
  const events: RecordedEvent[] = [];
  const warnings: Harness['warnings'] = [];
  const tokenCalls: TokenCall[] = [];
  const token: Harness['token'] = { value: 'jwt-token' };
  const allocatable = opts.allocatable ?? { cpu: '4', memory: '8Gi' };
  const deps: VolumeManagerDeps = {
    podsDir: PODS,
    fs,
    mounter,
    clock,
    sources,
    tokens: async (p, projection) => {
      tokenCalls.push({ pod: p.metadata.name ?? '', projection });
      if (token.value instanceof Error) throw token.value;
      return token.value;
    },
    nodeAllocatable: () => allocatable,
    logger: { info: () => undefined, warn: (msg, meta) => warnings.push({ msg, ...(meta ? { meta } : {}) }) },
    tmpfs: { allowed: opts.tmpfsAllowed ?? true, refusedLogged: false },
    record: (p, type, reason, message) => events.push({ pod: p.metadata.name ?? '', type, reason, message }),
  };
  return {
    fs,
    mounter,
    sources,
    clock,
    events,
    warnings,
    tokenCalls,
    token,
    deps,
    vm: new VolumeManager(deps),
    restart: () => new VolumeManager({ ...deps, tmpfs: { allowed: true, refusedLogged: false } }),
  };
}

/** The plugin context of a harness (for calling one plugin directly). */
export function ctxOf(h: Harness): PluginContext {
  return h.deps;
}

/**
 * A pod whose one container `app` mounts every volume given (at /mnt/<name>), unless `mounts` names the
 * mounted ones.
 */
export function podWith(
  volumes: Volume[],
  over: {
    name?: string;
    uid?: string;
    mounts?: string[];
    fsGroup?: number;
    runAsUser?: number;
    containers?: Container[];
    labels?: Record<string, string>;
  } = {},
): Pod {
  const mounted = over.mounts ?? volumes.map((v) => v.name);
  const app: Container = {
    name: 'app',
    image: 'busybox',
    volumeMounts: mounted.map((name) => ({ name, mountPath: `/mnt/${name}` })),
  };
  const sc = {
    ...(over.fsGroup !== undefined ? { fsGroup: over.fsGroup } : {}),
    ...(over.runAsUser !== undefined ? { runAsUser: over.runAsUser } : {}),
  };
  return {
    metadata: {
      name: over.name ?? 'web-0',
      namespace: NS,
      uid: over.uid ?? UID,
      ...(over.labels ? { labels: over.labels } : {}),
    },
    spec: {
      serviceAccountName: 'builder',
      containers: over.containers ?? [app],
      volumes,
      ...(Object.keys(sc).length > 0 ? { securityContext: sc } : {}),
    },
  };
}

/** The text of a file (following symlinks). */
export async function text(fs: MemoryVolumeFS, path: string): Promise<string> {
  return (await fs.readFile(path)).toString('utf8');
}

/** Permission bits (with setgid/sticky) of what `path` leads to. */
export async function modeOf(fs: MemoryVolumeFS, path: string): Promise<number | undefined> {
  return (await fs.stat(path))?.mode;
}

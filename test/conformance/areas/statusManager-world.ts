/**
 * The world a statusManager case runs in: its pods, a fake API server, a fake pod manager and the real
 * StatusManager on a fake clock.
 *
 * Pod grammar (given.pod, given.mirrorPod, entries of given.apiServer):
 *   {uid?, name?, namespace?, fixture?, initContainers?, containers?, ephemeralContainers?, restartPolicy?,
 *    source?, deletionRequested?, status? | apiStatus?}
 * Identity defaults to the upstream test pod (uid 12345678, foo in namespace new). Containers are names or
 * {name, restartPolicy?, ...fixture flags}. `source` sets the config-source annotation (file = static pod).
 * `status`/`apiStatus` is the status the pod object carries (what the kubelet's copy says).
 *
 * The pod manager holds given.pod (or exactly the UIDs listed in given.podManager) and, once added, the
 * mirror pod. It sees each pod's status as the API server currently stores it when the server has a pod
 * with that UID (an informer in steady state); otherwise the pod's own status. given.mirrorPod exists on
 * the API server from the start, since a mirror pod is an API object.
 */
import type { Container, Pod, PodSpec } from '../../../src/api/core.js';
import { asPodUID, type PodUID } from '../../../src/kubelet/container/types.js';
import type { StatusPodManager } from '../../../src/kubelet/status/interfaces.js';
import { StatusManager } from '../../../src/kubelet/status/manager.js';
import {
  ApiserverSource,
  ConfigMirrorAnnotationKey,
  ConfigSourceAnnotationKey,
  isMirrorPod,
  isStaticPod,
} from '../../../src/kubelet/types/podupdate.js';
import { FakeClock } from '../../../src/util/clock.js';
import type { CaseFile } from '../types.js';
import { Uninterpretable } from '../types.js';
import { FakeApiServer } from './statusManager-apiserver.js';
import {
  checkKeys,
  isObj,
  ORIGIN_MS,
  parseStatus,
  show,
  START_MS,
  type SpecNames,
} from './statusManager-tokens.js';

export const DEFAULT_IDENTITY = { uid: '12345678', name: 'foo', namespace: 'new' };

const POD_KEYS = [
  'uid',
  'name',
  'namespace',
  'fixture',
  'initContainers',
  'containers',
  'ephemeralContainers',
  'restartPolicy',
  'source',
  'deletionRequested',
  'status',
  'apiStatus',
];

function parseContainers(v: unknown, where: string): Container[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Uninterpretable(`${where}: not a list`);
  return v.map((c, i) => {
    if (typeof c === 'string' || typeof c === 'number') return { name: String(c) };
    if (isObj(c) && typeof c.name === 'string') {
      const out: Container = { name: c.name };
      if (c.restartPolicy === 'Always') out.restartPolicy = 'Always';
      else if (c.restartPolicy !== undefined && c.restartPolicy !== null) {
        throw new Uninterpretable(`${where}[${i}]: container restartPolicy ${show(c.restartPolicy)}`);
      }
      return out;
    }
    throw new Uninterpretable(`${where}[${i}]: cannot read container ${show(c)}`);
  });
}

export function specNames(spec: PodSpec): SpecNames {
  return {
    initContainers: (spec.initContainers ?? []).map((c) => c.name),
    containers: spec.containers.map((c) => c.name),
    ephemeralContainers: (spec.ephemeralContainers ?? []).map((c) => c.name),
  };
}

/** A pod from the pod grammar (see the module comment). `base` supplies defaults (identity, spec). */
export function buildPod(v: unknown, file: CaseFile, now: number, where: string, base?: Pod): Pod {
  if (!isObj(v)) throw new Uninterpretable(`${where}: not an object`);
  checkKeys(v, POD_KEYS, where);
  let fixture: Record<string, unknown> = {};
  if (v.fixture !== undefined) {
    const f = typeof v.fixture === 'string' ? file.fixtures.pods[v.fixture] : undefined;
    if (!f) throw new Uninterpretable(`${where}: unknown fixture ${show(v.fixture)}`);
    fixture = f;
  }
  const pick = (k: string) => (v[k] !== undefined ? v[k] : fixture[k]);
  const hasSpec = ['initContainers', 'containers', 'ephemeralContainers', 'restartPolicy'].some(
    (k) => pick(k) !== undefined,
  );
  const spec: PodSpec =
    !hasSpec && base
      ? structuredClone(base.spec)
      : {
          initContainers: parseContainers(pick('initContainers'), `${where}.initContainers`),
          containers: parseContainers(pick('containers'), `${where}.containers`),
          ephemeralContainers: parseContainers(pick('ephemeralContainers'), `${where}.ephemeralContainers`),
        };
  const rp = v.restartPolicy;
  if (rp === 'Always' || rp === 'OnFailure' || rp === 'Never') spec.restartPolicy = rp;
  else if (rp !== undefined && rp !== null) throw new Uninterpretable(`${where}: restartPolicy ${show(rp)}`);

  const str = (k: 'uid' | 'name' | 'namespace') => {
    const x = v[k];
    if (x === undefined) return base?.metadata[k] ?? DEFAULT_IDENTITY[k];
    if (typeof x !== 'string' && typeof x !== 'number')
      throw new Uninterpretable(`${where}.${k}: ${show(x)}`);
    return String(x);
  };
  const pod: Pod = { metadata: { uid: str('uid'), name: str('name'), namespace: str('namespace') }, spec };
  if (v.source !== undefined) {
    if (typeof v.source !== 'string') throw new Uninterpretable(`${where}.source: ${show(v.source)}`);
    pod.metadata.annotations = { [ConfigSourceAnnotationKey]: v.source };
  }
  if (v.deletionRequested === true) pod.metadata.deletionTimestamp = new Date(ORIGIN_MS).toISOString();
  else if (v.deletionRequested !== undefined && v.deletionRequested !== false) {
    throw new Uninterpretable(`${where}.deletionRequested: ${show(v.deletionRequested)}`);
  }
  if (v.status !== undefined && v.apiStatus !== undefined)
    throw new Uninterpretable(`${where}: status and apiStatus`);
  const status = v.status ?? v.apiStatus;
  pod.status = parseStatus(
    status,
    specNames(spec),
    now,
    `${where}.${v.status !== undefined ? 'status' : 'apiStatus'}`,
  );
  return pod;
}

/** Marks a pod as the mirror of a static pod of the same name. */
export function asMirror(pod: Pod): Pod {
  const out = structuredClone(pod);
  out.metadata.annotations = {
    ...(out.metadata.annotations ?? {}),
    [ConfigSourceAnnotationKey]: ApiserverSource,
    [ConfigMirrorAnnotationKey]: 'mirror',
  };
  return out;
}

const fullName = (p: Pod) => `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;

/** A pod manager like the kubelet's basic one, whose pods show the API server's current status. */
export class FakePodManager implements StatusPodManager {
  private readonly pods = new Map<string, Pod>();
  private readonly mirrors = new Map<string, Pod>();

  constructor(private readonly server: FakeApiServer) {}

  add(pod: Pod): void {
    (isMirrorPod(pod) ? this.mirrors : this.pods).set(pod.metadata.uid ?? '', structuredClone(pod));
  }

  remove(uid: string): void {
    this.pods.delete(uid);
    this.mirrors.delete(uid);
  }

  mirrorUIDs(): string[] {
    return [...this.mirrors.keys()];
  }

  private view(pod: Pod): Pod {
    const onServer = this.server.byUID(pod.metadata.uid ?? '');
    const out = structuredClone(pod);
    if (onServer) out.status = onServer.status ?? {};
    return out;
  }

  private staticOf(mirror: Pod): Pod | undefined {
    return [...this.pods.values()].find((p) => fullName(p) === fullName(mirror));
  }

  getPodByUID(uid: PodUID): Pod | undefined {
    const p = this.pods.get(uid);
    return p ? this.view(p) : undefined;
  }

  getMirrorPodByPod(pod: Pod): Pod | undefined {
    const m = [...this.mirrors.values()].find((x) => fullName(x) === fullName(pod));
    return m ? this.view(m) : undefined;
  }

  translatePodUID(uid: string): PodUID {
    const m = this.mirrors.get(uid);
    const s = m ? this.staticOf(m) : undefined;
    return asPodUID(s?.metadata.uid ?? uid);
  }

  getUIDTranslations() {
    const podToMirror = new Map<string, string>();
    const mirrorToPod = new Map<string, string>();
    for (const p of this.pods.values()) if (isStaticPod(p)) podToMirror.set(p.metadata.uid ?? '', '');
    for (const m of this.mirrors.values()) {
      const s = this.staticOf(m);
      if (!s) continue;
      podToMirror.set(s.metadata.uid ?? '', m.metadata.uid ?? '');
      mirrorToPod.set(m.metadata.uid ?? '', s.metadata.uid ?? '');
    }
    return { podToMirror, mirrorToPod };
  }
}

/** Everything a scenario touches. */
export class World {
  readonly clock = new FakeClock(START_MS);
  readonly now = START_MS;
  readonly server = new FakeApiServer();
  readonly podManager = new FakePodManager(this.server);
  couldHaveRunningContainers = false;
  readonly manager = new StatusManager({
    client: this.server,
    podManager: this.podManager,
    podDeletionSafety: { podCouldHaveRunningContainers: () => this.couldHaveRunningContainers },
    clock: this.clock,
  });
  /** Pods the case knows by UID (given.pod, apiServer entries, mirror pods, pods created by ops). */
  readonly known = new Map<string, Pod>();
  main: Pod | undefined;
  mirror: Pod | undefined;

  remember(pod: Pod): void {
    this.known.set(pod.metadata.uid ?? '', pod);
  }
}

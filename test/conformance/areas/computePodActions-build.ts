/**
 * Builds the inputs of computePodActions (pod, runtime view, probe caches) from a case's `given`, as the
 * schema at the top of kubelet-cases.yaml describes them. Anything outside the schema is Uninterpretable.
 */
import type { Container, EphemeralContainer, Pod, Probe } from '../../../src/api/core.js';
import { hashContainer } from '../../../src/kubelet/container/helpers.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type KubeContainerStatus,
  type RuntimePodStatus,
  type SandboxStatus,
} from '../../../src/kubelet/container/types.js';
import type { ProbeResult, ProbeResultsReader } from '../../../src/kubelet/prober/types.js';
import { Uninterpretable, type CaseFile, type FixtureContainer } from '../types.js';
import { POD_ORIGIN_KEYS } from './case-keys.js';

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Throws Uninterpretable when `obj` has a key outside `allowed`. */
export function onlyKeys(obj: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw new Uninterpretable(`${where}: unknown key '${k}'`);
  }
}

function asRecord(v: unknown, where: string): Record<string, unknown> {
  if (!isRecord(v)) throw new Uninterpretable(`${where}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
}

function asList(v: unknown, where: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Uninterpretable(`${where}: expected a list, got ${JSON.stringify(v)}`);
  return v;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], where: string): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new Uninterpretable(`${where}: unknown value ${JSON.stringify(v)} (known: ${allowed.join(', ')})`);
  }
  return v as T;
}

function optBool(v: unknown, where: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean')
    throw new Uninterpretable(`${where}: expected a boolean, got ${JSON.stringify(v)}`);
  return v;
}

function int(v: unknown, where: string, dflt?: number): number {
  if ((v === undefined || v === null) && dflt !== undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new Uninterpretable(`${where}: expected an integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

// Any handler will do: the algorithms only ask whether a probe is configured.
const aProbe = (): Probe => ({ exec: { command: ['probe'] } });

function toContainer(entry: string | FixtureContainer | unknown, where: string): Container {
  if (typeof entry === 'string') return { name: entry };
  const c = asRecord(entry, where);
  onlyKeys(c, ['name', 'image', 'restartPolicy', 'livenessProbe', 'startupProbe', 'readinessProbe'], where);
  if (typeof c.name !== 'string') throw new Uninterpretable(`${where}: container without a name`);
  const out: Container = { name: c.name };
  if (c.image !== undefined) {
    if (typeof c.image !== 'string') throw new Uninterpretable(`${where}.image: expected a string`);
    out.image = c.image;
  }
  if (c.restartPolicy !== undefined && c.restartPolicy !== null) {
    out.restartPolicy = oneOf(c.restartPolicy, ['Always'] as const, `${where}.restartPolicy`);
  }
  if (optBool(c.livenessProbe, `${where}.livenessProbe`)) out.livenessProbe = aProbe();
  if (optBool(c.startupProbe, `${where}.startupProbe`)) out.startupProbe = aProbe();
  if (optBool(c.readinessProbe, `${where}.readinessProbe`)) out.readinessProbe = aProbe();
  return out;
}

const podKeys = [...POD_ORIGIN_KEYS, 'initContainers', 'containers', 'ephemeralContainers'];

/** given.pod -> a Pod. `change` is descriptive only (its effect is `specChanged` on the runtime record). */
export function buildPod(given: unknown, file: CaseFile): Pod {
  const g = asRecord(given, 'given.pod');
  onlyKeys(g, podKeys, 'given.pod');
  let base: Record<string, unknown> = {};
  if (g.fixture !== undefined) {
    if (typeof g.fixture !== 'string' || !Object.hasOwn(file.fixtures.pods, g.fixture)) {
      throw new Uninterpretable(`given.pod.fixture: unknown fixture ${JSON.stringify(g.fixture)}`);
    }
    base = asRecord(file.fixtures.pods[g.fixture], `fixtures.pods.${g.fixture}`);
    onlyKeys(
      base,
      ['initContainers', 'containers', 'ephemeralContainers', 'restartPolicy', 'hostNetwork'],
      `fixtures.pods.${g.fixture}`,
    );
  }
  const list = (field: 'initContainers' | 'containers' | 'ephemeralContainers'): Container[] => {
    if (g[field] !== undefined && g.fixture !== undefined) {
      throw new Uninterpretable(`given.pod: both a fixture and an inline ${field}`);
    }
    const src = g[field] ?? base[field];
    return asList(src, `pod.${field}`).map((e, i) => toContainer(e, `pod.${field}[${i}]`));
  };
  const ephemeral: EphemeralContainer[] = list('ephemeralContainers');
  if (g.addEphemeral !== undefined) {
    const names = Array.isArray(g.addEphemeral) ? g.addEphemeral : [g.addEphemeral];
    names.forEach((n, i) => ephemeral.push(toContainer(n, `given.pod.addEphemeral[${i}]`)));
  }
  const pod: Pod = {
    metadata: { name: 'pod', namespace: 'default', uid: '12345678' },
    spec: { containers: list('containers') },
  };
  const inits = list('initContainers');
  if (inits.length) pod.spec.initContainers = inits;
  if (ephemeral.length) pod.spec.ephemeralContainers = ephemeral;
  // The case's own settings override the fixture's.
  const restartPolicy = Object.hasOwn(g, 'restartPolicy') ? g.restartPolicy : base.restartPolicy;
  if (restartPolicy !== undefined && restartPolicy !== null) {
    pod.spec.restartPolicy = oneOf(restartPolicy, ['Always', 'OnFailure', 'Never'] as const, 'restartPolicy');
  }
  const hostNetwork = Object.hasOwn(g, 'hostNetwork') ? g.hostNetwork : base.hostNetwork;
  if (optBool(hostNetwork, 'given.pod.hostNetwork')) pod.spec.hostNetwork = true;
  if (optBool(g.deletionRequested, 'given.pod.deletionRequested')) {
    pod.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  }
  return pod;
}

function allSpecContainers(pod: Pod): Container[] {
  return [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ];
}

/** given.runtime -> the runtime view. Hashes match the spec unless the record says `specChanged: true`. */
export function buildRuntime(given: unknown, pod: Pod): RuntimePodStatus {
  const g = given === undefined ? {} : asRecord(given, 'given.runtime');
  onlyKeys(g, ['sandboxes', 'containers'], 'given.runtime');
  const sandboxes: SandboxStatus[] = asList(g.sandboxes, 'runtime.sandboxes').map((e, i) => {
    const where = `runtime.sandboxes[${i}]`;
    const s = asRecord(e, where);
    onlyKeys(s, ['id', 'state', 'attempt', 'ip', 'netns'], where);
    if (typeof s.id !== 'string') throw new Uninterpretable(`${where}.id: expected a string`);
    if (s.ip !== null && s.ip !== undefined && typeof s.ip !== 'string') {
      throw new Uninterpretable(`${where}.ip: expected a string or null`);
    }
    return {
      id: asSandboxID(s.id),
      state: oneOf(s.state, ['ready', 'notready'] as const, `${where}.state`),
      attempt: int(s.attempt, `${where}.attempt`, 0),
      // The schema says null = no network status; an omitted ip is read the same way.
      ip: typeof s.ip === 'string' ? s.ip : null,
      netns: s.netns === undefined ? 'pod' : oneOf(s.netns, ['pod', 'node'] as const, `${where}.netns`),
    };
  });
  const byName = new Map(allSpecContainers(pod).map((c) => [c.name, c]));
  const containers: KubeContainerStatus[] = asList(g.containers, 'runtime.containers').map((e, i) => {
    const where = `runtime.containers[${i}]`;
    const c = asRecord(e, where);
    onlyKeys(c, ['name', 'id', 'state', 'exitCode', 'reason', 'specChanged', 'restartCount'], where);
    if (typeof c.name !== 'string' || typeof c.id !== 'string') {
      throw new Uninterpretable(`${where}: name and id must be strings`);
    }
    const spec = byName.get(c.name) ?? { name: c.name };
    const hash = optBool(c.specChanged, `${where}.specChanged`)
      ? hashContainer({ name: spec.name, image: `${spec.image ?? ''}#previous-definition` })
      : hashContainer(spec);
    const record: KubeContainerStatus = {
      id: asContainerID(c.id),
      name: c.name,
      state: oneOf(c.state, ['running', 'exited', 'created', 'unknown'] as const, `${where}.state`),
      exitCode: int(c.exitCode, `${where}.exitCode`, 0),
      restartCount: int(c.restartCount, `${where}.restartCount`, 0),
      hash,
    };
    if (c.reason !== undefined && c.reason !== null) {
      if (typeof c.reason !== 'string') throw new Uninterpretable(`${where}.reason: expected a string`);
      record.reason = c.reason;
    }
    return record;
  });
  return {
    uid: asPodUID(pod.metadata.uid ?? ''),
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    sandboxes,
    containers,
    ips: sandboxes[0]?.ip ? [sandboxes[0].ip] : [],
  };
}

/** given.probeResults -> one reader per probe type. Absent = the probe has produced no result. */
export function buildProbeResults(
  given: unknown,
): Record<'liveness' | 'startup' | 'readiness', ProbeResultsReader> {
  const g = given === undefined || given === null ? {} : asRecord(given, 'given.probeResults');
  const maps = { liveness: new Map<string, ProbeResult>(), startup: new Map(), readiness: new Map() };
  for (const [id, v] of Object.entries(g)) {
    const where = `probeResults.${id}`;
    const r = asRecord(v, where);
    onlyKeys(r, ['liveness', 'startup', 'readiness'], where);
    for (const type of ['liveness', 'startup', 'readiness'] as const) {
      if (r[type] === undefined || r[type] === null) continue;
      maps[type].set(id, oneOf(r[type], ['success', 'failure', 'unknown'] as const, `${where}.${type}`));
    }
  }
  const reader = (m: Map<string, ProbeResult>): ProbeResultsReader => ({ get: (id) => m.get(id) });
  return {
    liveness: reader(maps.liveness),
    startup: reader(maps.startup),
    readiness: reader(maps.readiness),
  };
}

/**
 * Interpreter for `manager.UpdatePodStatus` cases.
 *
 * given:
 * - `initContainers`: {name: regular|restartable} or [{name, restartable?}]; `containers`: [name] or
 *   {name: regular}.
 * - `workers`: {containerName: [probeType]}: those workers exist (started through `startWorker`, which is
 *   how the kubelet's tests place workers, even on containers AddPod would not probe). They never probe:
 *   the clock does not move.
 * - `results`: {probeType: {containerName: success|failure|unknown}}, cached under the container's ID.
 * - `initContainerStatuses` / `containerStatuses`: {name: running|waiting|terminated|terminated(<exit>)};
 *   each status gets the ID `test://<name>`, ready=false and no `started`, as freshly generated.
 * expect: `started` / `ready`: {containerName: bool}, read from the statuses after UpdatePodStatus.
 */
import type { Container, ContainerStatus, Pod, PodStatus, Probe } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { ProberManager } from '../../../src/kubelet/prober/manager.js';
import { ResultsManager } from '../../../src/kubelet/prober/results.js';
import type { ProbeResult, ProbeType } from '../../../src/kubelet/prober/types.js';
import { FakeClock } from '../../../src/util/clock.js';
import { fail, pass, Uninterpretable, type ConformanceCase, type Verdict } from '../types.js';
import { firstDifference, show } from '../compare.js';
import { isObj, readBool, readList, readObj, readString, readToken } from './prober-read.js';

const PROBE_TYPES = ['liveness', 'readiness', 'startup'] as const;
const PROBE_RESULTS = ['success', 'failure', 'unknown'] as const;
const POD_UID = 'prober-manager-test-pod';

const idOf = (name: string) => `test://${name}`;

function readInitContainers(v: unknown): Container[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) {
    return v.map((item, i) => {
      const o = readObj(item, `given.initContainers[${i}]`, ['name', 'restartable']);
      const name = readString(o.name, `given.initContainers[${i}].name`);
      return readBool(o.restartable, `given.initContainers[${i}].restartable`, false)
        ? { name, restartPolicy: 'Always' as const }
        : { name };
    });
  }
  return Object.entries(readObj(v, 'given.initContainers')).map(([name, kind]) =>
    readToken(kind, ['regular', 'restartable'] as const, `given.initContainers.${name}`) === 'restartable'
      ? { name, restartPolicy: 'Always' as const }
      : { name },
  );
}

function readContainers(v: unknown): Container[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v.map((n, i) => ({ name: readString(n, `given.containers[${i}]`) }));
  return Object.entries(readObj(v, 'given.containers')).map(([name, kind]) => {
    readToken(kind, ['regular'] as const, `given.containers.${name}`);
    return { name };
  });
}

/** running | waiting | terminated | terminated(<int>) */
function readStatusToken(name: string, v: unknown, what: string): ContainerStatus {
  const token = readString(v, what);
  const base: ContainerStatus = { name, containerID: idOf(name), ready: false, restartCount: 0 };
  if (token === 'running') return { ...base, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } };
  if (token === 'waiting') return { ...base, state: { waiting: { reason: 'ContainerCreating' } } };
  const m = /^terminated(?:\((-?\d+)\))?$/.exec(token);
  if (m) return { ...base, state: { terminated: { exitCode: m[1] === undefined ? 0 : Number(m[1]) } } };
  throw new Uninterpretable(`${what}: unknown status token ${show(token)}`);
}

function readStatuses(v: unknown, what: string, known: ReadonlySet<string>): ContainerStatus[] {
  if (v === undefined) return [];
  return Object.entries(readObj(v, what)).map(([name, token]) => {
    if (!known.has(name)) throw new Uninterpretable(`${what}: ${name} is not a container of the pod`);
    return readStatusToken(name, token, `${what}.${name}`);
  });
}

function readBoolMap(v: unknown, what: string): Record<string, boolean> {
  if (v === undefined) return {};
  return Object.fromEntries(
    Object.entries(readObj(v, what)).map(([name, b]) => [name, readBool(b, `${what}.${name}`)]),
  );
}

export function interpretUpdatePodStatus(c: ConformanceCase): Verdict {
  const g = readObj(c.given, 'given', [
    'function',
    'initContainers',
    'containers',
    'workers',
    'results',
    'initContainerStatuses',
    'containerStatuses',
  ]);
  const ex = readObj(c.expect, 'expect', ['started', 'ready']);
  const initContainers = readInitContainers(g.initContainers);
  const containers = readContainers(g.containers);
  const all = new Map([...initContainers, ...containers].map((ct) => [ct.name, ct]));
  if (all.size === 0) throw new Uninterpretable('given: the pod has no containers');

  const workers: [string, ProbeType][] = [];
  if (g.workers !== undefined) {
    for (const [name, types] of Object.entries(readObj(g.workers, 'given.workers'))) {
      const ct = all.get(name);
      if (!ct) throw new Uninterpretable(`given.workers: ${name} is not a container of the pod`);
      for (const [i, t] of readList(types, `given.workers.${name}`).entries()) {
        const type = readToken(t, PROBE_TYPES, `given.workers.${name}[${i}]`);
        const probe: Probe = { exec: { command: ['true'] }, periodSeconds: 10 };
        Object.assign(ct, { [`${type}Probe`]: probe });
        workers.push([name, type]);
      }
    }
  }

  const results = {
    liveness: new ResultsManager('liveness'),
    readiness: new ResultsManager('readiness'),
    startup: new ResultsManager('startup'),
  };
  if (g.results !== undefined) {
    for (const [type, perName] of Object.entries(readObj(g.results, 'given.results'))) {
      const t = readToken(type, PROBE_TYPES, 'given.results');
      for (const [name, r] of Object.entries(readObj(perName, `given.results.${type}`))) {
        if (!all.has(name)) throw new Uninterpretable(`given.results.${type}: ${name} is not a container`);
        const result: ProbeResult = readToken(r, PROBE_RESULTS, `given.results.${type}.${name}`);
        results[t].set(idOf(name), result, asPodUID(POD_UID));
      }
    }
  }

  const pod: Pod = {
    metadata: { uid: POD_UID, name: 'test-pod', namespace: 'default' },
    spec: { initContainers, containers },
  };
  const initNames = new Set(initContainers.map((x) => x.name));
  const regularNames = new Set(containers.map((x) => x.name));
  const status: PodStatus = {
    phase: 'Running',
    initContainerStatuses: readStatuses(g.initContainerStatuses, 'given.initContainerStatuses', initNames),
    containerStatuses: readStatuses(g.containerStatuses, 'given.containerStatuses', regularNames),
  };

  const clock = new FakeClock();
  const manager = new ProberManager({
    clock,
    random: () => 0.5,
    getPodStatus: () => undefined,
    runner: () => Promise.reject(new Error('no probe runs in UpdatePodStatus cases')),
    results,
  });
  try {
    for (const [name, type] of workers) {
      if (!manager.startWorker(pod, all.get(name)!, type)) {
        throw new Uninterpretable(`given.workers: duplicate ${type} worker for ${name}`);
      }
    }
    manager.updatePodStatus(pod, status);
  } finally {
    manager.removePod(pod);
    for (const [name, type] of workers) manager.getWorker(POD_UID, name, type)?.stop();
  }

  const statuses = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  for (const field of ['started', 'ready'] as const) {
    const expected = readBoolMap(ex[field], `expect.${field}`);
    const actual: Record<string, unknown> = {};
    for (const name of Object.keys(expected)) {
      const s = statuses.find((x) => x.name === name);
      if (!s) throw new Uninterpretable(`expect.${field}: ${name} has no status in the case`);
      actual[name] = s[field];
    }
    const d = firstDifference(actual, expected);
    if (d) return fail(`${field}: ${d}`);
  }
  if (!isObj(ex.started) && !isObj(ex.ready))
    throw new Uninterpretable('expect: neither started nor ready given');
  return pass;
}

/**
 * backoff cases with `lastSyncResult`: the StartContainer results of the last SyncPod go through the
 * reason cache, and the generated API status must show the failure as the container's waiting reason.
 *
 *   given:  pod {name?, namespace?, uid?, restartPolicy?, containers: [names]},
 *           runtime {containers: [{name, id?, state, exitCode?, reason?, restartCount?}]},
 *           lastSyncResult: [{action, target, error?, message?}]
 *   expect: containerStatus (asserted fields only; `lastTerminationState` is the API's lastState; the state
 *           kinds present must match exactly, and an omitted lastTerminationState means none), phase?
 */
import type { ContainerState, ContainerStatus as APIContainerStatus, Pod } from '../../../src/api/core.js';
import { hashContainer } from '../../../src/kubelet/container/helpers.js';
import {
  asContainerID,
  asPodUID,
  type KubeContainerStatus,
  type RuntimePodStatus,
} from '../../../src/kubelet/container/types.js';
import { ReasonCache, type ContainerSyncResult } from '../../../src/kubelet/reasoncache.js';
import { generateAPIPodStatus } from '../../../src/kubelet/status/apistatus.js';
import { all, expectEqual, expectSubset } from '../compare.js';
import { Uninterpretable, type ConformanceCase, type Verdict } from '../types.js';
import { isRecord, onlyKeys } from './computePodActions-build.js';

const states = ['running', 'exited', 'created', 'unknown'] as const;

function buildPod(v: unknown): Pod {
  if (!isRecord(v)) throw new Uninterpretable('given.pod: expected a mapping');
  onlyKeys(v, ['name', 'namespace', 'uid', 'restartPolicy', 'containers'], 'given.pod');
  if (!Array.isArray(v.containers) || v.containers.some((n) => typeof n !== 'string')) {
    throw new Uninterpretable('given.pod.containers: expected a list of names');
  }
  for (const k of ['name', 'namespace', 'uid'] as const) {
    if (v[k] !== undefined && typeof v[k] !== 'string')
      throw new Uninterpretable(`given.pod.${k}: expected a string`);
  }
  const pod: Pod = {
    metadata: {
      name: (v.name as string | undefined) ?? 'p',
      namespace: (v.namespace as string | undefined) ?? 'ns',
      uid: (v.uid as string | undefined) ?? 'uid',
    },
    spec: { containers: (v.containers as string[]).map((name) => ({ name, image: 'img' })) },
  };
  if (v.restartPolicy !== undefined && v.restartPolicy !== null) {
    if (!['Always', 'OnFailure', 'Never'].includes(v.restartPolicy as string)) {
      throw new Uninterpretable(`given.pod.restartPolicy: ${JSON.stringify(v.restartPolicy)}`);
    }
    pod.spec.restartPolicy = v.restartPolicy as 'Always';
  }
  return pod;
}

function buildRuntime(v: unknown, pod: Pod): RuntimePodStatus {
  const g = v === undefined ? {} : v;
  if (!isRecord(g)) throw new Uninterpretable('given.runtime: expected a mapping');
  onlyKeys(g, ['containers'], 'given.runtime');
  const list = g.containers ?? [];
  if (!Array.isArray(list)) throw new Uninterpretable('given.runtime.containers: expected a list');
  const containers: KubeContainerStatus[] = list.map((e, i) => {
    const where = `runtime.containers[${i}]`;
    if (!isRecord(e)) throw new Uninterpretable(`${where}: expected a mapping`);
    onlyKeys(e, ['name', 'id', 'state', 'exitCode', 'reason', 'restartCount'], where);
    if (typeof e.name !== 'string') throw new Uninterpretable(`${where}.name: expected a string`);
    if (!(states as readonly unknown[]).includes(e.state))
      throw new Uninterpretable(`${where}.state: ${JSON.stringify(e.state)}`);
    for (const k of ['exitCode', 'restartCount'] as const) {
      if (e[k] !== undefined && !Number.isInteger(e[k]))
        throw new Uninterpretable(`${where}.${k}: expected an integer`);
    }
    const rec: KubeContainerStatus = {
      id: asContainerID(typeof e.id === 'string' ? e.id : `${e.name}-${i}`),
      name: e.name,
      state: e.state as KubeContainerStatus['state'],
      exitCode: (e.exitCode as number | undefined) ?? 0,
      restartCount: (e.restartCount as number | undefined) ?? 0,
      hash: hashContainer(pod.spec.containers.find((c) => c.name === e.name) ?? { name: e.name }),
    };
    if (typeof e.reason === 'string') rec.reason = e.reason;
    return rec;
  });
  return {
    uid: asPodUID(pod.metadata.uid ?? ''),
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    sandboxes: [],
    containers,
    ips: [],
  };
}

function buildResults(v: unknown): ContainerSyncResult[] {
  if (!Array.isArray(v)) throw new Uninterpretable('given.lastSyncResult: expected a list');
  return v.map((r, i) => {
    const where = `lastSyncResult[${i}]`;
    if (!isRecord(r)) throw new Uninterpretable(`${where}: expected a mapping`);
    onlyKeys(r, ['action', 'target', 'error', 'message'], where);
    if (typeof r.action !== 'string' || typeof r.target !== 'string') {
      throw new Uninterpretable(`${where}: action and target must be strings`);
    }
    if (r.error !== undefined && r.error !== null && typeof r.error !== 'string') {
      throw new Uninterpretable(`${where}.error: expected a string or null`);
    }
    if (r.message !== undefined && typeof r.message !== 'string')
      throw new Uninterpretable(`${where}.message: expected a string`);
    return {
      action: r.action,
      target: r.target,
      error: r.error as string | null | undefined,
      message: r.message as string | undefined,
    };
  });
}

const stateKinds = (s: ContainerState | undefined) =>
  (['waiting', 'running', 'terminated'] as const).filter((k) => s?.[k] !== undefined && s?.[k] !== null);

function compareStatus(actual: APIContainerStatus | undefined, expected: Record<string, unknown>): Verdict {
  if (!actual) return { pass: false, reason: `no container status for ${JSON.stringify(expected.name)}` };
  onlyKeys(
    expected,
    ['name', 'state', 'lastTerminationState', 'restartCount', 'ready', 'started', 'image', 'containerID'],
    'expect.containerStatus',
  );
  const { lastTerminationState, ...rest } = expected;
  const want: Record<string, unknown> = { ...rest };
  if (lastTerminationState !== undefined) want.lastState = lastTerminationState;
  const verdicts: Verdict[] = [expectSubset(actual, want, 'containerStatus')];
  for (const [field, actualState, expectedState] of [
    ['state', actual.state, expected.state],
    ['lastTerminationState', actual.lastState, lastTerminationState],
  ] as const) {
    const wantKinds = isRecord(expectedState) ? Object.keys(expectedState).sort() : [];
    verdicts.push(expectEqual(stateKinds(actualState).sort(), wantKinds, `containerStatus.${field} kinds`));
  }
  return all(...verdicts);
}

export function interpretReasonCase(c: ConformanceCase): Verdict {
  onlyKeys(c.given, ['pod', 'runtime', 'lastSyncResult'], 'given');
  onlyKeys(c.expect, ['containerStatus', 'phase'], 'expect');
  if (!isRecord(c.expect.containerStatus))
    throw new Uninterpretable('expect.containerStatus: expected a mapping');
  const pod = buildPod(c.given.pod);
  const runtime = buildRuntime(c.given.runtime, pod);
  const cache = new ReasonCache();
  cache.update(pod.metadata.uid ?? '', buildResults(c.given.lastSyncResult));
  const status = generateAPIPodStatus(pod, runtime, { podIsTerminal: false, reasonCache: cache });
  const expected = c.expect.containerStatus;
  const actual = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find(
    (s) => s.name === expected.name,
  );
  const verdicts = [compareStatus(actual, expected)];
  if (c.expect.phase !== undefined) verdicts.push(expectEqual(status.phase, c.expect.phase, 'phase'));
  return all(...verdicts);
}

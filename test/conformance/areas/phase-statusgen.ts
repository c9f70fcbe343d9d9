/**
 * Phase-area subareas over the runtime view: generateAPIPodStatus and convertToAPIContainerStatuses.
 */
import type { ContainerStatus, Pod, PodStatus } from '../../../src/api/core.js';
import { generateAPIPodStatus, type PodStatusProber } from '../../../src/kubelet/status/apistatus.js';
import { ContainerCreating, convertToAPIContainerStatuses } from '../../../src/kubelet/status/convert.js';
import { fail, pass, Uninterpretable, type CaseFile, type ConformanceCase, type Verdict } from '../types.js';
import { diffPodStatus } from './phase-compare.js';
import { buildPod, buildReasonCache, buildRuntime, parsePodStatus } from './phase-pod.js';
import { bool, checkKeys, isRecord, parseStatusList } from './phase-tokens.js';
import { POD_STATUS_KEYS } from './case-keys.js';

/**
 * The upstream Test_generateAPIPodStatus prober (probetest.FakeManager): every regular container status is
 * marked ready, nothing else changes. The statusgen expectations depend on it (SEMANTICS §9.6).
 */
export const fakeAllReadyProber: PodStatusProber = {
  updatePodStatus(_pod: Pod, status: PodStatus): void {
    for (const s of status.containerStatuses ?? []) s.ready = true;
  },
};

const STATUS_EXPECT_KEYS = [
  ...POD_STATUS_KEYS,
  'podIP',
  'podIPs',
  'hostIP',
  'hostIPs',
  'qosClass',
  'compareFields',
];

function nodeIPs(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new Uninterpretable('given.nodeIPs: expected a list of IPs');
  return v as string[];
}

export function interpretGenerateAPIPodStatus(c: ConformanceCase, file: CaseFile): Verdict {
  const g = c.given;
  checkKeys(
    g,
    ['pod', 'cachedStatus', 'runtime', 'podIsTerminal', 'reasonCache', 'nodeIPs', 'staticPod'],
    'given',
  );
  checkKeys(c.expect, STATUS_EXPECT_KEYS, 'expect');
  const pod = buildPod(g.pod, file, 'given.pod');
  const runtime = buildRuntime(g.runtime, pod, 'given.runtime');
  const status = generateAPIPodStatus(pod, runtime, {
    podIsTerminal: g.podIsTerminal === undefined ? false : bool(g.podIsTerminal, 'given.podIsTerminal'),
    cachedStatus:
      g.cachedStatus === undefined || g.cachedStatus === null
        ? undefined
        : parsePodStatus(g.cachedStatus, pod, 'given.cachedStatus'),
    reasonCache: buildReasonCache(g.reasonCache, pod, 'given.reasonCache'),
    prober: fakeAllReadyProber,
    nodeIPs: nodeIPs(g.nodeIPs),
    staticPod: g.staticPod === undefined ? undefined : bool(g.staticPod, 'given.staticPod'),
  });
  const d = diffPodStatus(status, c.expect);
  return d ? fail(d) : pass;
}

/** Keys by which a previous status is recognised as a whole pod status. */
const STATUS_MARKER_KEYS = [
  'phase',
  'containerStatuses',
  'initContainerStatuses',
  'ephemeralContainerStatuses',
  'conditions',
];

/**
 * The previous statuses of a convert case: `previousStatuses` or `apiStatus`, each either a map
 * container name -> status, or a pod status (recognised by its keys); else the pod's own API status.
 */
function previousStatuses(g: Record<string, unknown>, pod: Pod): ContainerStatus[] {
  if (g.previousStatuses !== undefined && g.apiStatus !== undefined) {
    throw new Uninterpretable('given has both previousStatuses and apiStatus');
  }
  const key = g.previousStatuses !== undefined ? 'previousStatuses' : 'apiStatus';
  const v = g[key];
  if (v === undefined || v === null) return pod.status?.containerStatuses ?? [];
  if (isRecord(v) && Object.keys(v).some((k) => STATUS_MARKER_KEYS.includes(k))) {
    return parsePodStatus(v, pod, `given.${key}`).containerStatuses ?? [];
  }
  return parseStatusList(
    v,
    pod.spec.containers.map((x) => x.name),
    `given.${key}`,
  );
}

/** The init-container expectation: 'same', {defaultWaitingReason}, or {containerStatuses}. */
function initExpectation(expect: Record<string, unknown>): Record<string, unknown> | undefined {
  const v = expect.asInitContainers;
  if (v === undefined || v === null) return undefined;
  const base: Record<string, unknown> = { ...expect };
  delete base.asInitContainers;
  if (v === 'same') return base;
  if (!isRecord(v)) throw new Uninterpretable(`expect.asInitContainers: ${JSON.stringify(v)}`);
  checkKeys(v, ['defaultWaitingReason', 'containerStatuses', 'compareFields'], 'expect.asInitContainers');
  if (v.containerStatuses !== undefined) base.containerStatuses = v.containerStatuses;
  if (v.compareFields !== undefined) base.compareFields = v.compareFields;
  if (v.defaultWaitingReason !== undefined) {
    if (typeof v.defaultWaitingReason !== 'string')
      throw new Uninterpretable('expect.asInitContainers.defaultWaitingReason');
    const reason = v.defaultWaitingReason;
    // The regular-container run shows the regular default; as init containers that default reads `reason`.
    base.containerStatuses = structuredClone(base.containerStatuses);
    const list = Array.isArray(base.containerStatuses)
      ? base.containerStatuses
      : isRecord(base.containerStatuses)
        ? Object.values(base.containerStatuses)
        : [];
    for (const s of list) {
      if (
        isRecord(s) &&
        isRecord(s.state) &&
        isRecord(s.state.waiting) &&
        s.state.waiting.reason === ContainerCreating
      ) {
        s.state.waiting.reason = reason;
      }
    }
  }
  return base;
}

export function interpretConvertToAPIContainerStatuses(c: ConformanceCase, file: CaseFile): Verdict {
  const g = c.given;
  checkKeys(
    g,
    ['pod', 'previousStatuses', 'apiStatus', 'runtime', 'reasonCache', 'hasInitContainers'],
    'given',
  );
  checkKeys(c.expect, ['containerStatuses', 'asInitContainers', 'compareFields'], 'expect');
  const pod = buildPod(g.pod, file, 'given.pod');
  const runtime = buildRuntime(g.runtime, pod, 'given.runtime');
  const previous = previousStatuses(g, pod);
  const hasInit =
    g.hasInitContainers === undefined
      ? (pod.spec.initContainers ?? []).length > 0
      : bool(g.hasInitContainers, 'given.hasInitContainers');

  const regular = convertToAPIContainerStatuses(pod, runtime, {
    containers: pod.spec.containers,
    previousStatuses: previous,
    hasInitContainers: hasInit,
    isInitContainer: false,
    reasonCache: buildReasonCache(g.reasonCache, pod, 'given.reasonCache'),
  });
  const expect = { ...c.expect };
  delete expect.asInitContainers;
  const d = diffPodStatus({ containerStatuses: regular }, expect);
  if (d) return fail(`as regular containers: ${d}`);

  const initExpect = initExpectation(c.expect);
  if (!initExpect) return pass;
  // The same containers as the pod's init containers, as the upstream tests re-run them.
  const initPod: Pod = { ...pod, spec: { ...pod.spec, initContainers: pod.spec.containers, containers: [] } };
  const inits = convertToAPIContainerStatuses(initPod, runtime, {
    containers: initPod.spec.initContainers ?? [],
    previousStatuses: previous,
    hasInitContainers: true,
    isInitContainer: true,
    reasonCache: buildReasonCache(g.reasonCache, pod, 'given.reasonCache'),
  });
  const di = diffPodStatus({ containerStatuses: inits }, initExpect);
  return di ? fail(`as init containers: ${di}`) : pass;
}

/**
 * Interpreter for area `conditions`: one condition generator per case (given.function; the upstream
 * Go name or ours), on a pod from given.spec / given.pod (inline or a fixture), compared on
 * expect.compareFields when present, else on type/status/reason/message and whatever the case lists.
 */
import type { ContainerStatus, PodPhase } from '../../../src/api/core.js';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
} from '../../../src/kubelet/status/generate.js';
import {
  fail,
  pass,
  Uninterpretable,
  type AreaInterpreter,
  type CaseFile,
  type ConformanceCase,
} from '../types.js';
import { diffCondition } from './phase-compare.js';
import { buildPod, buildRuntime, parseConditions } from './phase-pod.js';
import { bool, checkKeys, isRecord, parseAPIContainerStatus } from './phase-tokens.js';

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'];

/** given.statuses: null (nil list) or [{name, ready?, started?, state?, ...}] (state: token or object). */
function statuses(v: unknown): ContainerStatus[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v)) throw new Uninterpretable('given.statuses: expected null or a list');
  return v.map((entry, i) => {
    const where = `given.statuses[${i}]`;
    if (!isRecord(entry) || typeof entry.name !== 'string')
      throw new Uninterpretable(`${where}: entry without a name`);
    return parseAPIContainerStatus(entry.name, entry, where);
  });
}

function phase(v: unknown): PodPhase | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (!PHASES.includes(String(v))) throw new Uninterpretable(`given.phase: ${JSON.stringify(v)}`);
  return v as PodPhase;
}

function fieldsOf(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((f) => typeof f !== 'string'))
    throw new Uninterpretable('expect.compareFields: expected field names');
  return v as string[];
}

export const interpretConditions: AreaInterpreter = (c: ConformanceCase, file: CaseFile) => {
  const g = c.given;
  checkKeys(c.expect, ['condition', 'compareFields'], 'expect');
  const fn = String(g.function ?? '');
  const name = fn.charAt(0).toLowerCase() + fn.slice(1);
  let condition;
  switch (name) {
    case 'generateContainersReadyCondition':
    case 'generatePodReadyCondition':
    case 'generatePodInitializedCondition': {
      checkKeys(g, ['function', 'spec', 'pod', 'statuses', 'phase', 'podConditions'], 'given');
      if (g.spec !== undefined && g.pod !== undefined)
        throw new Uninterpretable('given has both spec and pod');
      // `spec` lists containers and readiness gates; a fixture or any pod key works the same way.
      const pod = buildPod(g.spec ?? g.pod ?? {}, file, g.spec !== undefined ? 'given.spec' : 'given.pod');
      const list = statuses(g.statuses);
      const p = phase(g.phase);
      if (name === 'generateContainersReadyCondition') {
        condition = generateContainersReadyCondition(pod, list, p);
      } else if (name === 'generatePodInitializedCondition') {
        condition = generatePodInitializedCondition(pod, list, p);
      } else {
        condition = generatePodReadyCondition(
          pod,
          parseConditions(g.podConditions, 'given.podConditions'),
          list,
          p,
        );
      }
      break;
    }
    case 'generatePodReadyToStartContainersCondition': {
      checkKeys(g, ['function', 'pod', 'runtime'], 'given');
      const podGiven = isRecord(g.pod) ? { containers: [], ...g.pod } : g.pod;
      if (isRecord(podGiven) && podGiven.hostNetwork !== undefined)
        bool(podGiven.hostNetwork, 'given.pod.hostNetwork');
      const pod = buildPod(podGiven ?? { containers: [] }, file, 'given.pod');
      condition = generatePodReadyToStartContainersCondition(
        pod,
        buildRuntime(g.runtime, pod, 'given.runtime'),
      );
      break;
    }
    default:
      throw new Uninterpretable(`conditions: unknown function ${JSON.stringify(g.function)}`);
  }
  const d = diffCondition(condition, c.expect.condition, fieldsOf(c.expect.compareFields), '$.condition');
  return d ? fail(d) : pass;
};

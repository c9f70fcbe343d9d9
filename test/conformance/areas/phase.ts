/**
 * Interpreter for area `phase`: getPhase (no subarea), plus the subareas generateAPIPodStatus and
 * convertToAPIContainerStatuses (see phase-statusgen.ts).
 */
import type { Pod } from '../../../src/api/core.js';
import { getPhase } from '../../../src/kubelet/status/phase.js';
import { expectEqual } from '../compare.js';
import {
  Uninterpretable,
  type AreaInterpreter,
  type CaseFile,
  type ConformanceCase,
  type Verdict,
} from '../types.js';
import { parseContainers } from './phase-pod.js';
import { interpretConvertToAPIContainerStatuses, interpretGenerateAPIPodStatus } from './phase-statusgen.js';
import { bool, checkKeys, parseStatusList } from './phase-tokens.js';

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'];

function interpretGetPhase(c: ConformanceCase): Verdict {
  const g = c.given;
  checkKeys(
    g,
    [
      'restartPolicy',
      'initContainers',
      'containers',
      'statuses',
      'podIsTerminal',
      'podHasInitialized',
      'staticPod',
    ],
    'given',
  );
  checkKeys(c.expect, ['phase'], 'expect');
  if (!PHASES.includes(String(c.expect.phase)))
    throw new Uninterpretable(`expect.phase: ${JSON.stringify(c.expect.phase)}`);
  const policy = g.restartPolicy;
  if (
    policy !== undefined &&
    policy !== null &&
    policy !== 'Always' &&
    policy !== 'OnFailure' &&
    policy !== 'Never'
  ) {
    throw new Uninterpretable(`given.restartPolicy: ${JSON.stringify(policy)}`);
  }
  const spec: Pod['spec'] = {
    initContainers: parseContainers(g.initContainers, 'given.initContainers'),
    containers: parseContainers(g.containers, 'given.containers'),
  };
  if (policy) spec.restartPolicy = policy;
  const names = [...(spec.initContainers ?? []), ...spec.containers].map((x) => x.name);
  const statuses = parseStatusList(g.statuses, names, 'given.statuses');
  const flag = (k: string) => (g[k] === undefined || g[k] === null ? false : bool(g[k], `given.${k}`));
  const phase = getPhase(spec, statuses, flag('podIsTerminal'), flag('podHasInitialized'), {
    staticPod: flag('staticPod'),
  });
  return expectEqual(phase, c.expect.phase, 'phase');
}

export const interpretPhase: AreaInterpreter = (c: ConformanceCase, file: CaseFile) => {
  switch (c.subarea ?? 'getPhase') {
    case 'getPhase':
      return interpretGetPhase(c);
    case 'generateAPIPodStatus':
      return interpretGenerateAPIPodStatus(c, file);
    case 'convertToAPIContainerStatuses':
      return interpretConvertToAPIContainerStatuses(c, file);
    default:
      throw new Uninterpretable(`phase: unknown subarea ${JSON.stringify(c.subarea)}`);
  }
};

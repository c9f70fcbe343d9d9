/**
 * Interpreter of the statusManager area: every case runs on the real status manager code
 * (src/kubelet/status) with a fake API server, fake pod manager and fake clock. Three shapes of case:
 *   given.function  one pure function                        statusManager-functions.ts
 *   given.steps     a scenario of manager operations          statusManager-scenario.ts
 *   given.variants  the same two-update check, several times  (below)
 * The value grammar is in statusManager-tokens.ts, the expectation grammar in statusManager-expect.ts.
 * Anything outside these grammars throws Uninterpretable, so an unknown case fails by name.
 *
 * Variants: given {pod, variants: [{cached, new, accepted}]}. Each variant stores `cached` with
 * SetPodStatus, then SetPodStatus(`new`); `accepted` says whether the second update was stored (a new
 * version). `cached` / `new` are pod status specs, or a container status entry for one regular container
 * (the pod's only container, or `c` when the spec has none).
 */
import type { PodStatus } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import {
  fail,
  pass,
  Uninterpretable,
  type AreaInterpreter,
  type CaseFile,
  type ConformanceCase,
  type Verdict,
} from '../types.js';
import { interpretFunctionCase } from './statusManager-functions.js';
import { interpretScenario, setupWorld } from './statusManager-scenario.js';
import { checkKeys, isObj, parseContainerStatus, parseStatus, show } from './statusManager-tokens.js';
import { specNames } from './statusManager-world.js';

const VARIANT_GIVEN = [
  'pod',
  'apiServer',
  'mirrorPod',
  'podManager',
  'podCouldHaveRunningContainers',
  'variants',
];
const STATUS_FIELDS = [
  'phase',
  'conditions',
  'containerStatuses',
  'initContainerStatuses',
  'message',
  'reason',
];

function interpretVariants(c: ConformanceCase, file: CaseFile): Verdict {
  const g = c.given;
  checkKeys(g, VARIANT_GIVEN, 'given');
  checkKeys(c.expect, ['note'], 'expect');
  if (!Array.isArray(g.variants) || g.variants.length === 0)
    throw new Uninterpretable('given.variants: not a list');
  for (const [i, v] of g.variants.entries()) {
    const where = `variants[${i}]`;
    if (!isObj(v)) throw new Uninterpretable(`${where}: not an object`);
    checkKeys(v, ['cached', 'new', 'accepted', 'why', 'note'], where);
    if (typeof v.accepted !== 'boolean') throw new Uninterpretable(`${where}.accepted: ${show(v.accepted)}`);
    const w = setupWorld(g, file);
    const pod = w.main;
    if (!pod) throw new Uninterpretable('variants need given.pod');
    const spec = specNames(pod.spec);
    const containerName =
      spec.containers.length === 1
        ? (spec.containers[0] as string)
        : spec.containers.length === 0
          ? 'c'
          : undefined;
    const statusOf = (x: unknown, at: string): PodStatus => {
      if (isObj(x) && Object.keys(x).some((k) => STATUS_FIELDS.includes(k)))
        return parseStatus(x, spec, w.now, at);
      if (containerName === undefined)
        throw new Uninterpretable(`${at}: which container? the pod has several`);
      return { containerStatuses: [parseContainerStatus(x, containerName, w.now, at)] };
    };
    const uid = asPodUID(pod.metadata.uid ?? '');
    w.manager.setPodStatus(pod, statusOf(v.cached, `${where}.cached`));
    const before = w.manager.cachedEntry(uid)?.version;
    if (before === undefined) return fail(`${where}: the cached status was not stored`);
    w.manager.setPodStatus(pod, statusOf(v.new, `${where}.new`));
    const accepted = w.manager.cachedEntry(uid)?.version !== before;
    if (accepted !== v.accepted) return fail(`${where}: expected accepted=${v.accepted}, got ${accepted}`);
  }
  return pass;
}

export const interpretStatusManager: AreaInterpreter = (c, file) => {
  const g = c.given;
  const shapes = ['function', 'steps', 'variants'].filter((k) => g[k] !== undefined);
  if (shapes.length !== 1)
    throw new Uninterpretable(`given needs exactly one of function, steps, variants (has ${show(shapes)})`);
  if (g.function !== undefined) return interpretFunctionCase(c, file);
  if (g.variants !== undefined) return interpretVariants(c, file);
  return interpretScenario(c, file);
};

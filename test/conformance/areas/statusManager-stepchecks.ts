/**
 * Step and case checks of statusManager scenarios (the phrases and keys listed in
 * statusManager-scenario.ts). Each returns undefined when the check holds, or what differed.
 */
import type { PodStatus } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { semanticEqual } from '../../../src/kubelet/status/semantic.js';
import { isStaticPod } from '../../../src/kubelet/types/podupdate.js';
import { Uninterpretable, type CaseFile } from '../types.js';
import type { ExpectContext } from './statusManager-expect.js';
import { mainUID, requireMain } from './statusManager-setup.js';
import { checkKeys, isObj, show, type Obj } from './statusManager-tokens.js';
import { specNames, type World } from './statusManager-world.js';

export interface Scenario {
  w: World;
  g: Obj;
  file: CaseFile;
  snapshots: (PodStatus | undefined)[];
  totalSynced: number;
  fresh: number;
  seeded: string[];
  flagField: 'ready' | 'started' | undefined;
}

export function cachedMain(s: Scenario): PodStatus | undefined {
  return s.w.main ? s.w.manager.getPodStatus(asPodUID(mainUID(s.w))) : undefined;
}

export function ctxOf(s: Scenario): ExpectContext {
  return { now: s.w.now, spec: specNames(s.w.main?.spec ?? { containers: [] }), snapshots: s.snapshots };
}

export function checkEntriesPhrase(s: Scenario, phrase: string, where: string): string | undefined {
  const versions = s.w.manager.apiStatusVersions;
  const all = /^(both|all) entries (removed|kept)$/.exec(phrase.trim());
  const one = /^entry (\S+) (removed|kept)$/.exec(phrase.trim());
  const uids = all ? s.seeded : one ? [one[1] as string] : undefined;
  const verdict = all?.[2] ?? one?.[2];
  if (!uids || !verdict) throw new Uninterpretable(`${where}.expect: unknown phrase ${show(phrase)}`);
  if (uids.length === 0) throw new Uninterpretable(`${where}.expect: no seeded entries to check`);
  for (const uid of uids) {
    if (versions.has(uid) !== (verdict === 'kept'))
      return `${where}: apiStatusVersions[${uid}] expected ${verdict}`;
  }
  return undefined;
}

export function checkGetPhrase(
  s: Scenario,
  got: PodStatus | undefined,
  phrase: string,
  where: string,
): string | undefined {
  const p = phrase.trim();
  if (/^returns the static pod('s)? status\b/.test(p)) {
    const staticPod = requireMain(s.w);
    if (!isStaticPod(staticPod)) throw new Uninterpretable(`${where}: given.pod is not static`);
    const own = s.w.manager.cachedEntry(asPodUID(staticPod.metadata.uid ?? ''));
    if (!own) return `${where}: the static pod has no cached status`;
    if (!got) return `${where}: expected the static pod's status, got none`;
    return semanticEqual(got, own.status)
      ? undefined
      : `${where}: got ${show(got)}, not the static pod's status`;
  }
  if (/^(returns )?(none|nothing|not found)$/.test(p))
    return got ? `${where}: expected none, got ${show(got)}` : undefined;
  throw new Uninterpretable(`${where}.expect: unknown phrase ${show(phrase)}`);
}

export function checkFlags(s: Scenario, expect: Obj, field: 'ready' | 'started' | undefined, where: string) {
  const got = cachedMain(s);
  if (!got) return `${where}: no cached status`;
  for (const [k, want] of Object.entries(expect)) {
    if (typeof want !== 'boolean') throw new Uninterpretable(`${where}.expect.${k}: ${show(want)}`);
    if (k === 'podReady' || k === 'containersReady') {
      const type = k === 'podReady' ? 'Ready' : 'ContainersReady';
      const c = got.conditions?.find((x) => x.type === type);
      if ((c?.status === 'True') !== want) return `${where}: ${type} expected ${want}, got ${show(c)}`;
      continue;
    }
    const spec = specNames(requireMain(s.w).spec);
    if (![...spec.containers, ...spec.initContainers].includes(k)) {
      throw new Uninterpretable(`${where}.expect: '${k}' is neither podReady nor a container of the pod`);
    }
    if (!field) throw new Uninterpretable(`${where}.expect.${k}: cannot tell readiness from startup here`);
    const cs = [...(got.containerStatuses ?? []), ...(got.initContainerStatuses ?? [])].find(
      (x) => x.name === k,
    );
    if (!cs) return `${where}: no status for container ${k}`;
    if ((cs[field] === true) !== want)
      return `${where}: ${k}.${field} expected ${want}, got ${show(cs[field])}`;
  }
  return undefined;
}

export function checkActions(w: World, from: number, expected: unknown, where: string): string | undefined {
  if (
    !Array.isArray(expected) ||
    !expected.every((v) => ['get', 'patch/status', 'delete'].includes(v as string))
  ) {
    throw new Uninterpretable(`${where}: ${show(expected)}`);
  }
  const got = w.server.actions.slice(from).map((a) => a.verb);
  return show(got) === show(expected) ? undefined : `${where}: expected ${show(expected)}, got ${show(got)}`;
}

export function checkDeleteOptions(w: World, want: unknown): string | undefined {
  if (!isObj(want)) throw new Uninterpretable(`deleteOptions: ${show(want)}`);
  checkKeys(want, ['gracePeriodSeconds', 'preconditionUID'], 'deleteOptions');
  const deletes = w.server.actions.filter((a) => a.verb === 'delete');
  const last = deletes[deletes.length - 1];
  if (!last) return 'deleteOptions: no delete was sent';
  if (want.gracePeriodSeconds !== undefined && last.gracePeriodSeconds !== want.gracePeriodSeconds) {
    return `deleteOptions.gracePeriodSeconds: expected ${show(want.gracePeriodSeconds)}, got ${show(last.gracePeriodSeconds)}`;
  }
  if (want.preconditionUID !== undefined && last.uid !== String(want.preconditionUID)) {
    return `deleteOptions.preconditionUID: expected ${show(want.preconditionUID)}, got ${show(last.uid)}`;
  }
  return undefined;
}

/**
 * statusManager scenario cases: `given.steps` run in order on the real StatusManager (statusManager-world.ts).
 * The fake clock stays at `now` for the whole scenario, as in the upstream tests, where every step runs
 * within the same instant and `now` is captured once.
 *
 * Setup keys: pod, apiServer (pods on the server), mirrorPod (in the pod manager from the start unless a
 *   step adds it with addMirrorPod), podManager (exactly the UIDs it holds),
 *   podCouldHaveRunningContainers, cachedStatus (stored with SetPodStatus before the steps; its sync signal
 *   stays pending), initialStatus and other statuses that steps name.
 * Ops (`op`), with a pod reference REF = pod | staticPod | mirrorPod | <uid> (an unknown UID makes a pod
 * with the test pod's name and namespace; `pod` without given.pod is the upstream test pod, uid 12345678,
 * foo in namespace new; pods made this way are not in the pod manager):
 *   SetPodStatus[(REF | pod.status | <given key>)]   status: step.status, the named status, or a fresh one
 *   TerminatePod[(REF)]
 *   SetContainerReadiness {id, ready} / SetContainerStartup {id, started}       on given.pod
 *   consumeUpdates                                    drain the channel: syncBatch(false) per signal
 *   syncBatch {all}                                   one syncBatch(all)
 *   seedApiStatusVersions {entries: {uid: version}}
 *   addMirrorPod[(<uid>)][ and its static pod]        register the mirror (and a static pod of its name)
 *   replaceMirrorPod {newUID, status}                 the pod manager sees a new mirror; the server does not
 *   GetPodStatus(REF | mirrorUID)
 *   RemoveOrphanedStatuses(<uid>, ...)                keep only these UIDs' statuses
 * Step expectations: expectSynced (the op's sync count; after other ops, what draining then syncs),
 *   expectApiActions (calls during the step: get, patch/status, delete), expectCached (none | cached
 *   spec), expect: {<container>: bool (ready, or started in startup scenarios), podReady: bool} or a
 *   phrase: `returns the static pod status...`, `none`, `(both|all) entries (removed|kept)`,
 *   `entry <uid> (removed|kept)`.
 * Case expectations: updatesSynced (total of consumeUpdates and expectSynced drains), cached (subset,
 *   statusManager-expect.ts), cacheVersion, cachedPodIsFinished, queued (a step stored a new version),
 *   apiActions (all calls), deleteOptions {gracePeriodSeconds, preconditionUID}.
 * Descriptive keys (why, note, before, state) carry no assertion and are not read.
 */
import type { Pod, PodStatus } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { fail, pass, Uninterpretable, type CaseFile, type ConformanceCase, type Verdict } from '../types.js';
import { checkStatusSubset } from './statusManager-expect.js';
import {
  addMirrorPod,
  mainUID,
  NAMED_STATUS_KEYS,
  requireMain,
  resolvePod,
  SETUP_KEYS,
  setupWorld,
} from './statusManager-setup.js';
import {
  cachedMain,
  checkActions,
  checkDeleteOptions,
  checkEntriesPhrase,
  checkFlags,
  checkGetPhrase,
  ctxOf,
  type Scenario,
} from './statusManager-stepchecks.js';
import { checkKeys, isObj, parseStatus, show, type Obj } from './statusManager-tokens.js';
import { specNames } from './statusManager-world.js';

export { setupWorld } from './statusManager-setup.js';

const DESCRIPTIVE = ['why', 'note', 'before', 'state'];
const STEP_EXPECT = ['expectSynced', 'expectApiActions', 'expectCached', 'expect'];

const OP = /^(\w+)(?:\(([^)]*)\))?(\s+and its static pod)?$/;

/** Runs one step; resolves to a failure message or undefined. */
async function runStep(s: Scenario, step: Obj, where: string): Promise<string | undefined> {
  const { w } = s;
  if (typeof step.op !== 'string') throw new Uninterpretable(`${where}: op is not a string`);
  const m = OP.exec(step.op.trim());
  if (!m) throw new Uninterpretable(`${where}: cannot read op ${show(step.op)}`);
  const [, name, rawArg, andStatic] = m;
  const arg = rawArg?.trim() || undefined;
  if (andStatic && name !== 'addMirrorPod')
    throw new Uninterpretable(`${where}: 'and its static pod' on ${name}`);
  const allow = (keys: string[]) => checkKeys(step, ['op', ...keys, ...STEP_EXPECT, ...DESCRIPTIVE], where);
  const actionsBefore = w.server.actions.length;
  let synced: number | undefined;
  let phraseHandled = false;

  switch (name) {
    case 'SetPodStatus': {
      allow(['status']);
      let pod: Pod;
      let status: PodStatus | undefined;
      if (arg === 'pod.status') {
        pod = requireMain(w);
        status = pod.status ?? {};
      } else if (arg !== undefined && (NAMED_STATUS_KEYS.includes(arg) || arg === 'cachedStatus')) {
        if (!Object.hasOwn(s.g, arg)) throw new Uninterpretable(`${where}: no given.${arg}`);
        pod = requireMain(w);
        status = parseStatus(s.g[arg], specNames(pod.spec), w.now, `given.${arg}`);
      } else {
        pod = resolvePod(w, arg, s.file);
      }
      if (step.status !== undefined) {
        if (status) throw new Uninterpretable(`${where}: both a named status and step.status`);
        status = parseStatus(step.status, specNames(pod.spec), w.now, `${where}.status`);
      }
      w.manager.setPodStatus(pod, status ?? { message: `status-${++s.fresh}` });
      break;
    }
    case 'TerminatePod':
      allow([]);
      w.manager.terminatePod(resolvePod(w, arg, s.file));
      break;
    case 'SetContainerReadiness':
    case 'SetContainerStartup': {
      const field = name === 'SetContainerReadiness' ? 'ready' : 'started';
      allow(['id', field]);
      if (arg !== undefined) throw new Uninterpretable(`${where}: ${name} takes no argument`);
      if (typeof step.id !== 'string' || typeof step[field] !== 'boolean') {
        throw new Uninterpretable(`${where}: needs id (string) and ${field} (boolean)`);
      }
      const uid = asPodUID(mainUID(w));
      if (field === 'ready') w.manager.setContainerReadiness(uid, step.id, step.ready as boolean);
      else w.manager.setContainerStartup(uid, step.id, step.started as boolean);
      break;
    }
    case 'consumeUpdates':
      allow([]);
      synced = await w.manager.drain();
      s.totalSynced += synced;
      break;
    case 'syncBatch': {
      allow(['all']);
      const all = step.all ?? false;
      if (typeof all !== 'boolean') throw new Uninterpretable(`${where}.all: ${show(all)}`);
      synced = await w.manager.syncBatch(all);
      if (typeof step.expect === 'string') {
        phraseHandled = true;
        const d = checkEntriesPhrase(s, step.expect, where);
        if (d) return d;
      }
      break;
    }
    case 'seedApiStatusVersions': {
      allow(['entries']);
      if (!isObj(step.entries)) throw new Uninterpretable(`${where}.entries: ${show(step.entries)}`);
      s.seeded = [];
      for (const [uid, v] of Object.entries(step.entries)) {
        if (typeof v !== 'number') throw new Uninterpretable(`${where}.entries.${uid}: ${show(v)}`);
        w.manager.apiStatusVersions.set(uid, v);
        s.seeded.push(uid);
      }
      break;
    }
    case 'addMirrorPod': {
      allow([]);
      addMirrorPod(w, arg, !!andStatic, where);
      break;
    }
    case 'replaceMirrorPod': {
      allow(['newUID', 'status']);
      if (!w.mirror) throw new Uninterpretable(`${where}: no mirror pod to replace`);
      if (typeof step.newUID !== 'string') throw new Uninterpretable(`${where}.newUID: ${show(step.newUID)}`);
      w.podManager.remove(w.mirror.metadata.uid ?? '');
      const next = structuredClone(w.mirror);
      next.metadata.uid = step.newUID;
      next.status = parseStatus(step.status, specNames(next.spec), w.now, `${where}.status`);
      w.mirror = next;
      w.remember(next);
      w.podManager.add(next);
      break;
    }
    case 'RemoveOrphanedStatuses': {
      allow([]);
      const keep = (arg ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
      w.manager.removeOrphanedStatuses(new Set(keep));
      break;
    }
    case 'GetPodStatus': {
      allow([]);
      const uid =
        arg === 'mirrorUID' ? (w.mirror?.metadata.uid ?? '') : resolvePod(w, arg, s.file).metadata.uid;
      if (!uid) throw new Uninterpretable(`${where}: no pod for ${show(arg)}`);
      const got = w.manager.getPodStatus(asPodUID(uid));
      if (typeof step.expect === 'string') {
        phraseHandled = true;
        const d = checkGetPhrase(s, got, step.expect, where);
        if (d) return d;
      }
      break;
    }
    default:
      throw new Uninterpretable(`${where}: unknown op '${name}'`);
  }

  if (step.expectSynced !== undefined) {
    if (typeof step.expectSynced !== 'number')
      throw new Uninterpretable(`${where}.expectSynced: ${show(step.expectSynced)}`);
    if (synced === undefined) {
      synced = await w.manager.drain();
      s.totalSynced += synced;
    }
    if (synced !== step.expectSynced) return `${where}: expected ${step.expectSynced} synced, got ${synced}`;
  }
  if (step.expectApiActions !== undefined) {
    const d = checkActions(w, actionsBefore, step.expectApiActions, `${where}.expectApiActions`);
    if (d) return d;
  }
  if (step.expectCached !== undefined) {
    const got = cachedMain(s);
    if (step.expectCached === 'none') {
      if (got !== undefined) return `${where}: expected no cached status, got ${show(got)}`;
    } else {
      const d = checkStatusSubset(got, step.expectCached, ctxOf(s), `${where}.expectCached`);
      if (d) return d;
    }
  }
  if (step.expect !== undefined && !phraseHandled) {
    if (!isObj(step.expect))
      throw new Uninterpretable(`${where}.expect: cannot read ${show(step.expect)} here`);
    const d = checkFlags(
      s,
      step.expect,
      name === 'SetContainerStartup' ? 'started' : name === 'SetContainerReadiness' ? 'ready' : s.flagField,
      where,
    );
    if (d) return d;
  }
  return undefined;
}

const CASE_EXPECT = [
  'updatesSynced',
  'cached',
  'cacheVersion',
  'cachedPodIsFinished',
  'queued',
  'apiActions',
  'deleteOptions',
  'note',
];

export async function interpretScenario(c: ConformanceCase, file: CaseFile): Promise<Verdict> {
  const g = c.given;
  checkKeys(g, [...SETUP_KEYS, ...NAMED_STATUS_KEYS, 'steps'], 'given');
  if (!Array.isArray(g.steps)) throw new Uninterpretable('given.steps: not a list');
  const e = c.expect;
  checkKeys(e, CASE_EXPECT, 'expect');
  if (e.note !== undefined && typeof e.note !== 'string') throw new Uninterpretable('expect.note: not prose');

  const w = setupWorld(g, file);
  const ops = g.steps.map((st) => (isObj(st) && typeof st.op === 'string' ? st.op : ''));
  const readiness = ops.some((o) => o.startsWith('SetContainerReadiness'));
  const startup = ops.some((o) => o.startsWith('SetContainerStartup'));
  const s: Scenario = {
    w,
    g,
    file,
    snapshots: [],
    totalSynced: 0,
    fresh: 0,
    seeded: [],
    flagField: readiness === startup ? undefined : readiness ? 'ready' : 'started',
  };
  const versionOf = () => (w.main ? w.manager.cachedEntry(asPodUID(mainUID(w)))?.version : undefined);
  s.snapshots.push(cachedMain(s));
  const setupVersion = versionOf();
  for (const [i, step] of g.steps.entries()) {
    if (!isObj(step)) throw new Uninterpretable(`step ${i}: not an object`);
    const d = await runStep(s, step, `step ${i} (${String(step.op)})`);
    if (d) return fail(d);
    s.snapshots.push(cachedMain(s));
  }

  const entry = w.main ? w.manager.cachedEntry(asPodUID(mainUID(w))) : undefined;
  const checks: [string, () => string | undefined][] = [
    [
      'updatesSynced',
      () =>
        s.totalSynced === e.updatesSynced
          ? undefined
          : `updatesSynced: expected ${show(e.updatesSynced)}, got ${s.totalSynced}`,
    ],
    ['cached', () => checkStatusSubset(cachedMain(s), e.cached, ctxOf(s), 'cached')],
    [
      'cacheVersion',
      () =>
        entry?.version === e.cacheVersion
          ? undefined
          : `cacheVersion: expected ${show(e.cacheVersion)}, got ${show(entry?.version)}`,
    ],
    [
      'cachedPodIsFinished',
      () =>
        entry?.podIsFinished === e.cachedPodIsFinished
          ? undefined
          : `podIsFinished: expected ${show(e.cachedPodIsFinished)}, got ${show(entry?.podIsFinished)}`,
    ],
    [
      'queued',
      () =>
        (versionOf() !== setupVersion) === e.queued
          ? undefined
          : `queued: expected ${show(e.queued)} (version ${show(setupVersion)} -> ${show(versionOf())})`,
    ],
    ['apiActions', () => checkActions(w, 0, e.apiActions, 'apiActions')],
    ['deleteOptions', () => checkDeleteOptions(w, e.deleteOptions)],
  ];
  for (const [key, check] of checks) {
    if (e[key] === undefined) continue;
    const d = check();
    if (d) return fail(d);
  }
  return pass;
}

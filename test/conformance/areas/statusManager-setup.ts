/**
 * Setup of statusManager scenarios and variants: the world from `given`, and pod references of steps.
 * The grammar is described in statusManager-scenario.ts and statusManager-world.ts.
 */
import type { Pod } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { ConfigSourceAnnotationKey, isStaticPod } from '../../../src/kubelet/types/podupdate.js';
import { Uninterpretable, type CaseFile } from '../types.js';
import { isObj, parseStatus, show, type Obj } from './statusManager-tokens.js';
import { asMirror, buildPod, DEFAULT_IDENTITY, specNames, World } from './statusManager-world.js';

export const SETUP_KEYS = [
  'pod',
  'apiServer',
  'mirrorPod',
  'podManager',
  'podCouldHaveRunningContainers',
  'cachedStatus',
];
export const NAMED_STATUS_KEYS = ['initialStatus'];

/** Builds the world of a scenario (or a variant) from the setup keys of `given`. */
export function setupWorld(g: Obj, file: CaseFile): World {
  const w = new World();
  const couldRun = g.podCouldHaveRunningContainers ?? false;
  if (typeof couldRun !== 'boolean')
    throw new Uninterpretable(`podCouldHaveRunningContainers: ${show(couldRun)}`);
  w.couldHaveRunningContainers = couldRun;
  if (g.pod !== undefined) {
    w.main = buildPod(g.pod, file, w.now, 'given.pod');
    w.remember(w.main);
  }
  if (g.apiServer !== undefined) {
    if (!Array.isArray(g.apiServer)) throw new Uninterpretable('given.apiServer: not a list');
    g.apiServer.forEach((e, i) => {
      const pod = buildPod(e, file, w.now, `given.apiServer[${i}]`, w.main);
      w.server.put(pod);
      if (!w.known.has(pod.metadata.uid ?? '')) w.remember(pod);
    });
  }
  if (g.mirrorPod !== undefined) {
    w.mirror = asMirror(buildPod(g.mirrorPod, file, w.now, 'given.mirrorPod', w.main));
    w.server.put(w.mirror);
    w.remember(w.mirror);
  }
  if (g.podManager !== undefined) {
    if (!Array.isArray(g.podManager)) throw new Uninterpretable('given.podManager: not a list');
    for (const uid of g.podManager) {
      const pod = w.known.get(String(uid));
      if (!pod) throw new Uninterpretable(`given.podManager: unknown pod ${show(uid)}`);
      w.podManager.add(pod);
    }
  } else {
    if (w.main) w.podManager.add(w.main);
    // A given mirror pod is known to the pod manager from the start, unless a step adds it.
    const addsMirror =
      Array.isArray(g.steps) && g.steps.some((st) => isObj(st) && String(st.op).startsWith('addMirrorPod'));
    if (w.mirror && !addsMirror) w.podManager.add(w.mirror);
  }
  if (g.cachedStatus !== undefined) {
    const main = requireMain(w);
    w.manager.setPodStatus(
      main,
      parseStatus(g.cachedStatus, specNames(main.spec), w.now, 'given.cachedStatus'),
    );
    if (!w.manager.cachedEntry(asPodUID(main.metadata.uid ?? ''))) {
      throw new Error('setup: the status manager refused given.cachedStatus');
    }
  }
  return w;
}

/** given.pod; without one, the upstream test pod (which the pod manager does not hold). */
export function requireMain(w: World): Pod {
  if (!w.main) {
    w.main = { metadata: { ...DEFAULT_IDENTITY }, spec: { containers: [] }, status: {} };
    w.remember(w.main);
  }
  return w.main;
}

export function mainUID(w: World): string {
  return requireMain(w).metadata.uid ?? '';
}

/** Resolves a pod reference (see the module comment). */
export function resolvePod(w: World, ref: string | undefined, file: CaseFile): Pod {
  if (ref === undefined || ref === 'pod') return requireMain(w);
  if (ref === 'staticPod') {
    const p = requireMain(w);
    if (!isStaticPod(p)) throw new Uninterpretable('staticPod: given.pod is not a static pod');
    return p;
  }
  if (ref === 'mirrorPod') {
    if (!w.mirror) throw new Uninterpretable('mirrorPod: no mirror pod');
    return w.mirror;
  }
  if (!/^[\w.-]+$/.test(ref)) throw new Uninterpretable(`unknown pod reference ${show(ref)}`);
  const known = w.known.get(ref);
  if (known) return known;
  const pod = buildPod({ uid: ref }, file, w.now, `pod ${ref}`);
  w.remember(pod);
  w.main ??= pod;
  return pod;
}

export function addMirrorPod(w: World, arg: string | undefined, andStatic: boolean, where: string): void {
  let mirror = w.mirror;
  if (arg !== undefined && mirror?.metadata.uid !== arg) {
    if (!/^[\w.-]+$/.test(arg)) throw new Uninterpretable(`${where}: bad mirror UID ${show(arg)}`);
    const namespace = w.main?.metadata.namespace ?? 'new';
    mirror = asMirror({ metadata: { uid: arg, name: arg, namespace }, spec: { containers: [] }, status: {} });
    w.mirror = mirror;
    w.remember(mirror);
  }
  if (!mirror) throw new Uninterpretable(`${where}: no given.mirrorPod`);
  if (!w.server.byUID(mirror.metadata.uid ?? '')) w.server.put(mirror);
  if (andStatic) {
    const staticPod = structuredClone(mirror);
    staticPod.metadata.uid = `static-${mirror.metadata.uid}`;
    staticPod.metadata.annotations = { [ConfigSourceAnnotationKey]: 'file' };
    w.remember(staticPod);
    w.podManager.add(staticPod);
  }
  w.podManager.add(mirror);
}

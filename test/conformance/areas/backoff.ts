/**
 * backoff cases: flowcontrol.Backoff schedules, the kubelet's crash-loop constructor, doBackOff timelines,
 * image-pull back-off, and (backoff-reasons.ts) how start failures become waiting reasons.
 *
 * The Backoff under test is built from `given`: through newCrashLoopBackOff when the case names feature
 * gates or a restart period (any initial/max it also states must agree), else from initialSeconds /
 * maxSeconds / expiry, else with the kubelet's defaults for what the steps exercise.
 */
import type { Pod } from '../../../src/api/core.js';
import { hashContainer } from '../../../src/kubelet/container/helpers.js';
import {
  Backoff,
  getStableKey,
  newCrashLoopBackOff,
  type HasExpiredFunc,
} from '../../../src/kubelet/backoff.js';
import { newImagePullBackOff } from '../../../src/kubelet/images/pullbackoff.js';
import { all, expectEqual } from '../compare.js';
import { Uninterpretable, fail, pass, type AreaInterpreter, type Verdict } from '../types.js';
import { interpretReasonCase } from './backoff-reasons.js';
import { isScript, parseDuration, parseScript } from './backoff-script.js';
import { runSteps } from './backoff-steps.js';
import { BackoffWorld } from './backoff-world.js';
import { isRecord, onlyKeys } from './computePodActions-build.js';

const givenKeys = [
  'initialSeconds',
  'maxSeconds',
  'expiry',
  'featureGates',
  'maxContainerRestartPeriodSeconds',
  'calls',
  'steps',
  'key',
  'eventTime',
  'pod',
  'image',
] as const;

/** "eventTime - lastUpdate > 600s" -> that function; "default ..." -> client-go's default (undefined). */
function parseExpiry(v: unknown): { fn: HasExpiredFunc | undefined; thresholdMs: number | undefined } {
  if (v === undefined) return { fn: undefined, thresholdMs: undefined };
  if (typeof v !== 'string') throw new Uninterpretable(`given.expiry: ${JSON.stringify(v)}`);
  if (/^default\b/.test(v.trim())) return { fn: undefined, thresholdMs: undefined };
  const m = /^eventTime\s*-\s*lastUpdate\s*>\s*(\S+)$/.exec(v.trim());
  if (!m) throw new Uninterpretable(`given.expiry: unknown form ${JSON.stringify(v)}`);
  const threshold = parseDuration(m[1], 'given.expiry');
  return { fn: (eventTime, lastUpdate) => eventTime - lastUpdate > threshold, thresholdMs: threshold };
}

function seconds(v: unknown, where: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Uninterpretable(`${where}: expected seconds`);
  return v;
}

function usesImageOps(steps: unknown): boolean {
  return Array.isArray(steps) && steps.some((s) => isRecord(s) && s.op === 'EnsureImageExists');
}

/** Builds the Backoff; returns a failing verdict when the case's own numbers contradict the constructor. */
function buildBackoff(g: Record<string, unknown>): { backoff: Backoff; verdict: Verdict } {
  const expiry = parseExpiry(g.expiry);
  const hasInitial = g.initialSeconds !== undefined;
  if (hasInitial !== (g.maxSeconds !== undefined)) {
    throw new Uninterpretable('given: initialSeconds and maxSeconds come together');
  }
  if (g.featureGates !== undefined || g.maxContainerRestartPeriodSeconds !== undefined || !hasInitial) {
    let backoff: Backoff;
    if (
      g.featureGates === undefined &&
      g.maxContainerRestartPeriodSeconds === undefined &&
      usesImageOps(g.steps)
    ) {
      backoff = newImagePullBackOff();
    } else {
      if (g.featureGates !== undefined && !isRecord(g.featureGates)) {
        throw new Uninterpretable('given.featureGates: expected a mapping');
      }
      const gates = (g.featureGates ?? {}) as Record<string, unknown>;
      for (const [k, v] of Object.entries(gates)) {
        if (!['ReduceDefaultCrashLoopBackOffDecay', 'KubeletCrashLoopBackOffMax'].includes(k)) {
          throw new Uninterpretable(`given.featureGates: gate ${k} is not known to the back-off`);
        }
        if (typeof v !== 'boolean') throw new Uninterpretable(`given.featureGates.${k}: expected a boolean`);
      }
      const period = g.maxContainerRestartPeriodSeconds;
      backoff = newCrashLoopBackOff({
        featureGates: gates as Record<string, boolean>,
        ...(period === undefined
          ? {}
          : { maxContainerRestartPeriodSeconds: seconds(period, 'restart period') }),
      });
    }
    const checks: Verdict[] = [];
    if (hasInitial) {
      checks.push(
        expectEqual(backoff.initialMs / 1000, seconds(g.initialSeconds, 'initialSeconds'), 'initial'),
      );
      checks.push(expectEqual(backoff.maxMs / 1000, seconds(g.maxSeconds, 'maxSeconds'), 'max'));
    }
    if (expiry.thresholdMs !== undefined) {
      // The stated expiry must be the constructor's: probe it just past and at the threshold.
      const fn = backoff.hasExpiredFunc ?? ((e: number, l: number) => e - l > 2 * backoff.maxMs);
      const ok = fn(expiry.thresholdMs + 1, 0, backoff.maxMs) && !fn(expiry.thresholdMs, 0, backoff.maxMs);
      if (!ok) checks.push(fail(`given.expiry ${JSON.stringify(g.expiry)} is not the constructor's expiry`));
    }
    return { backoff, verdict: all(...checks) };
  }
  const backoff = new Backoff(
    seconds(g.initialSeconds, 'initialSeconds') * 1000,
    seconds(g.maxSeconds, 'maxSeconds') * 1000,
    {
      ...(expiry.fn ? { hasExpired: expiry.fn } : {}),
    },
  );
  return { backoff, verdict: pass };
}

/** The pod the doBackOff and image steps act on: given.pod, with a default identity p/ns/uid and container c. */
function buildPod(g: Record<string, unknown>): Pod {
  const p = g.pod === undefined ? {} : g.pod;
  if (!isRecord(p)) throw new Uninterpretable('given.pod: expected a mapping');
  onlyKeys(p, ['name', 'namespace', 'uid', 'restartPolicy', 'containers'], 'given.pod');
  const names = p.containers === undefined ? ['c'] : p.containers;
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string')) {
    throw new Uninterpretable('given.pod.containers: expected a list of names');
  }
  const image = g.image === undefined ? 'img' : g.image;
  if (typeof image !== 'string') throw new Uninterpretable('given.image: expected a string');
  const str = (v: unknown, d: string, what: string): string => {
    if (v === undefined) return d;
    if (typeof v !== 'string') throw new Uninterpretable(`given.pod.${what}: expected a string`);
    return v;
  };
  const pod: Pod = {
    metadata: {
      name: str(p.name, 'p', 'name'),
      namespace: str(p.namespace, 'ns', 'namespace'),
      uid: str(p.uid, 'uid', 'uid'),
    },
    spec: { containers: (names as string[]).map((name) => ({ name, image })) },
  };
  if (p.restartPolicy !== undefined) {
    if (!['Always', 'OnFailure', 'Never'].includes(p.restartPolicy as string)) {
      throw new Uninterpretable(`given.pod.restartPolicy: ${JSON.stringify(p.restartPolicy)}`);
    }
    pod.spec.restartPolicy = p.restartPolicy as 'Always';
  }
  return pod;
}

/** given.key: "GetStableKey(pod, container)" or a template such as "<podName>_<namespace>_..._<hex(hash(name,image))>". */
function checkKeyForm(g: Record<string, unknown>, world: BackoffWorld): Verdict {
  if (g.key === undefined) return pass;
  if (typeof g.key !== 'string') throw new Uninterpretable('given.key: expected a string');
  if (/^GetStableKey\(\s*pod\s*,\s*container\s*\)$/.test(g.key.trim())) return pass;
  const c = world.container(undefined, 'given.key');
  const m = world.pod.metadata;
  const tokens: Record<string, string> = {
    podName: m.name ?? '',
    namespace: m.namespace ?? '',
    podUID: m.uid ?? '',
    containerName: c.name,
    'hex(hash(name,image))': hashContainer(c),
  };
  const expected = g.key.replace(/<([^>]+)>/g, (_, t: string) => {
    const k = t.replace(/\s+/g, '');
    if (!Object.hasOwn(tokens, k)) throw new Uninterpretable(`given.key: unknown token <${t}>`);
    return tokens[k]!;
  });
  return expectEqual(getStableKey(world.pod, c), expected, 'GetStableKey');
}

function checkEventTimeForm(g: Record<string, unknown>): void {
  if (g.eventTime === undefined) return;
  // Descriptive: doBackOff's reference time. Only that reading is implemented.
  if (typeof g.eventTime !== 'string' || !/finishedAt/.test(g.eventTime) || !/exited/.test(g.eventTime)) {
    throw new Uninterpretable(`given.eventTime: unknown form ${JSON.stringify(g.eventTime)}`);
  }
}

/** The single key a whole-case expectation refers to. */
function soleKey(world: BackoffWorld, what: string): string {
  if (world.keys.length !== 1) {
    throw new Uninterpretable(`expect.${what}: refers to one key but the case used ${world.keys.length}`);
  }
  return world.keys[0]!;
}

const secondsList = (ms: number[]) => ms.map((x) => x / 1000);

export const interpretBackoff: AreaInterpreter = async (c) => {
  const g = c.given;
  if (g.lastSyncResult !== undefined) return interpretReasonCase(c);
  onlyKeys(g, givenKeys, 'given');
  onlyKeys(
    c.expect,
    [
      'perStep',
      'backoffAfterEachNextSeconds',
      'getBeforeEachNextSeconds',
      'afterReset',
      'finalBackoffSeconds',
      'initialSeconds',
      'maxSeconds',
    ],
    'expect',
  );
  checkEventTimeForm(g);

  const { backoff, verdict: configVerdict } = buildBackoff(g);
  const world = new BackoffWorld(backoff, buildPod(g));
  const verdicts: Verdict[] = [configVerdict, checkKeyForm(g, world)];

  if (g.calls !== undefined) world.run(parseScript(g.calls, 'given.calls'));
  let stepExpectations = 0;
  if (g.steps !== undefined) {
    if (typeof g.steps === 'string') {
      if (!isScript(g.steps))
        throw new Uninterpretable(`given.steps: unknown form ${JSON.stringify(g.steps)}`);
      world.run(parseScript(g.steps, 'given.steps'));
    } else {
      const r = await runSteps(world, g.steps);
      verdicts.push(...r.verdicts);
      stepExpectations = r.expectations;
    }
  }

  const e = c.expect;
  let asserted = stepExpectations;
  if (e.perStep !== undefined && e.perStep !== true && e.perStep !== false) {
    throw new Uninterpretable('expect.perStep: expected a boolean');
  }
  if (e.perStep === true && stepExpectations === 0)
    throw new Uninterpretable('expect.perStep but no step expects anything');
  if (e.initialSeconds !== undefined) {
    verdicts.push(expectEqual(backoff.initialMs / 1000, e.initialSeconds, 'initialSeconds'));
    asserted++;
  }
  if (e.maxSeconds !== undefined) {
    verdicts.push(expectEqual(backoff.maxMs / 1000, e.maxSeconds, 'maxSeconds'));
    asserted++;
  }
  if (e.backoffAfterEachNextSeconds !== undefined) {
    verdicts.push(
      expectEqual(
        secondsList(world.nexts.map((n) => n.afterMs)),
        e.backoffAfterEachNextSeconds,
        'backoff after each Next',
      ),
    );
    asserted++;
  }
  if (e.getBeforeEachNextSeconds !== undefined) {
    verdicts.push(
      expectEqual(
        secondsList(world.nexts.map((n) => n.beforeMs)),
        e.getBeforeEachNextSeconds,
        'Get before each Next',
      ),
    );
    asserted++;
  }
  if (e.finalBackoffSeconds !== undefined) {
    verdicts.push(
      expectEqual(
        backoff.get(soleKey(world, 'finalBackoffSeconds')) / 1000,
        e.finalBackoffSeconds,
        'final backoff',
      ),
    );
    asserted++;
  }
  if (e.afterReset !== undefined) {
    // Runs last: it changes the state the other whole-case expectations read.
    const key = soleKey(world, 'afterReset');
    backoff.reset(key);
    verdicts.push(expectEqual(backoff.get(key) / 1000, e.afterReset, 'Get after Reset'));
    asserted++;
  }
  if (asserted === 0) throw new Uninterpretable('the case asserts nothing this interpreter knows');
  return all(...verdicts);
};

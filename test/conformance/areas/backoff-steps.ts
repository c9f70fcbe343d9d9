/**
 * Step lists of the backoff cases. A step is `{t?, op, ...arguments, expect?}`; `t` sets the fake clock
 * (seconds) before the operation. Operations:
 *
 *   <script>                                   see backoff-script.ts (`clock += 6s; GC()`, `repeat 6x: ...`)
 *   containerExited {finishedAt?, exitCode?, container?}
 *   syncPod {container?}                        doBackOff, then start the container unless in back-off
 *   EnsureImageExists {pull?: fails | fails(<error text>) | succeeds, container?}
 *   crash loop reaches backoff <duration> [for image <image>]
 *   spec image changed to <image>
 *
 * A step's sync expectations (inBackOff, backoffAfter / nextBackoff, action, error, message, event) on an
 * operation that does not sync by itself are checked against a sync at the end of that step. `why` is a
 * comment. Unknown operations, arguments and expectation keys are Uninterpretable.
 */
import { expectEqual } from '../compare.js';
import { Uninterpretable, type Verdict } from '../types.js';
import { isScript, parseDuration, parseScript, parseTime, resolveTime } from './backoff-script.js';
import type { BackoffWorld, PullStepOutcome, SyncOutcome } from './backoff-world.js';
import { isRecord, onlyKeys } from './computePodActions-build.js';

const syncExpectKeys = [
  'inBackOff',
  'backoffAfter',
  'nextBackoff',
  'action',
  'error',
  'message',
  'event',
  'why',
];
const pullExpectKeys = ['error', 'message', 'backoffAfter', 'pullAttempted', 'why'];
const scriptExpectKeys = ['entryPresent', 'why'];

function checkSync(out: SyncOutcome, e: Record<string, unknown>, where: string): Verdict[] {
  const v: Verdict[] = [];
  const r = out.result;
  if (e.inBackOff !== undefined) v.push(expectEqual(r.inBackOff, e.inBackOff, `${where} inBackOff`));
  for (const k of ['backoffAfter', 'nextBackoff'] as const) {
    if (e[k] !== undefined) v.push(expectEqual(out.backoffAfterMs / 1000, e[k], `${where} ${k}`));
  }
  if (e.action !== undefined) {
    if (e.action !== 'start container')
      throw new Uninterpretable(`${where}: unknown action ${JSON.stringify(e.action)}`);
    v.push(expectEqual(out.started, true, `${where} container started`));
  }
  if (e.error !== undefined) v.push(expectEqual(r.error ?? null, e.error, `${where} error`));
  if (e.message !== undefined) v.push(expectEqual(r.message, e.message, `${where} message`));
  if (e.event !== undefined) v.push(expectEqual(r.event?.reason ?? null, e.event, `${where} event`));
  return v;
}

function checkPull(out: PullStepOutcome, e: Record<string, unknown>, where: string): Verdict[] {
  const v: Verdict[] = [];
  const r = out.result;
  if (e.error !== undefined) v.push(expectEqual(r.ok ? null : r.error, e.error, `${where} error`));
  if (e.message !== undefined) v.push(expectEqual(r.ok ? '' : r.message, e.message, `${where} message`));
  if (e.pullAttempted !== undefined)
    v.push(expectEqual(r.pullAttempted, e.pullAttempted, `${where} pullAttempted`));
  if (e.backoffAfter !== undefined)
    v.push(expectEqual(out.backoffAfterMs / 1000, e.backoffAfter, `${where} backoffAfter`));
  return v;
}

/** `fails`, `fails(<text>)`, `succeeds`. */
function parsePull(v: unknown, where: string): { ok: boolean; message: string } | undefined {
  if (v === undefined) return undefined;
  if (v === 'succeeds') return { ok: true, message: '' };
  if (v === 'fails') return { ok: false, message: '' };
  const m = typeof v === 'string' ? /^fails\s*\((.*)\)$/s.exec(v.trim()) : null;
  if (m) return { ok: false, message: m[1]!.trim().replace(/^(["'])(.*)\1$/s, '$2') };
  throw new Uninterpretable(`${where}.pull: unknown outcome ${JSON.stringify(v)}`);
}

function countExpectations(e: Record<string, unknown>): number {
  return Object.keys(e).filter((k) => k !== 'why').length;
}

export async function runSteps(
  world: BackoffWorld,
  steps: unknown,
): Promise<{ verdicts: Verdict[]; expectations: number }> {
  if (!Array.isArray(steps)) throw new Uninterpretable('given.steps: expected a list or a script');
  const verdicts: Verdict[] = [];
  let expectations = 0;
  for (const [i, raw] of steps.entries()) {
    const where = `step ${i}`;
    if (!isRecord(raw)) throw new Uninterpretable(`${where}: expected a mapping`);
    onlyKeys(
      raw,
      ['t', 'op', 'finishedAt', 'exitCode', 'container', 'pull', 'expect', 'why', 'expectEntryPresent'],
      where,
    );
    if (raw.t !== undefined) world.setClock(resolveTime(parseTime(raw.t, `${where}.t`), world.now), where);
    if (typeof raw.op !== 'string') throw new Uninterpretable(`${where}: op must be a string`);
    const op = raw.op.trim();
    const e = raw.expect === undefined ? {} : raw.expect;
    if (!isRecord(e)) throw new Uninterpretable(`${where}.expect: expected a mapping`);
    expectations += countExpectations(e);
    const argsAllowed = (...keys: string[]) => {
      for (const k of ['finishedAt', 'exitCode', 'container', 'pull', 'expectEntryPresent']) {
        if (raw[k] !== undefined && !keys.includes(k))
          throw new Uninterpretable(`${where}: '${k}' does not apply to ${op}`);
      }
    };
    const syncIfAsked = () => {
      const wanted = Object.keys(e).filter((k) => k !== 'why');
      if (!wanted.length) return;
      onlyKeys(e, syncExpectKeys, `${where}.expect`);
      verdicts.push(...checkSync(world.syncPod(world.container(raw.container, where)), e, where));
    };

    if (op === 'syncPod') {
      argsAllowed('container');
      onlyKeys(e, syncExpectKeys, `${where}.expect`);
      verdicts.push(...checkSync(world.syncPod(world.container(raw.container, where)), e, where));
    } else if (op === 'containerExited') {
      argsAllowed('container', 'finishedAt', 'exitCode');
      const finishedAt =
        raw.finishedAt === undefined ? world.now : resolveTime(parseTime(raw.finishedAt, where), world.now);
      const exitCode = raw.exitCode === undefined ? 1 : raw.exitCode;
      if (typeof exitCode !== 'number') throw new Uninterpretable(`${where}.exitCode: expected a number`);
      world.containerExited(world.container(raw.container, where), finishedAt, exitCode);
      syncIfAsked();
    } else if (op === 'EnsureImageExists') {
      argsAllowed('container', 'pull');
      onlyKeys(e, pullExpectKeys, `${where}.expect`);
      const out = await world.ensureImage(
        world.container(raw.container, where),
        parsePull(raw.pull, where),
        where,
      );
      verdicts.push(...checkPull(out, e, where));
    } else if (/^crash loop reaches backoff /.test(op)) {
      argsAllowed('container');
      const m = /^crash loop reaches backoff (\S+)(?: for image (\S+))?$/.exec(op);
      if (!m) throw new Uninterpretable(`${where}: unknown op ${JSON.stringify(op)}`);
      const c = world.container(raw.container, where);
      if (m[2] !== undefined) c.image = m[2];
      const target = parseDuration(m[1], where);
      if (!world.crashLoopUntil(c, target)) {
        verdicts.push({ pass: false, reason: `${where}: the crash-loop schedule never reaches ${m[1]}` });
      }
      syncIfAsked();
    } else if (/^spec image changed to /.test(op)) {
      argsAllowed('container');
      const m = /^spec image changed to (\S+)$/.exec(op);
      if (!m) throw new Uninterpretable(`${where}: unknown op ${JSON.stringify(op)}`);
      world.container(raw.container, where).image = m[1];
      syncIfAsked();
    } else if (isScript(op)) {
      argsAllowed('expectEntryPresent');
      onlyKeys(e, scriptExpectKeys, `${where}.expect`);
      world.run(parseScript(op, where));
      const present = raw.expectEntryPresent ?? e.entryPresent;
      if (present !== undefined) {
        if (raw.expectEntryPresent !== undefined) expectations++;
        const key = world.keys.length === 1 ? world.keys[0]! : undefined;
        if (key === undefined) throw new Uninterpretable(`${where}: entry presence needs exactly one key`);
        verdicts.push(expectEqual(world.backoff.has(key), present, `${where} entry present`));
      }
    } else {
      throw new Uninterpretable(`${where}: unknown op ${JSON.stringify(op)}`);
    }
  }
  return { verdicts, expectations };
}

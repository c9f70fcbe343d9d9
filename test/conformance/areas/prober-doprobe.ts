/**
 * Interpreter for `worker.doProbe` cases (schema: prober_given). One step = one `ProbeWorker.doProbe()`
 * call on a worker that is never started as a loop, with:
 * - the status manager's status built from `podStatus` (null = no status; `container: null` = no status
 *   entry for the probed container; otherwise one regular container status);
 * - `deletionRequested: true` setting the pod's deletion timestamp for that step (absent/false = none);
 * - a runner that answers the step's `probeOutcome` (`error` = the execution fails).
 * After the call, `expect.result` is read from the results cache for the worker's current container ID
 * (`unset` = nothing cached, or no container ID yet); `onHold` and `resultRun` from the worker.
 */
import type {
  ContainerStatus,
  Pod,
  PodPhase,
  PodStatus,
  Probe,
  RestartPolicy,
} from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import type { ProbeOutcome } from '../../../src/kubelet/prober/doprobe.js';
import { ResultsManager } from '../../../src/kubelet/prober/results.js';
import type { ProbeType } from '../../../src/kubelet/prober/types.js';
import { ProbeWorker } from '../../../src/kubelet/prober/worker.js';
import { FakeClock } from '../../../src/util/clock.js';
import { fail, pass, Uninterpretable, type ConformanceCase, type Verdict } from '../types.js';
import { firstDifference } from '../compare.js';
import { readBool, readInt, readList, readObj, readToken, readString, type Obj } from './prober-read.js';

const PROBE_TYPES = ['liveness', 'readiness', 'startup'] as const;
const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'] as const;
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'] as const;
const OUTCOMES = ['success', 'failure', 'warning', 'error'] as const;
const RESULTS = ['success', 'failure', 'unknown', 'unset'] as const;
const PROBE_FIELDS = [
  'initialDelaySeconds',
  'periodSeconds',
  'timeoutSeconds',
  'successThreshold',
  'failureThreshold',
  'terminationGracePeriodSeconds',
] as const;
const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const;

const CONTAINER = 'test-container';
const POD_UID = 'probe-test-pod-uid';

function readProbe(v: unknown): Probe {
  const o = readObj(v, 'given.probe', [...PROBE_FIELDS, ...PROBE_HANDLERS]);
  const probe: Probe = {};
  for (const f of PROBE_FIELDS) if (o[f] !== undefined) probe[f] = readInt(o[f], `given.probe.${f}`);
  for (const h of PROBE_HANDLERS)
    if (o[h] !== undefined) Object.assign(probe, { [h]: readObj(o[h], `probe.${h}`) });
  return probe;
}

function readContainerStatus(v: unknown, now: number, what: string): ContainerStatus | undefined {
  if (v === null || v === undefined) return undefined;
  const o = readObj(v, what, ['id', 'state', 'started', 'runningForSeconds', 'exitCode']);
  const state = readToken(o.state, ['running', 'waiting', 'terminated'] as const, `${what}.state`);
  const status: ContainerStatus = {
    name: CONTAINER,
    containerID: readString(o.id, `${what}.id`),
    ready: false,
    restartCount: 0,
    started: readBool(o.started, `${what}.started`, false),
  };
  switch (state) {
    case 'running': {
      const seconds = readInt(o.runningForSeconds, `${what}.runningForSeconds`, 0);
      status.state = { running: { startedAt: new Date(now - seconds * 1000).toISOString() } };
      break;
    }
    case 'waiting':
      status.state = { waiting: {} };
      break;
    case 'terminated':
      status.state = { terminated: { exitCode: readInt(o.exitCode, `${what}.exitCode`, 0) } };
      break;
  }
  if (state !== 'running' && o.runningForSeconds !== undefined) {
    throw new Uninterpretable(`${what}: runningForSeconds given for a ${state} container`);
  }
  if (state !== 'terminated' && o.exitCode !== undefined) {
    throw new Uninterpretable(`${what}: exitCode given for a ${state} container`);
  }
  return status;
}

function readPodStatus(v: unknown, now: number, what: string): PodStatus | undefined {
  if (v === null) return undefined;
  const o = readObj(v, what, ['phase', 'container']);
  const container = readContainerStatus(o.container, now, `${what}.container`);
  return {
    phase: readToken(o.phase, PHASES, `${what}.phase`) as PodPhase,
    containerStatuses: container ? [container] : [],
  };
}

interface StepExpect {
  continue: boolean;
  result: (typeof RESULTS)[number];
  onHold?: boolean;
  resultRun?: number;
}

function readStepExpect(v: unknown, what: string): StepExpect {
  const o = readObj(v, what, ['continue', 'result', 'onHold', 'resultRun']);
  const e: StepExpect = {
    continue: readBool(o.continue, `${what}.continue`),
    result: readToken(o.result, RESULTS, `${what}.result`),
  };
  if (o.onHold !== undefined) e.onHold = readBool(o.onHold, `${what}.onHold`);
  if (o.resultRun !== undefined) e.resultRun = readInt(o.resultRun, `${what}.resultRun`);
  return e;
}

export async function interpretDoProbe(c: ConformanceCase): Promise<Verdict> {
  const g = readObj(c.given, 'given', ['function', 'probeType', 'probe', 'podRestartPolicy', 'steps']);
  const ex = readObj(c.expect, 'expect', ['perStep']);
  if (ex.perStep !== true)
    throw new Uninterpretable(`expect.perStep: expected true, got ${String(ex.perStep)}`);
  const probeType: ProbeType = readToken(g.probeType, PROBE_TYPES, 'given.probeType');
  const probe = readProbe(g.probe);
  const restartPolicy =
    g.podRestartPolicy === undefined || g.podRestartPolicy === null
      ? undefined
      : (readToken(g.podRestartPolicy, RESTART_POLICIES, 'given.podRestartPolicy') as RestartPolicy);
  const steps = readList(g.steps, 'given.steps');
  if (steps.length === 0) throw new Uninterpretable('given.steps is empty');

  const clock = new FakeClock();
  const basePod: Pod = {
    metadata: { uid: POD_UID, name: 'probe-test-pod', namespace: 'default' },
    spec: {
      restartPolicy,
      containers: [{ name: CONTAINER, image: 'test', [`${probeType}Probe`]: probe }],
    },
  };
  const results = new ResultsManager(probeType);
  let status: PodStatus | undefined;
  let outcome: (typeof OUTCOMES)[number] | undefined;
  let runnerCalled = false;
  const worker = new ProbeWorker(basePod, basePod.spec.containers[0]!, probeType, {
    clock,
    random: () => 0,
    getPodStatus: (uid) => (uid === asPodUID(POD_UID) ? status : undefined),
    results,
    runner: (): Promise<ProbeOutcome> => {
      runnerCalled = true;
      if (outcome === undefined || outcome === 'error') return Promise.reject(new Error('probe error'));
      return Promise.resolve(outcome);
    },
    proberStartedAt: clock.now() - 3_600_000,
  });

  for (const [i, raw] of steps.entries()) {
    const what = `steps[${i}]`;
    const step: Obj = readObj(raw, what, ['podStatus', 'probeOutcome', 'deletionRequested', 'expect']);
    if (!('podStatus' in step))
      throw new Uninterpretable(`${what}: podStatus is required (null = no status)`);
    status = readPodStatus(step.podStatus, clock.now(), `${what}.podStatus`);
    outcome =
      step.probeOutcome === undefined
        ? undefined
        : readToken(step.probeOutcome, OUTCOMES, `${what}.probeOutcome`);
    const deleting = readBool(step.deletionRequested, `${what}.deletionRequested`, false);
    worker.setPod(
      deleting
        ? {
            ...basePod,
            metadata: { ...basePod.metadata, deletionTimestamp: new Date(clock.now()).toISOString() },
          }
        : basePod,
    );
    const expected = readStepExpect(step.expect, `${what}.expect`);

    runnerCalled = false;
    const keepGoing = await worker.doProbe();
    if (runnerCalled && outcome === undefined) {
      throw new Uninterpretable(`${what}: the probe ran but the step gives no probeOutcome`);
    }
    const id = worker.containerID;
    const actual: Obj = {
      continue: keepGoing,
      result: (id === undefined ? undefined : results.get(id)) ?? 'unset',
    };
    if (expected.onHold !== undefined) actual.onHold = worker.onHold;
    if (expected.resultRun !== undefined) actual.resultRun = worker.resultRun;
    const d = firstDifference(actual, expected);
    if (d) return fail(`${what}: ${d}`);
  }
  return pass;
}

import { expect } from 'chai';
import type { ContainerStatus, PodSpec } from '../../../../src/api/core.js';
import { getPhase } from '../../../../src/kubelet/status/phase.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';

const running = (name: string, started?: boolean): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { running: {} },
  ...(started === undefined ? {} : { started }),
});
const terminated = (name: string, exitCode: number): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode } },
});
const waiting = (name: string, lastExit?: number): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { waiting: {} },
  ...(lastExit === undefined ? {} : { lastState: { terminated: { exitCode: lastExit } } }),
});

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('getPhase', () => {
  it('is Pending for a pod without containers (a defined result, not an error)', () => {
    expect(getPhase({ containers: [] }, [], false, false)).to.equal('Pending');
    expect(getPhase({ containers: [] }, [], true, true)).to.equal('Pending');
  });

  it('treats null/undefined status lists and null entries as "no status"', () => {
    const spec: PodSpec = { containers: [{ name: 'a' }] };
    expect(getPhase(spec, null, false, false)).to.equal('Pending');
    expect(getPhase(spec, undefined, false, false)).to.equal('Pending');
    const withNull = [null, running('a')] as unknown as ContainerStatus[];
    expect(getPhase(spec, withNull, false, true)).to.equal('Running');
  });

  it('counts a status whose state is empty as unknown', () => {
    const spec: PodSpec = { containers: [{ name: 'a' }, { name: 'b' }] };
    const empty: ContainerStatus = { name: 'b', ready: false, restartCount: 0, state: {} };
    expect(getPhase(spec, [running('a'), empty], false, true)).to.equal('Pending');
  });

  it('prefers running over terminated when a malformed status sets both', () => {
    const spec: PodSpec = { restartPolicy: 'Never', containers: [{ name: 'a' }] };
    const both: ContainerStatus = {
      name: 'a',
      ready: false,
      restartCount: 0,
      state: { running: {}, terminated: { exitCode: 1 } },
    };
    expect(getPhase(spec, [both], false, true)).to.equal('Running');
  });

  it('rejects an unknown restart policy and duplicate names with InvalidArgument', () => {
    const bad = { restartPolicy: 'Sometimes', containers: [{ name: 'a' }] } as unknown as PodSpec;
    expect(isInvalidArgument(thrown(() => getPhase(bad, [], false, false)))).to.equal(true);
    const dup: PodSpec = { initContainers: [{ name: 'a' }], containers: [{ name: 'a' }] };
    expect(isInvalidArgument(thrown(() => getPhase(dup, [], false, false)))).to.equal(true);
  });

  it('keeps a pod whose sidecar restarts Running once initialized, Pending before', () => {
    const spec: PodSpec = {
      initContainers: [{ name: 's', restartPolicy: 'Always' }],
      containers: [{ name: 'a' }],
    };
    const statuses = [running('s', false), running('a')];
    expect(getPhase(spec, statuses, false, true)).to.equal('Running');
    expect(getPhase(spec, statuses, false, false)).to.equal('Pending');
  });

  it('a waiting regular container is stopped but never succeeded, even after exit 0', () => {
    // v1.37 (ContainerRestartRules): under OnFailure an exit 0 does not restart, so the waiting container
    // is stopped for good, and since it is not counted as succeeded the pod is Failed.
    const spec: PodSpec = { restartPolicy: 'OnFailure', containers: [{ name: 'a' }] };
    expect(getPhase(spec, [waiting('a', 0)], false, true)).to.equal('Failed');
    expect(getPhase(spec, [waiting('a', 1)], false, true)).to.equal('Running');
    expect(getPhase(spec, [terminated('a', 0)], false, true)).to.equal('Succeeded');
    expect(getPhase({ ...spec, restartPolicy: 'Always' }, [waiting('a', 0)], false, true)).to.equal(
      'Running',
    );
  });

  it('fails on a failed regular init container only under Never', () => {
    const init = { initContainers: [{ name: 'i' }], containers: [{ name: 'a' }] };
    expect(getPhase({ ...init, restartPolicy: 'Never' }, [waiting('i', 2)], false, false)).to.equal('Failed');
    expect(getPhase({ ...init, restartPolicy: 'OnFailure' }, [waiting('i', 2)], false, false)).to.equal(
      'Pending',
    );
  });

  it('does not let podIsTerminal make a static pod terminal', () => {
    const spec: PodSpec = { restartPolicy: 'Always', containers: [{ name: 'a' }] };
    expect(getPhase(spec, [terminated('a', 1)], true, true)).to.equal('Failed');
    expect(getPhase(spec, [terminated('a', 1)], true, true, { staticPod: true })).to.equal('Running');
  });

  it('treats an unset restart policy as Always', () => {
    const spec: PodSpec = { containers: [{ name: 'a' }] };
    expect(getPhase(spec, [terminated('a', 0)], false, true)).to.equal('Running');
  });
});

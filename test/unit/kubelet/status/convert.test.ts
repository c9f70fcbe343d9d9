import { expect } from 'chai';
import type { Container, ContainerStatus, Pod } from '../../../../src/api/core.js';
import { asContainerID, type KubeContainerStatus } from '../../../../src/kubelet/container/types.js';
import { ReasonCache } from '../../../../src/kubelet/reasoncache.js';
import {
  convertToAPIContainerStatuses,
  MessageContainerUnknown,
  MessageContainerVanished,
} from '../../../../src/kubelet/status/convert.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';

const UID = 'uid-1';
const pod = (containers: Container[], extra: Partial<Pod['spec']> = {}, deleted = false): Pod => ({
  metadata: {
    uid: UID,
    name: 'p',
    namespace: 'ns',
    ...(deleted ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec: { containers, ...extra },
});
const rec = (
  name: string,
  state: KubeContainerStatus['state'],
  extra: Partial<KubeContainerStatus> = {},
): KubeContainerStatus => ({
  id: asContainerID(`${name}-${state}-${extra.exitCode ?? ''}`),
  runtimeType: 'containerd',
  name,
  state,
  restartCount: 0,
  hash: 'h',
  ...extra,
});
const wasRunning = (name: string, restartCount = 0): ContainerStatus => ({
  name,
  ready: true,
  restartCount,
  state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
});
const opts = (containers: Container[], extra = {}) => ({
  containers,
  hasInitContainers: false,
  isInitContainer: false,
  ...extra,
});

describe('convertToAPIContainerStatuses', () => {
  it('defaults to PodInitializing when the pod has init containers', () => {
    const cs = [{ name: 'a' }];
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: [] },
      opts(cs, { hasInitContainers: true }),
    );
    expect(out[0]?.state).to.deep.equal({ waiting: { reason: 'PodInitializing' } });
  });

  it('infers a vanished running container as terminated 137, counting a restart unless deleted', () => {
    const cs = [{ name: 'a' }];
    const o = opts(cs, { previousStatuses: [wasRunning('a', 4)], hasInitContainers: true });
    const live = convertToAPIContainerStatuses(pod(cs), { containers: [] }, o)[0];
    expect(live?.state).to.deep.equal({ waiting: { reason: 'PodInitializing' } });
    expect(live?.lastState?.terminated).to.deep.equal({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: MessageContainerVanished,
    });
    expect(live?.restartCount).to.equal(5);
    const deleted = convertToAPIContainerStatuses(pod(cs, {}, true), { containers: [] }, o)[0];
    expect(deleted?.restartCount).to.equal(4);
  });

  it('does not overwrite an existing last termination of a vanished container', () => {
    const cs = [{ name: 'a' }];
    const prev: ContainerStatus = { ...wasRunning('a', 1), lastState: { terminated: { exitCode: 3 } } };
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: [] },
      opts(cs, { previousStatuses: [prev] }),
    )[0];
    expect(out?.lastState).to.deep.equal({ terminated: { exitCode: 3 } });
    expect(out?.restartCount).to.equal(1);
  });

  it('converts times to RFC3339 and keeps only the two newest records per name', () => {
    const cs = [{ name: 'a' }];
    const records = [
      rec('a', 'running', { startedAt: 1_700_000_000_500, restartCount: 2 }),
      rec('a', 'exited', { exitCode: 1, startedAt: 1_699_999_000_000, finishedAt: 1_699_999_999_999 }),
      rec('a', 'exited', { exitCode: 7 }),
    ];
    const out = convertToAPIContainerStatuses(pod(cs), { containers: records }, opts(cs))[0];
    expect(out?.state).to.deep.equal({ running: { startedAt: '2023-11-14T22:13:20Z' } });
    expect(out?.restartCount).to.equal(2);
    expect(out?.containerID).to.equal('containerd://a-running-');
    expect(out?.lastState?.terminated).to.deep.equal({
      exitCode: 1,
      containerID: 'containerd://a-exited-1',
      startedAt: '2023-11-14T21:56:40Z',
      finishedAt: '2023-11-14T22:13:19Z',
    });
  });

  it('orders records by creation time when every record has one', () => {
    const cs = [{ name: 'a' }];
    const records = [
      rec('a', 'exited', { exitCode: 1, createdAt: 10 }),
      rec('a', 'running', { createdAt: 20 }),
    ];
    const out = convertToAPIContainerStatuses(pod(cs), { containers: records }, opts(cs))[0];
    expect(out?.state?.running).to.not.equal(undefined);
    expect(out?.lastState?.terminated?.exitCode).to.equal(1);
  });

  it('reads created as a reasonless waiting, and unknown without a running past as waiting', () => {
    const cs = [{ name: 'a' }, { name: 'b' }];
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: [rec('a', 'created'), rec('b', 'unknown')] },
      opts(cs),
    );
    expect(out.map((s) => s.state)).to.deep.equal([{ waiting: {} }, { waiting: {} }]);
  });

  it('turns unknown after running into a ContainerStatusUnknown termination', () => {
    const cs = [{ name: 'a' }];
    const out = convertToAPIContainerStatuses(
      pod(cs, { restartPolicy: 'Never' }),
      { containers: [rec('a', 'unknown')] },
      opts(cs, { previousStatuses: [wasRunning('a', 2)] }),
    )[0];
    expect(out?.state?.terminated).to.deep.equal({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: MessageContainerUnknown,
    });
    expect(out?.restartCount).to.equal(3);
  });

  it('reuses a previous terminated status verbatim when the runtime lost the container', () => {
    const cs = [{ name: 'a' }];
    const prev: ContainerStatus = {
      name: 'a',
      ready: false,
      restartCount: 2,
      state: { terminated: { exitCode: 0, reason: 'Completed' } },
      containerID: 'containerd://old',
    };
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: [] },
      opts(cs, { previousStatuses: [prev] }),
    );
    expect(out[0]).to.deep.equal(prev);
    expect(out[0]).to.not.equal(prev);
  });

  it('shows cached start failures with their message, moving a termination to lastState', () => {
    const cs = [{ name: 'a' }, { name: 'b' }];
    const cache = new ReasonCache();
    cache.add(UID, 'a', 'CrashLoopBackOff', 'back-off 10s');
    cache.add(UID, 'b', 'ErrImagePull', '');
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: [rec('a', 'exited', { exitCode: 1 })] },
      opts(cs, { reasonCache: cache }),
    );
    expect(out[0]?.state).to.deep.equal({ waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s' } });
    expect(out[0]?.lastState?.terminated?.exitCode).to.equal(1);
    expect(out[1]?.state).to.deep.equal({ waiting: { reason: 'ErrImagePull' } });
  });

  it('ignores cached failures of containers that will not restart (deletion, running, init exited 0)', () => {
    const cs = [{ name: 'a' }];
    const cache = new ReasonCache();
    cache.add(UID, 'a', 'CrashLoopBackOff');
    const exited = { containers: [rec('a', 'exited', { exitCode: 0 })] };
    expect(
      convertToAPIContainerStatuses(pod(cs, {}, true), exited, opts(cs, { reasonCache: cache }))[0]?.state
        ?.terminated,
    ).to.not.equal(undefined);
    const init = convertToAPIContainerStatuses(
      pod([], { initContainers: cs }),
      exited,
      opts(cs, { reasonCache: cache, isInitContainer: true, hasInitContainers: true }),
    );
    expect(init[0]?.state?.terminated?.exitCode).to.equal(0);
    const running = { containers: [rec('a', 'running')] };
    expect(
      convertToAPIContainerStatuses(pod(cs), running, opts(cs, { reasonCache: cache }))[0]?.state?.running,
    ).to.not.equal(undefined);
  });

  it('sorts regular statuses by name and keeps init statuses in spec order', () => {
    const cs = [{ name: 'b' }, { name: 'a' }];
    expect(
      convertToAPIContainerStatuses(pod(cs), { containers: [] }, opts(cs)).map((s) => s.name),
    ).to.deep.equal(['a', 'b']);
    const init = convertToAPIContainerStatuses(
      pod([], { initContainers: cs }),
      { containers: [] },
      opts(cs, { isInitContainer: true }),
    );
    expect(init.map((s) => s.name)).to.deep.equal(['b', 'a']);
  });

  it('does not mutate its inputs and ignores records of other containers', () => {
    const cs = [{ name: 'a' }];
    const prev = [wasRunning('a')];
    const records = [rec('zz', 'running'), rec('a', 'exited', { exitCode: 2 })];
    const before = JSON.stringify({ prev, records });
    const out = convertToAPIContainerStatuses(
      pod(cs),
      { containers: records },
      opts(cs, { previousStatuses: prev }),
    );
    expect(out.map((s) => s.name)).to.deep.equal(['a']);
    expect(JSON.stringify({ prev, records })).to.equal(before);
  });

  it('rejects a pod without metadata or with an invalid spec as InvalidArgument', () => {
    const noMeta = { spec: { containers: [] } } as unknown as Pod;
    expect(() => convertToAPIContainerStatuses(noMeta, { containers: [] }, opts([])))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    const dup = pod([{ name: 'a' }, { name: 'a' }]);
    expect(() => convertToAPIContainerStatuses(dup, { containers: [] }, opts([])))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });

  it('skips malformed runtime records instead of crashing', () => {
    const cs = [{ name: 'a' }];
    const records = [
      null,
      { state: 'running' },
      rec('a', 'bogus' as KubeContainerStatus['state']),
    ] as unknown as KubeContainerStatus[];
    const out = convertToAPIContainerStatuses(pod(cs), { containers: records }, opts(cs));
    expect(out[0]?.state).to.deep.equal({ waiting: {} });
  });
});

// In-place resize decisions (src/kubelet/kuberuntime/resize.ts): update in place or restart per resizePolicy,
// the MinShares / MinMilliCPULimit equalities, and when a resize counts as in progress.
import { expect } from 'chai';
import type { Container } from '../../../../src/api/core.js';
import { computePodActions } from '../../../../src/kubelet/kuberuntime/actions.js';
import {
  computePodResizeActions,
  containerResizeAction,
  decreasedMemoryLimit,
  isPodResizeInProgress,
  memoryDecreaseError,
  type ContainerToUpdate,
} from '../../../../src/kubelet/kuberuntime/resize.js';
import { doPodResizeAction } from '../../../../src/kubelet/kuberuntime/shell/resizepod.js';
import { SyncResultBuilder } from '../../../../src/kubelet/kuberuntime/shell/syncresult.js';
import type { ContainerStats, LinuxContainerResources } from '../../../../src/runtime/types.js';
import { asContainerID } from '../../../../src/kubelet/container/types.js';
import { silentLogger } from '../../../../src/util/logger.js';
import { pod, probes, record, runtime, sandbox } from './fixtures.js';

function app(
  cpu: string,
  memory: string,
  policy?: { cpu?: 'RestartContainer'; memory?: 'RestartContainer' },
): Container {
  const c: Container = {
    name: 'app',
    image: 'busybox',
    resources: { requests: { cpu, memory }, limits: { cpu, memory } },
  };
  const rp = Object.entries(policy ?? {}).map(([resourceName, restartPolicy]) => ({
    resourceName,
    restartPolicy,
  }));
  if (rp.length > 0) c.resizePolicy = rp;
  return c;
}

/** What containerd reports for a container created with 500m / 64Mi. */
const applied500 = { cpuRequestMilli: 500, cpuLimitMilli: 500, memoryLimitBytes: 64 * 1024 * 1024 };

function plan(spec: Container, resources = applied500) {
  const p = pod({ containers: [spec] });
  const status = runtime([sandbox()], [record('app', 'running', { spec, resources })]);
  return computePodResizeActions(p, status, computePodActions(p, status, probes()));
}

describe('in-place resize decisions', () => {
  it('does nothing when the runtime already applies the allocation', () => {
    const r = plan(app('500m', '64Mi'));
    expect(r.toUpdate).to.deep.equal([]);
    expect(r.actions.containersToKill.size).to.equal(0);
  });

  it('updates cpu and memory in place by default, with the kubelet conversions', () => {
    const r = plan(app('1', '128Mi'));
    expect(r.toUpdate).to.have.length(1);
    expect(r.toUpdate[0]!.resources).to.deep.include({
      cpuShares: 1024,
      cpuQuota: 100_000,
      cpuPeriod: 100_000,
      memoryLimitInBytes: 128 * 1024 * 1024,
    });
    expect(r.actions.containersToStart).to.deep.equal([]);
  });

  it('restarts a container whose policy says RestartContainer for a changed resource, and only then', () => {
    const memRestart = plan(app('500m', '128Mi', { memory: 'RestartContainer' }));
    expect(memRestart.toUpdate).to.deep.equal([]);
    expect(memRestart.actions.containersToStart).to.deep.equal([0]);
    expect([...memRestart.actions.containersToKill.values()].map((k) => k.message)).to.deep.equal([
      'Container app resize requires restart',
    ]);
    // Only cpu changed: the memory policy does not apply.
    const cpuOnly = plan(app('1', '64Mi', { memory: 'RestartContainer' }));
    expect(cpuOnly.toUpdate).to.have.length(1);
    expect(cpuOnly.actions.containersToKill.size).to.equal(0);
  });

  it('leaves a container alone when the runtime reports no resources, or when the pod is being killed', () => {
    const spec = app('1', '128Mi');
    const p = pod({ containers: [spec] });
    const noInfo = runtime([sandbox()], [record('app', 'running', { spec })]);
    expect(computePodResizeActions(p, noInfo, computePodActions(p, noInfo, probes())).toUpdate).to.deep.equal(
      [],
    );
    expect(isPodResizeInProgress(p, noInfo)).to.equal(false);
    const deleting = pod({ containers: [spec], deleting: true });
    const st = runtime([sandbox()], [record('app', 'running', { spec, resources: applied500 })]);
    expect(
      computePodResizeActions(deleting, st, computePodActions(deleting, st, probes())).toUpdate,
    ).to.deep.equal([]);
  });

  it('counts requests at or below MinShares and limits at or below 10m as equal', () => {
    const c: Container = {
      name: 'app',
      image: 'busybox',
      resources: { requests: { cpu: '1m' }, limits: { cpu: '5m' } },
    };
    expect(
      containerResizeAction(
        c,
        { cpuRequestMilli: 1, cpuLimitMilli: 5, memoryLimitBytes: 0 },
        { cpuRequestMilli: 2, cpuLimitMilli: 10 },
      ),
    ).to.equal('none');
    expect(
      containerResizeAction(
        c,
        { cpuRequestMilli: 3, cpuLimitMilli: 5, memoryLimitBytes: 0 },
        { cpuRequestMilli: 2, cpuLimitMilli: 10 },
      ),
    ).to.equal('update');
  });

  it('is in progress until what the runtime reports equals the allocation', () => {
    const spec = app('1', '64Mi');
    const p = pod({ containers: [spec] });
    expect(
      isPodResizeInProgress(
        p,
        runtime([sandbox()], [record('app', 'running', { spec, resources: applied500 })]),
      ),
    ).to.equal(true);
    const caught = { ...applied500, cpuRequestMilli: 1000, cpuLimitMilli: 1000 };
    expect(
      isPodResizeInProgress(p, runtime([sandbox()], [record('app', 'running', { spec, resources: caught })])),
    ).to.equal(false);
    // A container that is not running is sized when it starts again.
    expect(
      isPodResizeInProgress(
        p,
        runtime([sandbox()], [record('app', 'exited', { spec, resources: applied500 })]),
      ),
    ).to.equal(false);
  });

  it('resizes sidecars like regular containers', () => {
    const side: Container = { ...app('1', '64Mi'), name: 'side', restartPolicy: 'Always' };
    const p = pod({ containers: ['main'], init: [side] });
    const status = runtime(
      [sandbox()],
      [record('side', 'running', { spec: side, resources: applied500 }), record('main', 'running')],
    );
    const r = computePodResizeActions(p, status, computePodActions(p, status, probes()));
    expect(r.toUpdate.map((u) => u.name)).to.deep.equal(['side']);
  });

  describe('init containers that run to completion (InPlacePodVerticalScalingInitContainers)', () => {
    const init = (policy?: { cpu?: 'RestartContainer' }): Container => ({
      ...app('1', '128Mi', policy),
      name: 'init',
    });
    const table: {
      name: string;
      state: 'running' | 'exited';
      regular?: 'running';
      policy?: { cpu?: 'RestartContainer' };
      toUpdate: string[];
      kill: string[];
      initStarts: number[];
      inProgress: boolean;
    }[] = [
      {
        name: 'running, resized: updated in place, the pod not yet initialized',
        state: 'running',
        toUpdate: ['init'],
        kill: [],
        initStarts: [],
        inProgress: true,
      },
      {
        // The API refuses to resize such a container; the kubelet would still restart it, as here.
        name: 'running, RestartContainer for cpu: killed and started again',
        state: 'running',
        policy: { cpu: 'RestartContainer' },
        toUpdate: [],
        kill: ['init'],
        initStarts: [0],
        inProgress: true,
      },
      {
        name: 'exited: nothing to actuate, nothing in progress',
        state: 'exited',
        regular: 'running',
        toUpdate: [],
        kill: [],
        initStarts: [],
        inProgress: false,
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const spec = init(t.policy);
        const p = pod({ containers: ['main'], init: [spec] });
        const records = [record('init', t.state, { spec, resources: applied500 })];
        if (t.regular) records.push(record('main', t.regular));
        const status = runtime([sandbox()], records);
        const r = computePodResizeActions(p, status, computePodActions(p, status, probes()));
        expect(r.toUpdate.map((u) => u.name)).to.deep.equal(t.toUpdate);
        expect(
          [...r.actions.containersToKill.values()].map((k) => [k.name, k.kind, k.message]),
        ).to.deep.equal(t.kill.map((n) => [n, 'init', `Container ${n} resize requires restart`]));
        expect(r.actions.initContainersToStart).to.deep.equal(t.initStarts);
        expect(r.actions.containersToStart).to.deep.equal([]);
        expect(isPodResizeInProgress(p, status)).to.equal(t.inProgress);
      });
    }

    it('updates it with the conversions of a regular container', () => {
      const spec = init();
      const p = pod({ containers: ['main'], init: [spec] });
      const status = runtime([sandbox()], [record('init', 'running', { spec, resources: applied500 })]);
      const r = computePodResizeActions(p, status, computePodActions(p, status, probes()));
      expect(r.toUpdate[0]!.resources).to.deep.include({
        cpuShares: 1024,
        cpuQuota: 100_000,
        memoryLimitInBytes: 128 * 1024 * 1024,
      });
      expect(r.toUpdate[0]!.currentMemoryLimitBytes).to.equal(64 * 1024 * 1024);
    });
  });

  describe('memory limit decreases', () => {
    const upd = (name: string, next: number, current: number): ContainerToUpdate => ({
      id: asContainerID(`id-${name}`),
      name,
      resources: { memoryLimitInBytes: next },
      currentMemoryLimitBytes: current,
    });

    it('checks only limits that go down or appear', () => {
      expect(decreasedMemoryLimit(upd('a', 100, 200))).to.equal(100);
      expect(decreasedMemoryLimit(upd('a', 100, 0))).to.equal(100);
      expect(decreasedMemoryLimit(upd('a', 300, 200))).to.equal(undefined);
      expect(decreasedMemoryLimit(upd('a', 0, 200))).to.equal(undefined);
    });

    it('refuses a limit at or below the usage, or with no usage known, in the kubelet words', () => {
      expect(memoryDecreaseError([{ name: 'a', limitBytes: 100, usageBytes: 99 }])).to.equal(undefined);
      expect(memoryDecreaseError([{ name: 'a', limitBytes: 100, usageBytes: 100 }])).to.equal(
        'cannot decrease memory limits: attempting to set container "a" memory limit (100) below current usage (100)',
      );
      expect(
        memoryDecreaseError([
          { name: 'a', limitBytes: 100, usageBytes: 150 },
          { name: 'b', limitBytes: 100, usageBytes: undefined },
        ]),
      ).to.equal(
        'cannot decrease memory limits: [attempting to set container "a" memory limit (100) below current usage (150), missing container "b" memory usage]',
      );
    });

    it('updates nothing when a decrease is refused, and everything when it is not', async () => {
      const updated: string[] = [];
      const usage = new Map([['id-a', 150]]);
      const runtime = {
        containerStats: async (id: string): Promise<ContainerStats> => ({
          memory: { timestamp: 0n, usageBytes: usage.get(id) ?? 10 },
        }),
        updateContainerResources: async (id: string, _r: LinuxContainerResources) => void updated.push(id),
      };
      const ctx = { runtime, logger: silentLogger } as unknown as Parameters<typeof doPodResizeAction>[0];
      const refused = new SyncResultBuilder();
      await doPodResizeAction(ctx, 'ns/p', [upd('b', 300, 200), upd('a', 100, 200)], refused);
      expect(updated).to.deep.equal([]);
      expect(refused.results[0]).to.include({ action: 'ResizePodInPlace', error: 'ResizePodInPlaceError' });
      expect(refused.results[0]!.message).to.match(/memory limit \(100\) below current usage \(150\)$/);
      usage.set('id-a', 50);
      const ok = new SyncResultBuilder();
      await doPodResizeAction(ctx, 'ns/p', [upd('b', 300, 200), upd('a', 100, 200)], ok);
      expect(updated).to.deep.equal(['id-b', 'id-a']);
      expect(ok.results[0]!.error).to.equal(undefined);
    });
  });
});

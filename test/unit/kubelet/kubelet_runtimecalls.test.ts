// How often a pod sync reaches the runtime (issue #20): a pod worker reads only the PLEG's cache, and a sync
// that changed something inspects its pod once more; a sync with nothing to do makes no runtime call at all.
// The runtime is the simulated one with every method counted.
import { expect } from 'chai';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import type { SyncLoopInput } from '../../../src/kubelet/kubelet_syncloop.js';
import type { SimRuntime } from '../../../src/runtime/sim/index.js';
import { advance, flush, mkPod, setup, start } from './kubelet-fixtures.js';

const READS = new Set([
  'listPodSandbox',
  'podSandboxStatus',
  'listContainers',
  'containerStatus',
  'imageStatus',
]);

/** The Runtime interface's methods (runtime/types.ts). */
const RUNTIME_METHODS = [
  'version',
  'status',
  'runPodSandbox',
  'stopPodSandbox',
  'removePodSandbox',
  'podSandboxStatus',
  'listPodSandbox',
  'createContainer',
  'startContainer',
  'stopContainer',
  'removeContainer',
  'listContainers',
  'containerStatus',
  'execSync',
  'exec',
  'attach',
  'portForward',
  'pullImage',
  'imageStatus',
  'listImages',
  'removeImage',
] as const;

/** Replaces every runtime method with one that counts its calls. */
function countCalls(runtime: SimRuntime): { calls: Map<string, number>; reset(): void; total(): number } {
  const calls = new Map<string, number>();
  const target = runtime as unknown as Record<string, unknown>;
  for (const name of RUNTIME_METHODS) {
    const fn = target[name];
    if (typeof fn !== 'function') continue;
    target[name] = (...args: unknown[]) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return (fn as (...a: unknown[]) => unknown).apply(runtime, args);
    };
  }
  return {
    calls,
    reset: () => calls.clear(),
    total: () => [...calls.values()].reduce((a, b) => a + b, 0),
  };
}

describe('Kubelet: runtime calls per pod sync', () => {
  it('a steady-state sync makes no runtime call; one that acts adds one relist of its pod, whose events come at once', async () => {
    const { clock, runtime, api, deps } = setup();
    const pod = mkPod('a', {
      containers: [
        { name: 'app', image: 'img:1' },
        { name: 'side', image: 'img:1' },
      ],
    });
    api.pods.set('p-a', pod);
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 3_000);
    const counter = countCalls(runtime);

    // A change the pod worker syncs (a label) that needs no action, right after a relist: zero calls.
    clock.advance(1_000);
    await flush();
    counter.reset();
    const relabelled = {
      ...pod,
      metadata: { ...pod.metadata, labels: { touched: 'yes' }, resourceVersion: '2' },
    };
    api.pods.set('p-a', relabelled);
    k.handlePodUpdate(relabelled, pod);
    await flush();
    expect(Object.fromEntries(counter.calls), 'steady-state sync').to.deep.equal({});

    // A container dies: the PLEG sees it (the relist's own reads), the worker restarts it (the mutations),
    // then relists its pod (PLEGOnDemandRelist: one listing of that pod and one inspection).
    const side = (await runtime.listContainers()).find((c) => c.metadata.name === 'side')!;
    await runtime.stopContainer(side.id, 0);
    await flush();
    counter.reset();
    const seen: string[] = [];
    const loop = (k as unknown as { loop: { handle(i: SyncLoopInput): Promise<void> } }).loop;
    const handle = loop.handle.bind(loop);
    loop.handle = (i) => {
      if (i.source === 'pleg') seen.push(`${i.event.type}@${clock.now()}`);
      return handle(i);
    };
    clock.advance(1_000); // the relist
    const relistAt = clock.now();
    await flush(40);
    // The new container's start reached the sync loop without waiting for the next relist.
    expect(seen).to.include(`ContainerStarted@${relistAt}`);
    expect(seen[0]).to.equal(`ContainerDied@${relistAt}`);
    const calls = Object.fromEntries(counter.calls);
    if (process.env.SHOW_CALLS) console.log(JSON.stringify(calls));
    const mutations = Object.entries(calls).filter(([m]) => !READS.has(m));
    expect(Object.fromEntries(mutations)).to.deep.equal({ createContainer: 1, startContainer: 1 });
    // Reads: two PLEG listings (sandboxes, containers), one inspection by the PLEG of the changed pod, and
    // the relist of the pod after the worker's actions: one listing of it (sandboxes, containers) and one
    // inspection (each: list sandboxes, sandbox status, list containers, container statuses). The follow-up
    // sync its ContainerStarted brings reads only the cache.
    const reads = Object.entries(calls).filter(([m]) => READS.has(m));
    const perInspection = 1 + 1 + 1 + 3; // 3 containers: app, side (exited), side (new)
    expect(reads.reduce((n, [, c]) => n + c, 0)).to.be.at.most(2 + 2 + 2 * perInspection);
    await k.stop(0);
  });
});

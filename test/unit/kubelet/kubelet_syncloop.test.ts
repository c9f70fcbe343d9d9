// The sync loop (src/kubelet/kubelet_syncloop.ts) inside a Kubelet on the simulated runtime: the runtime
// gate, orphaned runtime pods going through pod workers, resyncs routed through the loop, and the status
// manager told of every pod copy the loop takes.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import type { RequestOptions } from '../../../src/kube/client.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

describe('SyncLoop', () => {
  it('holds pod work while the runtime state reports errors, and does it once they clear', async () => {
    const { clock, creates, api, deps } = setup();
    const errors: string[] = [];
    const k = new Kubelet({ ...deps(), runtimeState: { runtimeErrors: () => [...errors] } });
    await start(k, clock);
    errors.push('container runtime is down');
    const pod = mkPod('a');
    api.pods.set('p-a', pod);
    k.handlePodAdd(pod);
    await advance(clock, 5_000);
    expect(creates, 'nothing reaches the runtime while it is down').to.deep.equal([]);
    expect(
      k.podManager.getPodByUID(pod.metadata.uid as never),
      'the pod manager follows the API',
    ).to.not.equal(undefined);
    errors.length = 0;
    await advance(clock, 3_000);
    expect(creates).to.deep.equal(['p-a/app']);
    await k.stop(0);
  });

  it('a deletion that arrives while the runtime is down is not lost', async () => {
    const { clock, runtime, api, deps } = setup();
    const errors: string[] = [];
    const pod = mkPod('a');
    api.pods.set('p-a', pod);
    const k = new Kubelet({ ...deps(), runtimeState: { runtimeErrors: () => [...errors] } });
    await start(k, clock);
    await advance(clock, 2_000);
    errors.push('container runtime is down');
    api.pods.delete('p-a');
    k.handlePodDelete(pod);
    await advance(clock, 5_000);
    expect((await runtime.listContainers()).filter((c) => c.state === 'running')).to.have.length(1);
    errors.length = 0;
    await advance(clock, 5_000);
    expect((await runtime.listContainers()).filter((c) => c.state === 'running')).to.have.length(0);
    await k.stop(0);
  });

  it('stops and removes a runtime pod nobody knows through a pod worker', async () => {
    const { clock, runtime, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    api.pods.set('p-b', mkPod('b'));
    const first = new Kubelet(deps());
    await start(first, clock);
    await advance(clock, 3_000);
    await first.stop(0);
    api.pods.delete('p-b');
    const second = new Kubelet(deps());
    const seen: string[] = [];
    const update = second.podWorkers.updatePod.bind(second.podWorkers);
    second.podWorkers.updatePod = (u) => {
      if (u.runningPod) seen.push(`${u.type} ${u.runningPod.name}`);
      update(u);
    };
    await start(second, clock);
    await advance(clock, 4_000);
    expect(seen, 'a pod worker stopped it').to.deep.equal(['kill p-b']);
    expect((await runtime.listPodSandbox()).map((s) => s.metadata.name)).to.deep.equal(['p-a']);
    const running = (await runtime.listContainers()).filter((c) => c.state === 'running');
    expect(running.map((c) => c.labels['io.kubernetes.pod.name'])).to.deep.equal(['p-a']);
    await second.stop(0);
  });

  it('does not kill a pod again that its worker already stopped, however stale the last relist is', async () => {
    const { clock, runtime, api, deps } = setup();
    const pod = mkPod('a');
    api.pods.set('p-a', pod);
    const k = new Kubelet(deps());
    const kills: string[] = [];
    const update = k.podWorkers.updatePod.bind(k.podWorkers);
    k.podWorkers.updatePod = (u) => {
      if (u.runningPod) kills.push(u.runningPod.name);
      update(u);
    };
    await start(k, clock);
    await advance(clock, 3_000);
    // Freeze the PLEG's listing while the pod still runs: housekeeping sees it running after its worker is gone.
    const stale = k.pleg.listedPods();
    expect(stale.some((p) => p.sandboxes.some((s) => s.state === 'running'))).to.equal(true);
    k.pleg.listedPods = () => stale;
    api.pods.delete('p-a');
    k.handlePodDelete(pod);
    await advance(clock, 8_000);
    expect(k.podWorkers.state(pod.metadata.uid as never), 'the worker was forgotten').to.equal(undefined);
    expect((await runtime.listContainers()).filter((c) => c.state === 'running')).to.have.length(0);
    expect(kills, 'no second kill from a stale listing').to.deep.equal([]);
    await k.stop(0);
  });

  it('a pod worker resync goes through the loop: it waits, like every input, while the runtime is down', async () => {
    const { clock, api, deps } = setup();
    const errors: string[] = [];
    api.pods.set('p-a', mkPod('a'));
    const k = new Kubelet({
      ...deps(),
      settings: { ...deps().settings, resyncIntervalMs: 2_000 },
      runtimeState: { runtimeErrors: () => [...errors] },
    });
    // Every sync of a running pod mounts its volumes, a settled one too (it skips the runtime's sync).
    let syncs = 0;
    const mount = k.volumeManager.mountPod.bind(k.volumeManager);
    k.volumeManager.mountPod = (...a: Parameters<typeof mount>) => {
      syncs++;
      return mount(...a);
    };
    await start(k, clock);
    await advance(clock, 7_000);
    const before = syncs;
    expect(before).to.be.at.least(2);
    errors.push('container runtime is down');
    await advance(clock, 10_000);
    expect(syncs).to.equal(before);
    errors.length = 0;
    await advance(clock, 3_000);
    expect(syncs).to.be.greaterThan(before);
    await k.stop(0);
  });

  it("tells the status manager of every pod copy it takes, so our last write goes once the informer's copy has it", async () => {
    const { clock, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    // As a real API server: a status patch answers with the pod's next resourceVersion.
    let revision = 1;
    const request = api.request.bind(api);
    api.request = (async (req: RequestOptions) => {
      const out = (await request(req)) as Pod;
      if (req.method !== 'PATCH') return out;
      return { ...out, metadata: { ...out.metadata, resourceVersion: String(++revision) } };
    }) as typeof api.request;
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 3_000);
    expect(api.patches.length, 'the pod started and its status was written').to.be.at.least(1);
    expect(k.statusManager.writesAhead, 'the informer has not brought our write yet').to.equal(1);
    const copy = (rv: number): Pod => {
      const p = structuredClone(api.pods.get('p-a')!);
      return { ...p, metadata: { ...p.metadata, resourceVersion: String(rv) } };
    };
    k.handlePodUpdate(copy(revision - 1));
    await advance(clock, 100);
    expect(k.statusManager.writesAhead, 'an older copy').to.equal(1);
    k.handlePodUpdate(copy(revision));
    await advance(clock, 100);
    expect(k.statusManager.writesAhead, 'the copy our write made').to.equal(0);
    await k.stop(0);
  });
});

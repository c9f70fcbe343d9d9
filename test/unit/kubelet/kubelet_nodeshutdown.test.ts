// The Kubelet's node shutdown manager wired to its pod workers, admission and status (simulated runtime, fake
// clock): groups in order, the final statuses, pods refused meanwhile, and a shutdown asked of a kubelet whose
// pods never reach their workers.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { shutdownConfigFrom } from '../../../src/kubelet/nodeshutdown/config.js';
import { advance, flush, mkPod, setup, start } from './kubelet-fixtures.js';

const MESSAGE = 'Pod was terminated in response to imminent node shutdown.';

describe('Kubelet: graceful node shutdown', () => {
  it('kills the non-critical pods first, the critical ones once those are down, each Failed/Terminated', async () => {
    const { clock, api, deps } = setup({
      images: ['img:1', 'img:slow'],
      profiles: { images: { 'img:slow': { ignoresSigterm: true } } },
    });
    // Ignores SIGTERM: stops when its own 4 s are up (shorter than the group's 20 s).
    api.pods.set(
      'p-a',
      mkPod('a', { terminationGracePeriodSeconds: 4, containers: [{ name: 'app', image: 'img:slow' }] }),
    );
    api.pods.set('p-c', mkPod('c', { priority: 2_000_000_000, terminationGracePeriodSeconds: 30 }));
    let syncs = 0;
    const nodeEvents: string[] = [];
    const k = new Kubelet({
      ...deps(),
      shutdown: {
        config: shutdownConfigFrom({ shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' }),
        recordNode: (type, reason, message) => nodeEvents.push(`${type} ${reason}: ${message}`),
        syncNodeStatus: () => syncs++,
      },
    });
    await start(k, clock);
    await advance(clock, 2_000);
    const phase = (uid: string): string | undefined => k.statusManager.peekPodStatus(asPodUID(uid))?.phase;
    expect([phase('a'), phase('c')]).to.deep.equal(['Running', 'Running']);
    expect(k.shutdownCompleted()).to.equal(false);
    expect(k.shutdownErrors()).to.deep.equal([]);

    k.shutdown();
    await flush();
    expect(nodeEvents).to.deep.equal(['Normal Shutdown: Shutdown manager detected shutdown event']);
    expect(syncs).to.equal(1);
    expect(k.shutdownErrors()).to.deep.equal(['node is shutting down']);

    const failedAt = new Map<string, number>();
    const began = clock.now();
    for (let t = 0; t < 20_000; t += 100) {
      await advance(clock, 100);
      for (const uid of ['a', 'c'])
        if (phase(uid) === 'Failed' && !failedAt.has(uid)) failedAt.set(uid, clock.now() - began);
    }
    expect(failedAt.get('a')).to.be.within(4_000, 5_000);
    // Killed only once "a" was down; it honours SIGTERM.
    expect(failedAt.get('c')).to.be.within(failedAt.get('a')!, failedAt.get('a')! + 2_000);
    for (const uid of ['a', 'c']) {
      const s = k.statusManager.peekPodStatus(asPodUID(uid))!;
      expect(s).to.deep.include({ phase: 'Failed', reason: 'Terminated', message: MESSAGE });
      expect(s.conditions?.find((c) => c.type === 'DisruptionTarget')).to.deep.include({
        status: 'True',
        reason: 'TerminationByKubelet',
        message: MESSAGE,
      });
    }
    expect(k.shutdownCompleted()).to.equal(true);

    // A pod bound now is refused by the shutdown manager's admit handler.
    const late: Pod = mkPod('late');
    api.pods.set('p-late', late);
    k.handlePodAdd(late);
    await advance(clock, 1_000);
    expect(k.statusManager.peekPodStatus(asPodUID('late'))).to.deep.include({
      phase: 'Failed',
      reason: 'NodeShutdown',
      message: 'Pod was rejected: Pod was rejected as the node is shutting down.',
    });
    await k.stop(0);
  });

  it('does nothing without a shutdown grace period (the kubelet stub)', async () => {
    const { clock, api, deps } = setup();
    api.pods.set('p-a', mkPod('a'));
    const k = new Kubelet({ ...deps(), shutdown: { config: shutdownConfigFrom({}) } });
    await start(k, clock);
    await advance(clock, 2_000);
    k.shutdown();
    await advance(clock, 5_000);
    expect(k.statusManager.peekPodStatus(asPodUID('a'))?.phase).to.equal('Running');
    expect(k.shutdownErrors()).to.deep.equal([]);
    expect(k.shutdownCompleted()).to.equal(true);
    await k.stop(0);
  });

  it('gives up on a shutdown whose pods never reach their workers after its grace period and 30 s', async () => {
    const { clock, deps } = setup();
    const k = new Kubelet({
      ...deps(),
      shutdown: { config: shutdownConfigFrom({ shutdownGracePeriod: '10s' }) },
    });
    // Never started: nothing can be stopped.
    k.shutdown();
    clock.advance(39_000);
    expect(k.shutdownCompleted()).to.equal(false);
    clock.advance(1_000);
    expect(k.shutdownCompleted()).to.equal(true);
    await k.stop(0);
  });
});

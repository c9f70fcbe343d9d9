// ContainerRestartRules end to end on the simulated runtime under a FakeClock: containers restart (or not) by
// their own restartPolicy and restartPolicyRules over the pod's, and the pod's phase follows.
import { expect } from 'chai';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

const sh = (script: string) => ['sh', '-c', script];

describe('Kubelet: ContainerRestartRules', () => {
  it('restarts a container by its own policy in a restartPolicy Never pod; the pod runs on', async () => {
    const { clock, api, deps, creates } = setup();
    api.pods.set(
      'p-a',
      mkPod('a', {
        restartPolicy: 'Never',
        containers: [
          { name: 'flaky', image: 'img:1', command: sh('exit 1'), restartPolicy: 'Always' },
          { name: 'once', image: 'img:1', command: sh('exit 0') },
        ],
      }),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    // Starts at 0 s, again after the 10 s back-off.
    await advance(clock, 15_000, 200);
    expect(creates.filter((c) => c === 'p-a/flaky').length).to.be.at.least(2);
    expect(creates.filter((c) => c === 'p-a/once')).to.have.length(1);
    const status = k.statusManager.getPodStatus(asPodUID('a'))!;
    expect(status.phase).to.equal('Running');
    const byName = new Map(status.containerStatuses?.map((c) => [c.name, c]));
    expect(byName.get('flaky')?.restartCount).to.be.at.least(1);
    expect(byName.get('once')?.state?.terminated?.exitCode).to.equal(0);
    expect(k.podWorkers.state(asPodUID('a'))).to.equal('syncing');
    await k.stop(0);
  });

  it('restarts on a matching exit code rule only; a container that may not restart ends the pod', async () => {
    const { clock, api, deps, creates } = setup();
    const rule = { action: 'Restart' as const, exitCodes: { operator: 'In' as const, values: [42] } };
    for (const [uid, code] of [
      ['r', 42],
      ['s', 3],
    ] as const) {
      api.pods.set(
        `p-${uid}`,
        mkPod(uid, {
          containers: [
            {
              name: 'job',
              image: 'img:1',
              command: sh(`exit ${code}`),
              restartPolicy: 'Never',
              restartPolicyRules: [rule],
            },
          ],
        }),
      );
    }
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 15_000, 200);
    // Exit 42 matches the rule: restarted (pod policy Always is not what decides).
    expect(creates.filter((c) => c === 'p-r/job').length).to.be.at.least(2);
    expect(k.statusManager.getPodPhase(asPodUID('r'))).to.equal('Running');
    // Exit 3 does not match, and the container's own Never wins over the pod's Always: Failed, once.
    expect(creates.filter((c) => c === 'p-s/job')).to.have.length(1);
    const s = k.statusManager.getPodStatus(asPodUID('s'))!;
    expect(s.phase).to.equal('Failed');
    expect(s.containerStatuses?.[0]?.state?.terminated?.exitCode).to.equal(3);
    expect(k.podWorkers.state(asPodUID('s'))).to.equal('terminated');
    await k.stop(0);
  });

  it('restarts a failed init container by its own OnFailure policy in a Never pod: Pending, not Failed', async () => {
    const { clock, api, deps, creates } = setup();
    api.pods.set(
      'p-i',
      mkPod('i', {
        restartPolicy: 'Never',
        // Fails every time: restarted with back-off by its own OnFailure, never reaching the app.
        initContainers: [{ name: 'init', image: 'img:1', command: sh('exit 1'), restartPolicy: 'OnFailure' }],
        containers: [{ name: 'app', image: 'img:1', args: ['pause'] }],
      }),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 15_000, 200);
    expect(creates.filter((c) => c === 'p-i/init').length).to.be.at.least(2);
    expect(creates).not.to.include('p-i/app');
    const status = k.statusManager.getPodStatus(asPodUID('i'))!;
    // Still initializing, not Failed as a Never pod without the container's own policy would be.
    expect(status.phase).to.equal('Pending');
    expect(status.initContainerStatuses?.[0]?.restartCount).to.be.at.least(1);
    await k.stop(0);
  });
});

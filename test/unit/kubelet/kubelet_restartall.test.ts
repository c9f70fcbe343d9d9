// RestartAllContainersOnContainerExits end to end on the simulated runtime under a FakeClock: a container
// exiting by its RestartAllContainers rule restarts the whole pod in place (every container killed and removed,
// then started again from the first init container), with the kubelet's statuses and conditions on the way.
import { expect } from 'chai';
import type { Container, PodStatus } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

const sh = (script: string) => ['sh', '-c', script];
const rule = [
  { action: 'RestartAllContainers' as const, exitCodes: { operator: 'In' as const, values: [42] } },
];
const mount = [{ name: 'workdir', mountPath: '/mnt' }];

function restartingPod(uid: string, sourceScript: string, extra: { sourceIsInit?: boolean } = {}) {
  const source: Container = {
    name: 'source',
    image: 'img:1',
    command: sh(sourceScript),
    restartPolicy: 'Never',
    restartPolicyRules: rule,
    volumeMounts: mount,
  };
  const initContainers: Container[] = [
    { name: 'init', image: 'img:1', command: sh('exit 0') },
    { name: 'sidecar', image: 'img:1', command: sh('sleep 10000'), restartPolicy: 'Always' },
  ];
  const containers: Container[] = [{ name: 'regular', image: 'img:1', command: sh('sleep 10000') }];
  if (extra.sourceIsInit) initContainers.push(source);
  else containers.unshift(source);
  return mkPod(uid, {
    restartPolicy: 'Never',
    initContainers,
    containers,
    volumes: [{ name: 'workdir', emptyDir: {} }],
  });
}

const all = (s: PodStatus) => [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])];
const condition = (s: PodStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe('Kubelet: RestartAllContainersOnContainerExits', () => {
  it('a regular container exiting by its rule restarts every container once, from the first init container', async () => {
    const { clock, api, deps, creates, eventMessages } = setup({ files: true });
    // First run: no marker yet, so it writes one and exits 42; after the restart it finds it and runs on.
    api.pods.set('p-a', restartingPod('a', 'cat /mnt/done && sleep 10000; echo x > /mnt/done; exit 42'));
    const k = new Kubelet(deps());
    await start(k, clock);
    const seen: string[] = [];
    for (let t = 0; t < 30_000; t += 200) {
      await advance(clock, 200, 200);
      const s = k.statusManager.getPodStatus(asPodUID('a'));
      const c = s && condition(s, 'AllContainersRestarting');
      if (c && seen[seen.length - 1] !== c.status) seen.push(c.status);
    }
    expect(seen).to.deep.equal(['False', 'True', 'False']);
    const s = k.statusManager.getPodStatus(asPodUID('a'))!;
    expect(s.phase).to.equal('Running');
    expect(condition(s, 'Initialized')?.status).to.equal('True');
    expect(condition(s, 'AllContainersRestarting')).to.deep.include({ status: 'False' });
    for (const name of ['init', 'sidecar', 'source', 'regular']) {
      expect(
        creates.filter((c) => c === `p-a/${name}`),
        name,
      ).to.have.length(2);
      const cs = all(s).find((x) => x.name === name)!;
      expect(cs.restartCount, name).to.equal(1);
      expect(cs.lastState?.terminated, name).to.not.equal(undefined);
    }
    // Every removed container, the source too, last terminated as the kubelet reports a removal.
    for (const name of ['source', 'regular', 'init']) {
      expect(all(s).find((x) => x.name === name)?.lastState?.terminated, name).to.deep.include({
        exitCode: 137,
        reason: 'RestartingAllContainers',
      });
    }
    for (const name of ['source', 'regular', 'sidecar']) {
      expect(all(s).find((x) => x.name === name)?.state?.running, name).to.not.equal(undefined);
    }
    // The running ones were killed without a grace period, as the kubelet words it.
    expect(eventMessages.filter((m) => m === 'Normal Killing: killing')).to.have.length(2);
    await k.stop(0);
  });

  it('an init container exiting by its rule restarts the init containers; the pod then initializes', async () => {
    const { clock, api, deps, creates } = setup({ files: true });
    api.pods.set(
      'p-i',
      restartingPod('i', 'cat /mnt/done && exit 0; echo x > /mnt/done; exit 42', { sourceIsInit: true }),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 30_000, 200);
    const s = k.statusManager.getPodStatus(asPodUID('i'))!;
    expect(s.phase).to.equal('Running');
    for (const name of ['init', 'sidecar', 'source']) {
      expect(
        creates.filter((c) => c === `p-i/${name}`),
        name,
      ).to.have.length(2);
    }
    expect(creates.filter((c) => c === 'p-i/regular')).to.have.length(1);
    expect(all(s).find((x) => x.name === 'source')?.state?.terminated?.exitCode).to.equal(0);
    expect(all(s).find((x) => x.name === 'regular')?.state?.running).to.not.equal(undefined);
    await k.stop(0);
  });

  it('another exit code: the container policy (Never) decides, and nothing else restarts', async () => {
    const { clock, api, deps, creates } = setup({ files: true });
    api.pods.set('p-n', restartingPod('n', 'exit 3'));
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 10_000, 200);
    const s = k.statusManager.getPodStatus(asPodUID('n'))!;
    expect(creates.filter((c) => c === 'p-n/source')).to.have.length(1);
    expect(creates.filter((c) => c === 'p-n/init')).to.have.length(1);
    expect(condition(s, 'AllContainersRestarting')?.status).to.equal('False');
    expect(all(s).find((x) => x.name === 'source')?.state?.terminated?.exitCode).to.equal(3);
    await k.stop(0);
  });
});

// EnvFiles end to end on the simulated runtime under a FakeClock: an init container writes an env file into an
// emptyDir, later containers read it through fileKeyRef; a missing key waits in CreateContainerConfigError.
import { expect } from 'chai';
import type { Container } from '../../../src/api/core.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';
import { fileKeyRefVar, sh } from '../../support/podspec.js';

const fromFile = fileKeyRefVar;
const writer: Container = {
  name: 'setup-envfile',
  image: 'img:1',
  command: sh(
    `echo CONFIG_1=\\'value1\\' > /data/config.env && echo CONFIG_2=\\'value2\\' >> /data/config.env`,
  ),
  volumeMounts: [{ name: 'config', mountPath: '/data' }],
};

function envFilePod(uid: string, containers: Container[], initContainers: Container[] = [writer]) {
  return mkPod(uid, {
    restartPolicy: 'Never',
    initContainers,
    containers,
    volumes: [{ name: 'config', emptyDir: {} }],
  });
}

describe('Kubelet: EnvFiles (fileKeyRef)', () => {
  it('sets variables from the file an init container wrote, for init and regular containers alike', async () => {
    const { clock, api, deps, runtime } = setup({ files: true });
    api.pods.set(
      'p-a',
      envFilePod(
        'a',
        [
          {
            name: 'use-envfile',
            image: 'img:1',
            command: sh('echo $CONFIG_1 $CONFIG_2 ${MISSING_KEY:-unset}'),
            env: [
              fromFile('CONFIG_1', 'CONFIG_1'),
              fromFile('CONFIG_2', 'CONFIG_2'),
              fromFile('MISSING_KEY', 'NOPE', true),
            ],
          },
        ],
        [
          writer,
          {
            name: 'use-in-init',
            image: 'img:1',
            command: sh('echo init $C1'),
            env: [fromFile('C1', 'CONFIG_1')],
          },
        ],
      ),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 5_000, 200);
    const status = k.statusManager.getPodStatus(asPodUID('a'))!;
    expect(status.phase).to.equal('Succeeded');
    const logs = async (name: string) => {
      const c = (await runtime.listContainers()).find((x) => x.metadata.name === name)!;
      return runtime.readLogs(c.id).map((l) => l.split(' ').slice(3).join(' '));
    };
    expect(await logs('use-in-init')).to.deep.equal(['init value1']);
    expect(await logs('use-envfile')).to.deep.equal(['value1 value2 unset']);
    await k.stop(0);
  });

  it('waits in CreateContainerConfigError with the kubelet message when the key is missing', async () => {
    const { clock, api, deps, eventMessages } = setup({ files: true });
    api.pods.set(
      'p-m',
      envFilePod('m', [{ name: 'use-envfile', image: 'img:1', env: [fromFile('X', 'ABSENT')] }]),
    );
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 5_000, 200);
    const status = k.statusManager.getPodStatus(asPodUID('m'))!;
    expect(status.phase).to.equal('Pending');
    const path = '/var/lib/kubelet/pods/m/volumes/kubernetes.io~empty-dir/config/config.env';
    const message = `environment variable key "ABSENT" not found in file "${path}"`;
    expect(status.containerStatuses?.[0]?.state?.waiting).to.deep.equal({
      reason: 'CreateContainerConfigError',
      message,
    });
    expect(eventMessages).to.include(`Warning Failed: Error: ${message}`);
    await k.stop(0);
  });

  it('fails a missing file even for an optional key, and a volume no container mounts (the kubelet mounts none)', async () => {
    const { clock, api, deps } = setup({ files: true });
    const mountsOnly: Container = { ...writer, command: sh('true') };
    const user = { name: 'use-envfile', image: 'img:1', env: [fromFile('X', 'CONFIG_1', true)] };
    api.pods.set('p-n', envFilePod('n', [user], [mountsOnly]));
    api.pods.set('p-u', envFilePod('u', [user], []));
    const k = new Kubelet(deps());
    await start(k, clock);
    await advance(clock, 3_000, 200);
    const waiting = (uid: string) =>
      k.statusManager.getPodStatus(asPodUID(uid))!.containerStatuses?.[0]?.state?.waiting;
    expect(waiting('n')).to.deep.equal({
      reason: 'CreateContainerConfigError',
      message: "couldn't parse env file",
    });
    expect(waiting('u')).to.deep.equal({
      reason: 'CreateContainerConfigError',
      message: 'cannot find the volume "config" referenced by FileKeyRef',
    });
    await k.stop(0);
  });
});

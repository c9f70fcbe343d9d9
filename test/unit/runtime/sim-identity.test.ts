// The simulated runtime honours, as recorded state, what containerd 1.6 cannot: its Status reports a default
// handler with user namespaces and recursive read-only mounts and the supplemental groups policy feature; a
// process's identity follows containerd's rules (Merge adds the image's groups, Strict does not); a sandbox's
// user namespace shows in /proc/self/uid_map; an image mount is recorded and its files are unknown.
import { expect } from 'chai';
import { ContainerNameLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import { processUser } from '../../../src/runtime/sim/identity.js';
import { fileViewOf, idMapFile } from '../../../src/runtime/sim/podview.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { IMAGE, newSim } from './sim-fixtures.js';

type SC = NonNullable<NonNullable<ContainerConfig['linux']>['securityContext']>;
const config = (sc: SC = {}): Pick<ContainerConfig, 'linux'> => ({ linux: { securityContext: sc } });

describe('sim runtime: identity, user namespaces, image mounts', () => {
  it('reports the default handler with both features and the supplemental groups policy feature', async () => {
    const { sim } = newSim();
    const status = await sim.status();
    expect(status.handlers).to.deep.equal([
      { name: '', recursiveReadOnlyMounts: true, userNamespaces: true },
    ]);
    expect(status.features).to.deep.equal({ supplementalGroupsPolicy: true });
    expect(sim.capabilities.imageVolumes).to.equal(true);
  });

  describe('processUser (containerd: user, group, additional groups)', () => {
    const table: [string, SC, string | undefined, number[] | undefined, ReturnType<typeof processUser>][] = [
      ['nothing set: root', {}, undefined, undefined, { uid: 0, gid: 0, groups: [0] }],
      ["the image's numeric USER", {}, '1234', undefined, { uid: 1234, gid: 0, groups: [0] }],
      ["the image's uid:gid", {}, '1234:55', undefined, { uid: 1234, gid: 55, groups: [55] }],
      [
        "runAsUser over the image's, whose group then does not count (no /etc/passwd)",
        { runAsUser: 7 },
        '1234:55',
        undefined,
        { uid: 7, gid: 0, groups: [0] },
      ],
      ['runAsGroup', { runAsUser: 7, runAsGroup: 8 }, '1234:55', undefined, { uid: 7, gid: 8, groups: [8] }],
      [
        "Merge (default): the image's groups, then the pod's, each once",
        { runAsUser: 1000, runAsGroup: 1000, supplementalGroups: [60000, 50000, 1000] },
        undefined,
        [50000],
        { uid: 1000, gid: 1000, groups: [1000, 50000, 60000] },
      ],
      [
        "Strict: the pod's only",
        {
          runAsUser: 1000,
          runAsGroup: 1000,
          supplementalGroups: [60000],
          supplementalGroupsPolicy: 'Strict',
        },
        undefined,
        [50000],
        { uid: 1000, gid: 1000, groups: [1000, 60000] },
      ],
      ['a named USER without /etc/passwd: root', {}, 'nobody', undefined, { uid: 0, gid: 0, groups: [0] }],
    ];
    for (const [what, sc, user, groups, want] of table) {
      it(what, () => expect(processUser(config(sc), user, groups)).to.deep.equal(want));
    }
  });

  it('idMapFile prints mappings as the kernel does, the host identity without any', () => {
    expect(idMapFile(undefined)).to.equal('         0          0 4294967295\n');
    expect(idMapFile([{ hostId: 65536, containerId: 0, length: 65536 }])).to.equal(
      '         0      65536      65536\n',
    );
  });

  it('fileViewOf: an image mount holds nothing the simulation can tell; id knows the user', () => {
    const view = fileViewOf(
      [{ containerPath: '/volume', hostPath: '', image: 'sha256:1' }],
      'web',
      { readFileSync: () => Buffer.from('host file') },
      { user: { uid: 1, gid: 2, groups: [2, 3] } },
    );
    expect(view.readFile?.('/volume/data.json')).to.equal(undefined);
    expect(view.user).to.deep.equal({ uid: 1, gid: 2, groups: [2, 3] });
  });

  it('a sandbox with its own user namespace: containers show its maps; the status reports who they run as', async () => {
    const { sim, clock } = newSim({
      profiles: { images: { [IMAGE]: { user: '1000:1000', groups: [50000] } } },
    });
    const mapping = [{ hostId: 131072, containerId: 0, length: 65536 }];
    const sandbox: PodSandboxConfig = {
      metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
      labels: { [PodUIDLabel]: 'u' },
      annotations: {},
      linux: {
        securityContext: {
          namespaceOptions: { userNamespace: { mode: 'POD', uids: mapping, gids: mapping } },
        },
      },
    };
    const sb = await sim.runPodSandbox(sandbox);
    const c: ContainerConfig = {
      metadata: { name: 'app', attempt: 0 },
      image: IMAGE,
      command: ['sh', '-c', 'id; sleep 3600'],
      labels: { [PodUIDLabel]: 'u', [ContainerNameLabel]: 'app' },
      annotations: {},
      linux: { securityContext: { supplementalGroups: [60000] } },
    };
    const id = await sim.createContainer(sb, c, sandbox);
    await sim.startContainer(id);
    clock.advance(10);
    expect((await sim.containerStatus(id)).user).to.deep.equal({
      linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 50000, 60000] },
    });
    expect(sim.readLogs(id).map((l) => l.split(' F ')[1])).to.deep.equal([
      'uid=1000 gid=1000 groups=1000,50000,60000',
    ]);
    const exec = async (...argv: string[]) => (await sim.execSync(id, argv, 5)).stdout.toString();
    expect(await exec('cat', '/proc/self/uid_map')).to.equal('         0     131072      65536\n');
    expect(await exec('cat', '/proc/self/gid_map')).to.equal('         0     131072      65536\n');
    expect(await exec('id', '-u')).to.equal('1000\n');
    expect(await exec('id', '-g')).to.equal('1000\n');
    expect(await exec('id', '-G')).to.equal('1000 50000 60000\n');
  });
});

/**
 * EnvFiles on a real containerd through a real v1.37 kube-apiserver: an init container writes an env file into
 * an emptyDir, and the kubelet-operator reads it from the volume's directory on the node to set `fileKeyRef`
 * variables of later containers (init and regular); a missing key leaves the container waiting in
 * CreateContainerConfigError with the kubelet's message; a symlink the container planted is resolved inside the
 * volume, never on the host. What a container saw comes back as its termination message (no node API needed).
 *
 * Root on Linux is required (containerd).
 */
import { expect } from 'chai';
import type { Pod, PodStatus } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { cstatus } from '../support/operator.js';
import { fileKeyRefVar } from '../support/podspec.js';

const NODE = 'vn-envfiles';
const NS = 'envfiles-e2e';

const fromFile = fileKeyRefVar;

describe('EnvFiles (fileKeyRef) on containerd (real apiserver, cri runtime)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let client: KubeClient;

  const createPod = (name: string, spec: Record<string, unknown>): Promise<Pod> =>
    env!.createPod(name, {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      volumes: [{ name: 'config', emptyDir: {} }],
      ...spec,
    });
  const waitPod = (name: string, pred: (s: PodStatus) => boolean, what: string) =>
    env!.waitPod(name, pred, what);
  const c = (name: string, script: string, extra: Record<string, unknown> = {}) => ({
    name,
    image: 'busybox',
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', script],
    ...extra,
  });
  const writer = (script: string) =>
    c('setup-envfile', script, { volumeMounts: [{ name: 'config', mountPath: '/data' }] });

  before(async function () {
    this.timeout(20 * 60_000);
    env = await startCriNodeEnv({ node: NODE, namespace: NS });
    ({ client } = env);
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
  });

  it('init and regular containers get the variables the first init container wrote; an optional missing key is unset', async () => {
    await createPod('consume', {
      initContainers: [
        writer(
          `echo CONFIG_1=\\'value1\\' > /data/config.env && echo CONFIG_2=\\'two words\\' >> /data/config.env`,
        ),
        c('use-in-init', 'echo -n "$C1" > /dev/termination-log', { env: [fromFile('C1', 'CONFIG_1')] }),
      ],
      containers: [
        c('use-envfile', 'echo -n "$CONFIG_1|$CONFIG_2|${MISSING-unset}" > /dev/termination-log', {
          env: [
            fromFile('CONFIG_1', 'CONFIG_1'),
            fromFile('CONFIG_2', 'CONFIG_2'),
            fromFile('MISSING', 'NOPE', true),
          ],
        }),
      ],
    });
    const pod = await waitPod('consume', (s) => s.phase === 'Succeeded', 'Succeeded');
    const init = pod.status?.initContainerStatuses?.find((s) => s.name === 'use-in-init');
    expect(init?.state?.terminated?.message).to.equal('value1');
    expect(cstatus(pod.status, 'use-envfile')?.state?.terminated?.message).to.equal('value1|two words|unset');
  });

  it('a missing key leaves the container in CreateContainerConfigError with the kubelet message and event', async () => {
    await createPod('missing-key', {
      initContainers: [writer(`echo OTHER=\\'x\\' > /data/config.env`)],
      containers: [c('use-envfile', 'true', { env: [fromFile('X', 'ABSENT')] })],
    });
    const pod = await waitPod(
      'missing-key',
      (s) => cstatus(s, 'use-envfile')?.state?.waiting?.reason === 'CreateContainerConfigError',
      'CreateContainerConfigError',
    );
    const message = cstatus(pod.status, 'use-envfile')?.state?.waiting?.message ?? '';
    expect(message).to.match(
      /^environment variable key "ABSENT" not found in file "\/.*\/pods\/[0-9a-f-]{36}\/volumes\/kubernetes\.io~empty-dir\/config\/config\.env"$/,
    );
    expect(pod.status?.phase).to.equal('Pending');
    await eventually(
      async () =>
        (await eventsOf(client, NS, 'missing-key')).some(
          (e) => e.reason === 'Failed' && e.message === `Error: ${message}`,
        ) || undefined,
      30_000,
      'Failed event',
    );
  });

  it('a symlink to a host file is resolved inside the volume: the host file is never read', async () => {
    await createPod('symlink', {
      initContainers: [writer('ln -s /etc/hostname /data/config.env')],
      containers: [c('use-envfile', 'true', { env: [fromFile('X', 'HOSTNAME', true)] })],
    });
    const pod = await waitPod(
      'symlink',
      (s) => cstatus(s, 'use-envfile')?.state?.waiting?.reason === 'CreateContainerConfigError',
      'CreateContainerConfigError',
    );
    expect(cstatus(pod.status, 'use-envfile')?.state?.waiting?.message).to.equal("couldn't parse env file");
  });
});

/**
 * RestartAllContainersOnContainerExits on a real containerd through a real v1.37 kube-apiserver: a regular
 * container exiting by its RestartAllContainers rule restarts the whole pod in place (init containers, the
 * sidecar and the other regular container killed and removed, then started again from the first init
 * container in the same sandbox), with AllContainersRestarting going True and back to False, every container's
 * restart counted, the removed containers' logs kept; an init container's rule restarts initialization. The
 * node declares the feature.
 *
 * Root on Linux is required (containerd).
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ContainerStatus, PodStatus } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventsOf as eventsIn } from '../support/events.js';
import { eventually } from '../support/eventually.js';

const NODE = 'vn-restartall';
const NS = 'restartall-e2e';
const rules = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];

const all = (s: PodStatus | undefined): ContainerStatus[] => [
  ...(s?.initContainerStatuses ?? []),
  ...(s?.containerStatuses ?? []),
];
const named = (s: PodStatus | undefined, name: string) => all(s).find((c) => c.name === name);
const condition = (s: PodStatus | undefined, type: string) => s?.conditions?.find((c) => c.type === type);

describe('RestartAllContainers on containerd (real apiserver, cri runtime)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;

  const c = (name: string, script: string, extra: Record<string, unknown> = {}) => ({
    name,
    image: 'busybox',
    imagePullPolicy: 'IfNotPresent',
    command: ['/bin/sh', '-c', script],
    ...extra,
  });
  const source = (script: string) =>
    c('source', script, {
      restartPolicy: 'Never',
      restartPolicyRules: rules,
      volumeMounts: [{ name: 'workdir', mountPath: '/mnt' }],
    });
  const createPod = (name: string, spec: Record<string, unknown>) =>
    env!.createPod(name, {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      volumes: [{ name: 'workdir', emptyDir: {} }],
      ...spec,
    });
  const eventsOf = (name: string): Promise<CoreEvent[]> => eventsIn(env!.client, NS, name);

  before(async function () {
    this.timeout(20 * 60_000);
    env = await startCriNodeEnv({ node: NODE, namespace: NS });
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
  });

  it('the node declares RestartAllContainersOnContainerExits', async () => {
    const node = await env!.client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
    expect(node.status?.declaredFeatures).to.include('RestartAllContainersOnContainerExits');
  });

  it('a regular container exiting by its rule restarts init, sidecar and regular containers once, in place', async () => {
    const created = await createPod('regular-source', {
      initContainers: [c('init', 'exit 0'), c('sidecar', 'sleep 10000', { restartPolicy: 'Always' })],
      containers: [
        source(
          'if [ -f /mnt/restart-complete ]; then sleep 10000; else touch /mnt/restart-complete; exit 42; fi',
        ),
        c('regular', 'sleep 10000'),
      ],
    });
    const pod = await env!.waitPod(
      'regular-source',
      (s) => {
        const rc = condition(s, 'AllContainersRestarting');
        return (
          ['init', 'sidecar', 'source', 'regular'].every(
            (n) => (named(s, n)?.restartCount ?? 0) > 0 && named(s, n)?.lastState?.terminated !== undefined,
          ) &&
          named(s, 'source')?.state?.running !== undefined &&
          named(s, 'regular')?.state?.running !== undefined &&
          rc?.status === 'False'
        );
      },
      'every container restarted, source and regular running',
      120_000,
    );
    expect(pod.status?.phase).to.equal('Running');
    expect(condition(pod.status, 'Initialized')?.status).to.equal('True');
    for (const n of ['init', 'sidecar', 'source', 'regular'])
      expect(named(pod.status, n)?.restartCount, n).to.equal(1);
    expect(named(pod.status, 'regular')?.lastState?.terminated).to.deep.include({
      exitCode: 137,
      reason: 'RestartingAllContainers',
    });
    // The same sandbox: no SandboxChanged; the running ones killed without a grace period.
    // Our event correlator counts one Event per (type, reason, message) of a pod, so the two kills show as
    // one Killing Event of count 2 where the kubelet writes one per container.
    const killings = async () =>
      (await eventsOf('regular-source'))
        .filter((e) => e.reason === 'Killing' && e.message === 'killing')
        .reduce((n, e) => n + (e.count ?? 1), 0);
    await eventually(async () => (await killings()) >= 2 || undefined, 30_000, 'two kills');
    expect((await eventsOf('regular-source')).map((e) => e.reason)).to.not.include('SandboxChanged');
    // The removed containers' logs stay (0.log), next to the new ones' (1.log).
    const dir = path.join(env!.logRoot, `${NS}_regular-source_${created.metadata.uid}`, 'regular');
    await eventually(() => existsSync(path.join(dir, '1.log')) || undefined, 10_000, '1.log');
    expect(existsSync(path.join(dir, '0.log'))).to.equal(true);
  });

  it('an init container exiting by its rule restarts initialization; the regular container then starts once', async () => {
    await createPod('init-source', {
      initContainers: [
        c('sidecar', 'sleep 10000', { restartPolicy: 'Always' }),
        c('init', 'exit 0'),
        source('if [ -f /mnt/init-complete ]; then exit 0; else touch /mnt/init-complete; exit 42; fi'),
      ],
      containers: [c('regular', 'sleep 10000')],
    });
    const pod = await env!.waitPod(
      'init-source',
      (s) =>
        ['init', 'sidecar', 'source'].every((n) => (named(s, n)?.restartCount ?? 0) > 0) &&
        named(s, 'regular')?.state?.running !== undefined,
      'initialization restarted, regular running',
      120_000,
    );
    expect(pod.status?.phase).to.equal('Running');
    expect(named(pod.status, 'source')?.state?.terminated?.exitCode).to.equal(0);
    expect(named(pod.status, 'regular')?.restartCount).to.equal(0);
    expect(condition(pod.status, 'AllContainersRestarting')?.status).to.equal('False');
  });
});

/**
 * ContainerRestartRules (issue #60) against a real v1.37 kube-apiserver, on one simulated VirtualNode: the API
 * server takes containers' own restartPolicy and restartPolicyRules, and the statuses our kubelet writes for
 * them (a terminated container that comes back is a transition it checks by the same rules). Per pod:
 *
 * - pod Never, container Always that exits 1: restarted, the pod stays Running;
 * - pod Always, container Never with a `Restart` rule for exit 42, exiting 3: not restarted, the pod Failed;
 * - pod Never, the same container exiting 42: restarted by the rule, the pod Running;
 * - pod Never, an init container of its own OnFailure that exits 1: restarted, the pod Pending (not Failed).
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { createPodOn, type SimNodeEnv, startSimNodeEnv, waitPodStatus } from '../support/operator.js';

const NODE = 'vn-crr';
const NS = 'default';
const rule42 = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];
const job = (script: string, extra: Record<string, unknown> = {}) => ({
  name: 'c',
  image: 'busybox',
  command: ['sh', '-c', script],
  ...extra,
});

describe('ContainerRestartRules (real apiserver, sim node)', function () {
  this.timeout(10 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;

  const createPod = (name: string, spec: Record<string, unknown>): Promise<Pod> =>
    createPodOn(client, NS, NODE, name, spec);
  /** The pod once its first (init or regular) container has restarted at least once. */
  const restarted = (name: string, init = false): Promise<Pod> =>
    waitPodStatus(
      client,
      NS,
      name,
      (s) => ((init ? s.initContainerStatuses : s.containerStatuses)?.[0]?.restartCount ?? 0) >= 1,
      'restarted',
      60_000,
    );

  before(async () => {
    env = await startSimNodeEnv({ node: NODE, podCIDR: '10.81.0.0/24' });
    client = env.client;
  });

  after(async () => {
    await env?.stop();
  });

  it('the API server keeps the fields as written', async () => {
    const pod = await createPod('crr-fields', {
      restartPolicy: 'Never',
      containers: [job('exit 0', { restartPolicy: 'OnFailure', restartPolicyRules: rule42 })],
    });
    expect(pod.spec.containers[0]).to.deep.include({
      restartPolicy: 'OnFailure',
      restartPolicyRules: rule42,
    });
    await waitPodStatus(client, NS, 'crr-fields', (s) => s.phase === 'Succeeded', 'Succeeded', 60_000);
  });

  it('pod Never, container Always: the container restarts and the pod stays Running', async () => {
    await createPod('crr-always', {
      restartPolicy: 'Never',
      containers: [job('exit 1', { restartPolicy: 'Always' })],
    });
    // First run, then the 10 s back-off: the API server accepted terminated -> running again.
    const pod = await restarted('crr-always');
    expect(pod.status?.phase).to.equal('Running');
  });

  it('pod Always, container Never with a rule that does not match: Failed, never restarted', async () => {
    await createPod('crr-nomatch', {
      containers: [job('exit 3', { restartPolicy: 'Never', restartPolicyRules: rule42 })],
    });
    const pod = await waitPodStatus(client, NS, 'crr-nomatch', (s) => s.phase === 'Failed', 'Failed', 60_000);
    const c = pod.status!.containerStatuses![0]!;
    expect(c.state?.terminated?.exitCode).to.equal(3);
    expect(c.restartCount).to.equal(0);
  });

  it('pod Never, container Never with a rule that matches: restarted, Running', async () => {
    await createPod('crr-match', {
      restartPolicy: 'Never',
      containers: [job('exit 42', { restartPolicy: 'Never', restartPolicyRules: rule42 })],
    });
    const pod = await restarted('crr-match');
    expect(pod.status?.phase).to.equal('Running');
    expect(pod.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode).to.equal(42);
  });

  it('pod Never, init container OnFailure failing: restarted, the pod Pending and not Failed', async () => {
    await createPod('crr-init', {
      restartPolicy: 'Never',
      initContainers: [{ ...job('exit 1', { restartPolicy: 'OnFailure' }), name: 'init' }],
      containers: [job('sleep infinity')],
    });
    const pod = await restarted('crr-init', true);
    expect(pod.status?.phase).to.equal('Pending');
  });
});

/**
 * Issue #60 point 3: kubelet features the runtime does not allow are refused as a v1.37 kubelet on that runtime
 * refuses them, and honoured where the runtime allows them. Against a real kube-apiserver, two simulated
 * VirtualNodes of one in-process operator: `vn-rtf-sim`, the simulated runtime as it is (it reports user
 * namespaces and recursive read-only mounts on its default handler, the supplemental groups policy feature, and
 * mounts image volumes), and `vn-rtf-old`, the same runtime answering as containerd 1.6's CRI does (no runtime
 * handlers, no features, no image mounts). Per feature, the same pod on both:
 *
 * - Node status: `runtimeHandlers` and `features` as each runtime reports them; `runningInUserNamespace` false;
 *   `nodeInfo.swap` (NodeSwap) from `spec.runtime.sim.swapCapacity` on the simulated one, none on the other.
 * - `hostUsers: false`: FailedCreatePodSandBox with the kubelet's message on the old runtime; a user namespace of
 *   the pod's own on the simulated one (its containers' /proc/self/uid_map shows the mapping).
 * - `supplementalGroupsPolicy: Strict`: rejected at admission (SupplementalGroupsPolicyNotSupported) on the old
 *   runtime; runs with the pod's groups only on the simulated one (containerStatuses[].user).
 * - `recursiveReadOnly: Enabled`: CreateContainerConfigError with the kubelet's message on the old runtime; runs,
 *   `volumeMounts[].recursiveReadOnly: Enabled` in its status, on the simulated one. IfPossible runs on both.
 * - An `image` volume: pulled on both; CreateContainerError ImageVolumeMountFailed on the old runtime, mounted
 *   (recorded with the image's ID) on the simulated one.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { kubeletNodeFactory } from '../../src/app/kubeletnode.js';
import { Operator } from '../../src/operator.js';
import { SimRuntime } from '../../src/runtime/sim/index.js';
import { RealClock } from '../../src/util/clock.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { eventsOf } from '../support/events.js';
import {
  adminClient,
  createPodOn,
  postVirtualNode,
  testLogger,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';
import { testStateDir } from '../support/statedir.js';
import { likeContainerd16 } from '../support/likecontainerd16.js';

const SIM = 'vn-rtf-sim';
const OLD = 'vn-rtf-old';
const NS = 'default';
const IMAGE_PROFILE = { images: { busybox: { user: '1000', groups: [50000] } } };

describe('runtime features per runtime (real apiserver, sim and containerd-1.6-like nodes)', function () {
  this.timeout(20 * 60_000);
  let cp: ControlPlane;
  let client: KubeClient;
  let op: Operator | undefined;
  const runtimes = new Map<string, SimRuntime>();

  const createPod = (name: string, node: string, spec: Record<string, unknown>): Promise<Pod> =>
    createPodOn(client, NS, node, name, spec);
  const events = (name: string): Promise<CoreEvent[]> => eventsOf(client, NS, name);
  const eventOf = (name: string, reason: string): Promise<CoreEvent> =>
    eventually(
      async () => (await events(name)).find((e) => e.reason === reason),
      30_000,
      `${name}: ${reason}`,
    );
  const getNode = (name: string): Promise<Node> =>
    client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${name}` });
  const running = (name: string): Promise<Pod> =>
    waitPodStatus(client, NS, name, (s) => s.phase === 'Running', 'Running', 60_000);
  const waiting = (name: string, reason: string): Promise<Pod> =>
    waitPodStatus(
      client,
      NS,
      name,
      (s) => s.containerStatuses?.[0]?.state?.waiting?.reason === reason,
      `waiting ${reason}`,
      60_000,
    );
  /** What the simulated runtime recorded of the pod's container, and a command run in it. */
  const inContainer = async (node: string, pod: Pod) => {
    const sim = runtimes.get(node)!;
    const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^sim:\/\//, '');
    return {
      status: await sim.containerStatus(id),
      exec: async (...argv: string[]) => (await sim.execSync(id, argv, 5)).stdout.toString(),
    };
  };

  before(async () => {
    cp = await startControlPlane();
    client = await adminClient(cp);
    const clock = new RealClock();
    const logger = testLogger();
    op = new Operator({
      client,
      factory: kubeletNodeFactory({
        client,
        clock,
        logger,
        defaultInternalIP: '127.0.0.1',
        nodeApiPort: 10250,
        stateDir: testStateDir(),
        runtimeFor: (spec, nodeName, nodeIP) => {
          const sim = spec.runtime.type === 'sim' ? spec.runtime.sim : undefined;
          const rt = new SimRuntime({ clock, podCIDR: sim?.podCIDR, nodeIP, profiles: sim?.profile });
          runtimes.set(nodeName, rt);
          return nodeName === OLD ? likeContainerd16(rt) : rt;
        },
      }),
      clock,
      logger,
      statusPeriodMs: 1000,
      drainRecheckMs: 300,
    });
    await op.start();
    await postVirtualNode(client, SIM, {
      runtime: { type: 'sim', sim: { podCIDR: '10.78.0.0/24', profile: IMAGE_PROFILE, swapCapacity: '2Gi' } },
    });
    await postVirtualNode(client, OLD, {
      runtime: { type: 'sim', sim: { podCIDR: '10.79.0.0/24', profile: IMAGE_PROFILE } },
    });
    await waitNodeReady(client, SIM);
    await waitNodeReady(client, OLD);
  });

  after(async () => {
    await op?.stop();
    for (const rt of runtimes.values()) await rt.close();
    client?.close();
    await cp?.stop();
  });

  it("reports each runtime's handlers and features in the Node status, and no user namespace", async () => {
    const sim = await eventually(
      async () => {
        const n = await getNode(SIM);
        return n.status?.features ? n : undefined;
      },
      30_000,
      'sim node features',
    );
    expect(sim.status!.runtimeHandlers).to.deep.equal([
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    ]);
    expect(sim.status!.features).to.deep.equal({ supplementalGroupsPolicy: true });
    expect(sim.status!.nodeInfo!.runningInUserNamespace).to.equal(false);
    const old = await getNode(OLD);
    expect(old.status).to.not.have.any.keys('runtimeHandlers', 'features');
    expect(old.status!.nodeInfo!.runningInUserNamespace).to.equal(false);
  });

  it('NodeSwap: nodeInfo.swap.capacity is the declared swap, left out on a node without swap', async () => {
    expect((await getNode(SIM)).status!.nodeInfo!.swap).to.deep.equal({ capacity: 2 * 1024 ** 3 });
    expect((await getNode(OLD)).status!.nodeInfo).to.not.have.property('swap');
  });

  describe('hostUsers: false', () => {
    const spec = { hostUsers: false };

    it('containerd 1.6: no sandbox; FailedCreatePodSandBox with the kubelet message; the pod stays Pending', async () => {
      await createPod('userns-old', OLD, spec);
      const e = await eventOf('userns-old', 'FailedCreatePodSandBox');
      expect(e.type).to.equal('Warning');
      expect(e.message).to.equal(
        "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces",
      );
      const pod = await waiting('userns-old', 'ContainerCreating');
      expect(pod.status?.phase).to.equal('Pending');
      expect(await runtimes.get(OLD)!.listPodSandbox()).to.deep.equal([]);
    });

    it("sim: runs in a user namespace of its own, which its container's uid_map shows", async () => {
      await createPod('userns-sim', SIM, spec);
      const pod = await running('userns-sim');
      const c = await inContainer(SIM, pod);
      const map = await c.exec('cat', '/proc/self/uid_map');
      expect(map).to.match(/^ {9}0 +\d{5,10} +65536\n$/);
      const hostId = Number(map.trim().split(/\s+/)[1]);
      expect(hostId % 65536).to.equal(0);
      expect(hostId).to.be.at.least(65536);
    });
  });

  describe('supplementalGroupsPolicy: Strict', () => {
    const spec = (policy: 'Merge' | 'Strict') => ({
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 1000,
        supplementalGroups: [60000],
        supplementalGroupsPolicy: policy,
      },
    });

    it('containerd 1.6: rejected at admission with the kubelet reason and message', async () => {
      await createPod('strict-old', OLD, spec('Strict'));
      const pod = await waitPodStatus(
        client,
        NS,
        'strict-old',
        (s) => s.phase === 'Failed',
        'Failed',
        30_000,
      );
      expect(pod.status?.reason).to.equal('SupplementalGroupsPolicyNotSupported');
      expect(pod.status?.message).to.equal(
        'Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node',
      );
      const e = await eventOf('strict-old', 'SupplementalGroupsPolicyNotSupported');
      expect(e.message).to.equal('SupplementalGroupsPolicy=Strict is not supported in this node');
      // Merge is what every runtime does: admitted.
      await createPod('merge-old', OLD, spec('Merge'));
      const merged = await running('merge-old');
      expect(merged.status?.containerStatuses?.[0]?.user, 'containerd 1.6 reports no user').to.equal(
        undefined,
      );
    });

    it("sim: Strict runs with the pod's groups only, Merge adds the image's (status user, id -G)", async () => {
      await createPod('strict-sim', SIM, spec('Strict'));
      await createPod('merge-sim', SIM, spec('Merge'));
      const strict = await running('strict-sim');
      const merge = await running('merge-sim');
      expect(strict.status?.containerStatuses?.[0]?.user).to.deep.equal({
        linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 60000] },
      });
      expect(merge.status?.containerStatuses?.[0]?.user).to.deep.equal({
        linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 50000, 60000] },
      });
      expect(await (await inContainer(SIM, strict)).exec('id', '-G')).to.equal('1000 60000\n');
    });
  });

  describe('recursiveReadOnly', () => {
    const spec = (mode: 'Enabled' | 'IfPossible') => ({
      volumes: [{ name: 'd', emptyDir: {} }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          volumeMounts: [{ name: 'd', mountPath: '/d', readOnly: true, recursiveReadOnly: mode }],
        },
      ],
    });
    const message =
      'failed to resolve recursive read-only mode: volume "d" requested recursive read-only mode, but it is not supported by the runtime';

    it('containerd 1.6: Enabled waits in CreateContainerConfigError; IfPossible runs, reported Disabled', async () => {
      await createPod('rro-old', OLD, spec('Enabled'));
      const pod = await waiting('rro-old', 'CreateContainerConfigError');
      expect(pod.status?.containerStatuses?.[0]?.state?.waiting?.message).to.equal(message);
      const e = await eventOf('rro-old', 'Failed');
      expect(e.message).to.equal(`Error: ${message}`);
      await createPod('rro-soft-old', OLD, spec('IfPossible'));
      const soft = await running('rro-soft-old');
      expect(soft.status?.containerStatuses?.[0]?.volumeMounts?.find((m) => m.name === 'd')).to.deep.equal({
        name: 'd',
        mountPath: '/d',
        readOnly: true,
        recursiveReadOnly: 'Disabled',
      });
    });

    it('sim: Enabled runs, the mount recursive read-only as the status and the runtime say', async () => {
      await createPod('rro-sim', SIM, spec('Enabled'));
      const pod = await running('rro-sim');
      expect(pod.status?.containerStatuses?.[0]?.volumeMounts?.find((m) => m.name === 'd')).to.deep.equal({
        name: 'd',
        mountPath: '/d',
        readOnly: true,
        recursiveReadOnly: 'Enabled',
      });
      const { status } = await inContainer(SIM, pod);
      expect(status.mounts?.find((m) => m.containerPath === '/d')).to.include({
        readonly: true,
        recursiveReadOnly: true,
      });
    });
  });

  describe('image volumes', () => {
    const spec = {
      volumes: [{ name: 'vol', image: { reference: 'registry.local/data:1', pullPolicy: 'IfNotPresent' } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          volumeMounts: [{ name: 'vol', mountPath: '/volume' }],
        },
      ],
    };

    it('containerd 1.6: the image is pulled, then the container waits in CreateContainerError (ImageVolumeMountFailed)', async () => {
      await createPod('image-old', OLD, spec);
      const pod = await waiting('image-old', 'CreateContainerError');
      const message = pod.status!.containerStatuses![0]!.state!.waiting!.message!;
      expect(message).to.match(
        /^ImageVolumeMountFailed: cannot mount image "sha256:[0-9a-f]{64}" at "\/volume": the container runtime does not support image volumes/,
      );
      expect((await eventOf('image-old', 'Pulled')).message).to.match(/registry\.local\/data:1/);
      expect((await eventOf('image-old', 'Failed')).message).to.equal(`Error: ${message}`);
      // Not the volume manager's refusal of old: the volume is served (no FailedMount).
      expect((await events('image-old')).some((e) => e.reason === 'FailedMount')).to.equal(false);
    });

    it("sim: runs with the image mounted by ID (the runtime's record of the mount)", async () => {
      await createPod('image-sim', SIM, spec);
      const pod = await running('image-sim');
      const { status } = await inContainer(SIM, pod);
      const imageId = (await runtimes.get(SIM)!.imageStatus('registry.local/data:1'))!.id;
      expect(status.mounts?.find((m) => m.containerPath === '/volume')).to.deep.include({
        hostPath: '',
        readonly: true,
        image: imageId,
      });
      expect(pod.status?.containerStatuses?.[0]?.volumeMounts?.find((m) => m.name === 'vol')).to.deep.equal({
        name: 'vol',
        mountPath: '/volume',
      });
    });
  });
});

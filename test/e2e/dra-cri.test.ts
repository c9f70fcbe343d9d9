/**
 * Dynamic Resource Allocation on a real containerd with a real DRA driver: Kubernetes' own test driver
 * (scripts/dra-plugins.sh) runs its kubelet plugin as a host process against the VirtualNode's kubelet root,
 * registers through plugins_registry/ and publishes the node's devices; the real kube-scheduler allocates a
 * ResourceClaim of a DeviceClass to a pod; the node prepares it (NodePrepareResources), the container gets the
 * driver's CDI env (`user_a=b` from the claim's opaque parameters) applied by the kubelet (containerd 1.6 lacks
 * CDI); a restarted operator keeps the claim from its checkpoint, and deleting the pod unprepares the claim
 * (the driver removes its CDI spec, the checkpoint empties). A DeviceClass with an `extendedResourceName`: a pod
 * asking for that resource gets the scheduler's claim (DRAExtendedResource), prepared like its own, its device
 * in the asking container only. The pod-resources API lists each container's claims (dynamicResources).
 * Device health (ResourceHealthStatus): the upstream driver streams health reports without devices, so its
 * claim's device reads Unknown in allocatedResourcesStatus; a second driver of ours in the test process
 * (test/support/draplugin.ts, since the upstream one takes health changes only in its own process) reports its
 * device Healthy, then Unhealthy with a message, and the container's `claim:` entry follows.
 *
 * Root on Linux is required (containerd); Go for the first build of the driver.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type { Pod } from '../../src/api/core.js';
import { localApiSockets } from '../../src/kubelet/apis/shell/server.js';
import type { KubeClient } from '../../src/kube/client.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { grpcJs, grpcProtoLoader } from '../../src/util/grpcmodules.js';
import { REPO_ROOT } from '../support/controlplane.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { startTestDRAPlugin } from '../support/draplugin.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { isGone } from '../support/operator.js';

const NS = 'dra-e2e';
const NODE = 'vn-dra';
const DRIVER = 'test-driver.cdi.k8s.io';

describe('DRA on containerd (real scheduler, the upstream DRA test driver)', function () {
  this.timeout(8 * 60_000);
  let env: CriNodeEnv | undefined;
  let client: KubeClient;
  let driver: ChildProcess | undefined;
  let driverLog = '';
  let root = '';
  let outDir = '';

  before(async function () {
    this.timeout(20 * 60_000);
    const built = spawnSync(path.join(REPO_ROOT, 'scripts/dra-plugins.sh'), { encoding: 'utf8' });
    if (built.status === 2) this.skip();
    if (built.status !== 0) throw new Error(`dra-plugins.sh: ${built.stderr}`);
    const bin = built.stdout.trim();
    env = await startCriNodeEnv({ node: NODE, namespace: NS, scheduler: true });
    client = env.client;
    root = nodeRootDir(env.stateDir, NODE);
    outDir = path.join(env.dir, 'out');
    await mkdir(outDir);
    // Its socket directory, as its DaemonSet's hostPath (DirectoryOrCreate) would make it.
    await mkdir(path.join(root, 'plugins', DRIVER), { recursive: true });
    driver = spawn(
      bin,
      [
        `--kubeconfig=${env.cp.kubeconfigPath}`,
        '-v=5',
        'kubelet-plugin',
        `--node-name=${NODE}`,
        `--plugin-registration-path=${path.join(root, 'plugins_registry')}`,
        `--datadir=${path.join(root, 'plugins')}`,
        `--cdi-dir=${path.join(root, 'cdi')}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (b: Buffer) => {
      driverLog = (driverLog + b.toString()).slice(-20_000);
    };
    driver.stdout!.on('data', keep);
    driver.stderr!.on('data', keep);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') console.log(`DRA test driver's log:\n${driverLog}`);
  });

  after(async () => {
    driver?.kill('SIGTERM');
    await env?.stop();
  });

  const checkpoint = async (): Promise<{ claimName: string; podUIDs: string[]; prepared: boolean }[]> =>
    (
      JSON.parse(await readFile(path.join(root, 'dra_manager_state'), 'utf8')) as {
        entries: { claimName: string; podUIDs: string[]; prepared: boolean }[];
      }
    ).entries;
  /** pod-resources v1 Get over the node's socket: each container's dynamic resources. */
  const podResourcesGet = async (
    name: string,
  ): Promise<
    {
      name: string;
      dynamic_resources: {
        claim_name: string;
        claim_namespace: string;
        claim_resources: { driver_name: string; pool_name: string; cdi_devices: { name: string }[] }[];
      }[];
    }[]
  > => {
    const g = grpcJs();
    const def = grpcProtoLoader().loadSync(path.join(REPO_ROOT, 'src/kubelet/apis/podresources/v1.proto'), {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
    });
    const Ctor = (
      g.loadPackageDefinition(def) as unknown as Record<string, Record<string, grpc.ServiceClientConstructor>>
    ).v1!.PodResourcesLister!;
    const c = new Ctor(
      `unix:${localApiSockets(root).podResources}`,
      g.credentials.createInsecure(),
    ) as grpc.Client & Record<string, (req: object, cb: (err: Error | null, res: unknown) => void) => void>;
    try {
      const res = await new Promise<{ pod_resources: { containers: never[] } }>((resolve, reject) =>
        c.Get!.call(c, { pod_name: name, pod_namespace: NS }, (err, r) =>
          err ? reject(err) : resolve(r as { pod_resources: { containers: never[] } }),
        ),
      );
      return res.pod_resources.containers;
    } finally {
      c.close();
    }
  };
  const cdiFiles = (): string[] =>
    existsSync(path.join(root, 'cdi')) ? readdirSync(path.join(root, 'cdi')).sort() : [];

  /** Waits for the driver's ResourceSlice of the node: it has registered and published its devices. */
  const createDeviceClass = (name: string, driver: string, spec: Record<string, unknown> = {}) =>
    client.request({
      method: 'POST',
      path: '/apis/resource.k8s.io/v1/deviceclasses',
      body: {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'DeviceClass',
        metadata: { name },
        spec: { selectors: [{ cel: { expression: `device.driver == "${driver}"` } }], ...spec },
      },
    });
  /** A claim with one request `req` of the class. */
  const createClaim = (name: string, className: string, config?: unknown[]) =>
    client.request({
      method: 'POST',
      path: `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims`,
      body: {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceClaim',
        metadata: { name },
        spec: {
          devices: {
            requests: [{ name: 'req', exactly: { deviceClassName: className } }],
            ...(config ? { config } : {}),
          },
        },
      },
    });
  /** A pod for the scheduler to place (no nodeName), tolerating whatever the fresh Node carries. */
  const createScheduledPod = (name: string, spec: Record<string, unknown>) =>
    client.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        // No node lifecycle controller runs here to lift the fresh Node's taints.
        spec: { terminationGracePeriodSeconds: 1, tolerations: [{ operator: 'Exists' }], ...spec },
      },
    });

  const driverSlicePublished = () =>
    eventually(
      async () => {
        if (driver?.exitCode !== null) throw new Error(`the driver exited (${driver?.exitCode})`);
        const l = await client.request<{ items: unknown[] }>({
          method: 'GET',
          path: '/apis/resource.k8s.io/v1/resourceslices',
          query: { fieldSelector: `spec.nodeName=${NODE},spec.driver=${DRIVER}` },
        });
        return l.items.length > 0;
      },
      90_000,
      "the driver's ResourceSlice",
      500,
    );

  it('prepares an allocated claim, gives the container its CDI env, unprepares it when the pod is gone', async () => {
    // The driver registers with the node and publishes its devices.
    await driverSlicePublished();

    await createDeviceClass('dra-e2e-class', DRIVER);
    await createClaim('claim', 'dra-e2e-class', [{ opaque: { driver: DRIVER, parameters: { a: 'b' } } }]);
    // No nodeName: the scheduler allocates the claim on the node and reserves it for the pod.
    const created = await createScheduledPod('dra', {
      resourceClaims: [{ name: 'gpu', resourceClaimName: 'claim' }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'env > /out/env; sleep 3600'],
          resources: { claims: [{ name: 'gpu' }] },
          volumeMounts: [{ name: 'out', mountPath: '/out' }],
        },
      ],
      volumes: [{ name: 'out', hostPath: { path: outDir } }],
    });
    const uid = created.metadata.uid!;

    const running = await env!
      .waitPod('dra', (s) => s.phase === 'Running', 'the DRA pod running', 120_000)
      .catch(async (err: Error) => {
        const p = await env!.getPod('dra');
        const c = await client.request({
          method: 'GET',
          path: `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims/claim`,
        });
        const ev = (await eventsOf(client, NS, 'dra')).map((e) => `${e.reason}: ${e.message}`);
        throw new Error(
          `${err.message}\npod: ${JSON.stringify({ nodeName: p.spec.nodeName, status: p.status })}\nclaim: ${JSON.stringify(c)}\nevents: ${ev.join('\n')}`,
        );
      });
    expect(running.spec.nodeName).to.equal(NODE);
    const containerEnv = await eventually(
      async () => {
        const t = await readFile(path.join(outDir, 'env'), 'utf8');
        return t.includes('user_a=') ? t : undefined;
      },
      30_000,
      "the container's env",
    );
    expect(containerEnv).to.match(/^user_a=b$/m);
    expect(containerEnv).to.match(/^claim_claim_req=true$/m);

    const claim = await client.request<{ metadata: { uid: string } }>({
      method: 'GET',
      path: `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims/claim`,
    });
    expect(cdiFiles().join(' ')).to.contain(claim.metadata.uid);
    expect((await checkpoint()).map((e) => [e.claimName, e.podUIDs, e.prepared])).to.deep.equal([
      ['claim', [uid], true],
    ]);
    const [listed] = await podResourcesGet('dra');
    expect(
      listed!.dynamic_resources.map((d) => [d.claim_name, d.claim_resources[0]?.cdi_devices]),
    ).to.deep.equal([['claim', [{ name: `${DRIVER}/test=claim-${claim.metadata.uid}-req` }]]]);
    // Its health: the driver streams reports that name no device, so Unknown, under the first CDI ID.
    const health = await eventually(
      async () => (await env!.getPod('dra')).status?.containerStatuses?.[0]?.allocatedResourcesStatus,
      30_000,
      'allocatedResourcesStatus',
    );
    expect(health).to.deep.equal([
      {
        name: 'claim:gpu',
        resources: [{ resourceID: `${DRIVER}/test=claim-${claim.metadata.uid}-req`, health: 'Unknown' }],
      },
    ]);

    // A new operator process keeps the claim prepared (its checkpoint) and the pod running.
    await env!.restartOperator();
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await env!.getPod('dra')).status?.phase).to.equal('Running');
    expect((await checkpoint()).map((e) => e.podUIDs)).to.deep.equal([[uid]]);

    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/dra` });
    await eventually(() => isGone(client, `/api/v1/namespaces/${NS}/pods/dra`), 90_000, 'the pod gone', 500);
    expect(await checkpoint()).to.deep.equal([]);
    expect(cdiFiles().join(' ')).not.to.contain(claim.metadata.uid);
    const warnings = (await eventsOf(client, NS, 'dra')).filter(
      (e) => e.reason === 'FailedPrepareDynamicResources',
    );
    expect(warnings.map((e) => e.message)).to.deep.equal([]);
  });

  it("a DeviceClass's extended resource: the scheduler's claim is prepared, only the asking container gets its device", async () => {
    await driverSlicePublished();
    // The class's own config reaches the driver as admin parameters (`admin_kind=extended` in the env).
    await createDeviceClass('dra-e2e-extended', DRIVER, {
      extendedResourceName: 'example.com/gpu',
      config: [{ opaque: { driver: DRIVER, parameters: { kind: 'extended' } } }],
    });
    const extOut = path.join(env!.dir, 'out-extended');
    await mkdir(extOut);
    const sh = (name: string) => ['sh', '-c', `env > /out/${name}; sleep 3600`];
    const created = await createScheduledPod('extended', {
      containers: [
        {
          name: 'gpu',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: sh('gpu'),
          resources: { limits: { 'example.com/gpu': '1' } },
          volumeMounts: [{ name: 'out', mountPath: '/out' }],
        },
        {
          name: 'plain',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: sh('plain'),
          volumeMounts: [{ name: 'out', mountPath: '/out' }],
        },
      ],
      volumes: [{ name: 'out', hostPath: { path: extOut } }],
    });
    const uid = created.metadata.uid!;
    const running = await env!
      .waitPod('extended', (s) => s.phase === 'Running', 'the extended-resource pod running', 120_000)
      .catch(async (err: Error) => {
        const p = await env!.getPod('extended');
        const ev = (await eventsOf(client, NS, 'extended')).map((e) => `${e.reason}: ${e.message}`);
        throw new Error(
          `${err.message}\npod: ${JSON.stringify({ nodeName: p.spec.nodeName, status: p.status })}\nevents: ${ev.join('\n')}`,
        );
      });
    expect(running.spec.nodeName).to.equal(NODE);
    // The scheduler's claim, still named in the status the node has been writing.
    const st = running.status?.extendedResourceClaimStatus as
      | {
          resourceClaimName: string;
          requestMappings: { containerName: string; resourceName: string; requestName: string }[];
        }
      | undefined;
    expect(st?.requestMappings.map((m) => [m.containerName, m.resourceName])).to.deep.equal([
      ['gpu', 'example.com/gpu'],
    ]);
    const claimName = st!.resourceClaimName;
    const readEnv = (name: string) =>
      eventually(
        async () => {
          const t = await readFile(path.join(extOut, name), 'utf8');
          return t.includes('PATH=') ? t : undefined;
        },
        30_000,
        `the env of ${name}`,
      );
    const gpuEnv = await readEnv('gpu');
    expect(gpuEnv, gpuEnv).to.match(/^admin_kind=extended$/m);
    expect(gpuEnv).to.match(new RegExp(`^claim_${claimName.replace(/[^a-zA-Z0-9]/g, '_')}_\\w+=true$`, 'm'));
    const plainEnv = await readEnv('plain');
    expect(plainEnv, plainEnv).not.to.match(/admin_kind|^claim_/m);

    const claim = await client.request<{ metadata: { uid: string } }>({
      method: 'GET',
      path: `/apis/resource.k8s.io/v1/namespaces/${NS}/resourceclaims/${claimName}`,
    });
    expect(cdiFiles().join(' ')).to.contain(claim.metadata.uid);
    // The pod-resources API names the claim and its device for the asking container only.
    const listed = await podResourcesGet('extended');
    expect(
      listed.map((c) => [c.name, c.dynamic_resources.map((d) => [d.claim_name, d.claim_namespace])]),
    ).to.deep.equal([
      ['gpu', [[claimName, NS]]],
      ['plain', []],
    ]);
    const [device] = listed[0]!.dynamic_resources[0]!.claim_resources;
    expect(device).to.deep.include({ driver_name: DRIVER, pool_name: NODE });
    expect(device!.cdi_devices.map((d) => d.name)).to.deep.equal([
      `${DRIVER}/test=claim-${claim.metadata.uid}-${st!.requestMappings[0]!.requestName}`,
    ]);
    expect((await checkpoint()).map((e) => [e.claimName, e.podUIDs, e.prepared])).to.deep.equal([
      [claimName, [uid], true],
    ]);

    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/extended` });
    await eventually(
      () => isGone(client, `/api/v1/namespaces/${NS}/pods/extended`),
      90_000,
      'the pod gone',
      500,
    );
    expect(await checkpoint()).to.deep.equal([]);
    expect(cdiFiles().join(' ')).not.to.contain(claim.metadata.uid);
    const refused = (await eventsOf(client, NS, 'extended')).filter(
      (e) => e.reason === 'FailedPrepareDynamicResources' || e.reason.startsWith('OutOf'),
    );
    expect(refused.map((e) => `${e.reason}: ${e.message}`)).to.deep.equal([]);
  });

  it("a driver's health reports reach the container's allocatedResourcesStatus: Healthy, then Unhealthy with its message", async () => {
    const HEALTH_DRIVER = 'health.example.com';
    const plugin = await startTestDRAPlugin({
      client,
      driver: HEALTH_DRIVER,
      nodeName: NODE,
      root,
      devices: ['gpu-0'],
    });
    try {
      await Promise.race([
        plugin.registered,
        new Promise((_, reject) => setTimeout(() => reject(new Error('the plugin not registered')), 60_000)),
      ]);
      await plugin.publish();
      await createDeviceClass('dra-e2e-health', HEALTH_DRIVER);
      await createClaim('health', 'dra-e2e-health');
      await createScheduledPod('health', {
        resourceClaims: [{ name: 'gpu', resourceClaimName: 'health' }],
        containers: [
          {
            name: 'c',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
            resources: { claims: [{ name: 'gpu', request: 'req' }] },
          },
          {
            name: 'plain',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
          },
        ],
      });
      await env!
        .waitPod('health', (s) => s.phase === 'Running', 'the health pod running', 120_000)
        .catch(async (err: Error) => {
          const p = await env!.getPod('health');
          const ev = (await eventsOf(client, NS, 'health')).map((e) => `${e.reason}: ${e.message}`);
          throw new Error(`${err.message}\npod: ${JSON.stringify(p.status)}\nevents: ${ev.join('\n')}`);
        });
      const entries = async () => {
        const st = (await env!.getPod('health')).status?.containerStatuses ?? [];
        return Object.fromEntries(st.map((c) => [c.name, c.allocatedResourcesStatus]));
      };
      const want = (health: string, message?: string) => ({
        c: [
          {
            name: 'claim:gpu/req',
            resources: [
              { resourceID: `${HEALTH_DRIVER}/${NODE}/gpu-0`, health, ...(message ? { message } : {}) },
            ],
          },
        ],
        plain: undefined,
      });
      await eventually(
        async () => JSON.stringify(await entries()) === JSON.stringify(want('Healthy')),
        30_000,
        'the claim Healthy',
        500,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(await entries())}`);
      });
      expect(plugin.streamsOpened()).to.be.at.least(1);
      // The driver finds its device broken: the pod is synced at once, the message goes with the health.
      const changedAt = Date.now();
      plugin.setHealth('gpu-0', 'UNHEALTHY', 'XID 79: GPU has fallen off the bus');
      await eventually(
        async () =>
          JSON.stringify(await entries()) ===
          JSON.stringify(want('Unhealthy', 'XID 79: GPU has fallen off the bus')),
        30_000,
        'the claim Unhealthy',
        200,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(await entries())}`);
      });
      // Not the next periodic resync (a minute): the health change synced the pod.
      expect(Date.now() - changedAt).to.be.below(15_000);
      const healthState = JSON.parse(await readFile(path.join(root, 'dra_health_state'), 'utf8')) as Record<
        string,
        { Devices: Record<string, { Health: string; Message: string }> }
      >;
      expect(healthState[HEALTH_DRIVER]?.Devices[`${NODE}/gpu-0`]).to.deep.include({
        Health: 'Unhealthy',
        Message: 'XID 79: GPU has fallen off the bus',
      });

      await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/health` });
      await eventually(
        () => isGone(client, `/api/v1/namespaces/${NS}/pods/health`),
        90_000,
        'the pod gone',
        500,
      );
    } finally {
      await plugin.stop();
    }
  });

  it('a pod whose claim is not reserved for it gets FailedPrepareDynamicResources and no sandbox', async () => {
    await createClaim('unreserved', 'dra-e2e-class');
    // Bound directly (no scheduler): nothing allocates or reserves the claim.
    await env!.createPod('unreserved', {
      terminationGracePeriodSeconds: 1,
      resourceClaims: [{ name: 'gpu', resourceClaimName: 'unreserved' }],
      containers: [
        { name: 'c', image: 'busybox', command: ['sleep', '3600'], resources: { claims: [{ name: 'gpu' }] } },
      ],
    });
    const ev = await eventually(
      async () =>
        (await eventsOf(client, NS, 'unreserved')).find((e) => e.reason === 'FailedPrepareDynamicResources'),
      60_000,
      'FailedPrepareDynamicResources',
      500,
    );
    expect(ev.type).to.equal('Warning');
    expect(ev.message).to.match(
      /^Failed to prepare dynamic resources: prepare dynamic resources: pod unreserved \([0-9a-f-]+\) is not allowed to use ResourceClaim unreserved \(/,
    );
    expect((await env!.getPod('unreserved')).status?.phase).to.equal('Pending');
    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/unreserved` });
    await eventually(
      () => isGone(client, `/api/v1/namespaces/${NS}/pods/unreserved`),
      60_000,
      'the pod gone',
      500,
    );
  });
});

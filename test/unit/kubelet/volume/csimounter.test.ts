import { expect } from 'chai';
import type { PersistentVolume, Volume } from '../../../../src/api/volumes.js';
import {
  attachmentName,
  ephemeralVolumeHandle,
  publishTargetPath,
  stagingTargetPath,
  type CSIDriver,
  type CSIHost,
  type CSIVolumeUsage,
  type CSINodeClient,
  type NodeExpandRequest,
  type NodePublishRequest,
  type NodeStageRequest,
  type VolumeAttachment,
} from '../../../../src/kubelet/volume/csi.js';
import type { ExpandableClaim } from '../../../../src/kubelet/volume/csiexpand.js';
import { VolumeManager } from '../../../../src/kubelet/volumemanager/volumemanager.js';
import { b64, harness, NS, PODS, podWith, text, type Harness } from '../volumemanager/fixtures.js';

const DRIVER = 'hostpath.csi.k8s.io';

/** A JSON merge patch applied in place (null deletes). */
function mergePatch(target: Record<string, unknown> | object, patch: Record<string, unknown>): void {
  const t = target as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete t[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof t[k] === 'object' && t[k] !== null) {
      mergePatch(t[k] as Record<string, unknown>, v as Record<string, unknown>);
    } else t[k] = structuredClone(v);
  }
}
const PLUGINS = '/var/lib/kubelet/plugins';
const NODE = 'node-a';

/** A CSI driver's Node service over the harness's memory fs and mounter: it "mounts" what it stages and publishes. */
class FakeDriver implements CSINodeClient {
  caps = new Set(['STAGE_UNSTAGE_VOLUME']);
  readonly calls: string[] = [];
  readonly stages: NodeStageRequest[] = [];
  readonly publishes: NodePublishRequest[] = [];
  readonly fail = new Map<string, Error>();
  constructor(private readonly h: Harness) {}

  private check(op: string): void {
    const err = this.fail.get(op);
    if (err) throw err;
  }
  async nodeGetCapabilities(): Promise<Set<string>> {
    return new Set(this.caps);
  }
  async nodeStageVolume(r: NodeStageRequest): Promise<void> {
    this.calls.push(`stage ${r.volumeId}`);
    this.check('stage');
    this.stages.push(r);
    await this.h.mounter.mountTmpfs(r.stagingTargetPath);
  }
  async nodeUnstageVolume(id: string, staging: string): Promise<void> {
    this.calls.push(`unstage ${id}`);
    this.check('unstage');
    await this.h.mounter.unmount(staging);
  }
  async nodePublishVolume(r: NodePublishRequest): Promise<void> {
    this.calls.push(`publish ${r.volumeId}`);
    this.check('publish');
    this.publishes.push(r);
    await this.h.fs.mkdir(r.targetPath);
    await this.h.mounter.mountTmpfs(r.targetPath);
  }
  async nodeUnpublishVolume(id: string, target: string): Promise<void> {
    this.calls.push(`unpublish ${id}`);
    this.check('unpublish');
    await this.h.mounter.unmount(target);
    await this.h.fs.rm(target);
  }
  usage: CSIVolumeUsage[] = [
    { unit: 'BYTES', total: 1000, available: 600, used: 400 },
    { unit: 'INODES', total: 50, available: 45, used: 5 },
  ];
  readonly statsCalls: string[] = [];
  readonly expands: NodeExpandRequest[] = [];
  async nodeExpandVolume(r: NodeExpandRequest): Promise<void> {
    this.calls.push(`expand ${r.volumeId} ${r.requiredBytes}`);
    this.check('expand');
    this.expands.push(r);
  }
  async nodeGetVolumeStats(id: string, path: string, staging: string): Promise<CSIVolumeUsage[]> {
    this.statsCalls.push(`${id} ${path} ${staging}`);
    this.check('stats');
    return this.usage;
  }
}

interface CSIHarness extends Harness {
  driver: FakeDriver;
  registered: { value: boolean };
  csiDrivers: Map<string, CSIDriver>;
  attachments: Map<string, VolumeAttachment>;
  vm: VolumeManager;
  refreshes: string[];
  /** The CSIDriver's nodeAllocatableUpdatePeriodSeconds as refreshAllocatable sees it. */
  period: { value: number };
  /** The claims node expansion reads afresh, by `<ns>/<name>`, and the status patches it wrote. */
  claims: Map<string, ExpandableClaim>;
  claimPatches: unknown[];
}

function csiHarness(): CSIHarness {
  const h = harness();
  const driver = new FakeDriver(h);
  const registered = { value: true };
  const refreshes: string[] = [];
  const period = { value: 0 };
  const claims = new Map<string, ExpandableClaim>();
  const claimPatches: unknown[] = [];
  const csiDrivers = new Map<string, CSIDriver>();
  const attachments = new Map<string, VolumeAttachment>();
  const host: CSIHost = {
    nodeName: NODE,
    pluginsDir: PLUGINS,
    nodeClient: (name) => (registered.value && name === DRIVER ? driver : undefined),
    getCSIDriver: async (name) => csiDrivers.get(name),
    getVolumeAttachment: async (name) => attachments.get(name),
    claims: {
      getClaim: async (ns, name) => structuredClone(claims.get(`${ns}/${name}`)),
      getVolume: (name) => h.sources.getPersistentVolume(name),
      patchClaimStatus: async (ns, name, patch) => {
        claimPatches.push(structuredClone(patch));
        const c = claims.get(`${ns}/${name}`)!;
        mergePatch(c, { status: patch.status });
        c.metadata.resourceVersion = String(Number(c.metadata.resourceVersion ?? '0') + 1);
        return structuredClone(c);
      },
    },
    refreshAllocatable: async (name) => {
      if (period.value === 0) return false;
      refreshes.push(name);
      return true;
    },
  };
  h.deps.csi = host;
  return {
    ...h,
    vm: new VolumeManager(h.deps),
    driver,
    registered,
    csiDrivers,
    attachments,
    refreshes,
    period,
    claims,
    claimPatches,
  };
}

function csiPV(name = 'pv-1', handle = 'vol-1', extra: Record<string, unknown> = {}): PersistentVolume {
  return {
    metadata: { name },
    spec: {
      accessModes: ['ReadWriteOnce'],
      claimRef: { namespace: NS, name: `claim-${name}`, uid: `claim-uid-${name}` },
      csi: { driver: DRIVER, volumeHandle: handle, fsType: 'ext4', ...extra },
    },
  };
}

function bind(h: CSIHarness, pv: PersistentVolume): Volume {
  const claim = `claim-${pv.metadata.name}`;
  h.sources.claims.set(`${NS}/${claim}`, {
    metadata: { name: claim, namespace: NS, uid: `claim-uid-${pv.metadata.name}` },
    spec: { volumeName: pv.metadata.name! },
    status: { phase: 'Bound' },
  });
  h.sources.volumes.set(pv.metadata.name!, pv);
  return { name: 'data', persistentVolumeClaim: { claimName: claim } };
}

const noAttach = (): CSIDriver => ({
  metadata: { name: DRIVER },
  spec: {
    attachRequired: false,
    fsGroupPolicy: 'ReadWriteOnceWithFSType',
    volumeLifecycleModes: ['Persistent', 'Ephemeral'],
  },
});

describe('volume/csimounter (CSI SetUp and TearDown through the volume manager)', () => {
  it('stages, then publishes into the pod, with vol_data.json beside both; the container mounts the target', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    const pod = podWith([bind(h, csiPV())]);
    const r = await h.vm.mountPod(pod);
    expect(r.ok).to.equal(true);
    const target = publishTargetPath(PODS, 'uid-1', 'pv-1');
    const staging = stagingTargetPath(PLUGINS, DRIVER, 'vol-1');
    expect(r.ok && r.volumes.get('data')).to.deep.include({ hostPath: target, readOnly: false });
    expect(h.driver.calls).to.deep.equal(['stage vol-1', 'publish vol-1']);
    expect(h.driver.stages[0]).to.deep.include({ stagingTargetPath: staging, publishContext: {} });
    expect(h.driver.publishes[0]).to.deep.include({
      stagingTargetPath: staging,
      targetPath: target,
      readOnly: false,
    });
    expect(h.driver.publishes[0]!.capability).to.deep.equal({
      fsType: 'ext4',
      mountFlags: [],
      volumeMountGroup: '',
      accessMode: 'SINGLE_NODE_WRITER',
    });
    expect(
      JSON.parse(await text(h.fs, `${PODS}/uid-1/volumes/kubernetes.io~csi/pv-1/vol_data.json`)),
    ).to.deep.equal({
      specVolID: 'pv-1',
      volumeHandle: 'vol-1',
      driverName: DRIVER,
      nodeName: NODE,
      attachmentID: attachmentName('vol-1', DRIVER, NODE),
      volumeLifecycleMode: 'Persistent',
    });
    expect(JSON.parse(await text(h.fs, staging.replace(/globalmount$/, 'vol_data.json')))).to.deep.equal({
      driverName: DRIVER,
      volumeHandle: 'vol-1',
    });
  });

  it('a driver without STAGE_UNSTAGE_VOLUME is only published (no staging path)', async () => {
    const h = csiHarness();
    h.driver.caps = new Set();
    h.csiDrivers.set(DRIVER, noAttach());
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(true);
    expect(h.driver.calls).to.deep.equal(['publish vol-1']);
    expect(h.driver.publishes[0]!.stagingTargetPath).to.equal('');
  });

  it('waits for the VolumeAttachment when the driver requires attach, then uses its metadata', async () => {
    const h = csiHarness();
    const pod = podWith([bind(h, csiPV())]);
    const first = await h.vm.mountPod(pod);
    expect(first).to.deep.include({ ok: false, report: false });
    expect(h.driver.calls).to.deep.equal([]);
    expect(h.events.map((e) => e.message)[0]).to.match(
      /^MountVolume.SetUp failed for volume "data" : volume vol-1 has GET error for volume attachment csi-[0-9a-f]{64}: .* not found$/,
    );
    h.attachments.set(attachmentName('vol-1', DRIVER, NODE), {
      metadata: { name: 'x' },
      status: { attached: true, attachmentMetadata: { devicePath: '/dev/sdz' } },
    });
    h.clock.advance(600);
    expect((await h.vm.mountPod(pod)).ok).to.equal(true);
    expect(h.driver.stages[0]!.publishContext).to.deep.equal({ devicePath: '/dev/sdz' });
    expect(h.driver.publishes[0]!.publishContext).to.deep.equal({ devicePath: '/dev/sdz' });
  });

  it('a driver not registered yet is a mount failure that is retried', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    h.registered.value = false;
    const pod = podWith([bind(h, csiPV())]);
    expect((await h.vm.mountPod(pod)).ok).to.equal(false);
    expect(h.events[0]!.message).to.equal(
      `MountVolume.SetUp failed for volume "data" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name ${DRIVER} not found in the list of registered CSI drivers`,
    );
    h.registered.value = true;
    h.clock.advance(600);
    expect((await h.vm.mountPod(pod)).ok).to.equal(true);
  });

  it('passes the stage and publish secrets, decoded', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    h.sources.secrets.set('ns1/stage', { data: { user: b64('alice') } });
    h.sources.secrets.set(`${NS}/pub`, { data: { key: b64('k3y') } });
    const pv = csiPV('pv-1', 'vol-1', {
      nodeStageSecretRef: { name: 'stage', namespace: 'ns1' },
      nodePublishSecretRef: { name: 'pub', namespace: NS },
    });
    expect((await h.vm.mountPod(podWith([bind(h, pv)]))).ok).to.equal(true);
    expect(h.driver.stages[0]!.secrets).to.deep.equal({ user: 'alice' });
    expect(h.driver.publishes[0]!.secrets).to.deep.equal({ key: 'k3y' });
  });

  it('a missing publish secret is a mount failure naming it, and nothing is published', async () => {
    const h = csiHarness();
    h.driver.caps = new Set();
    h.csiDrivers.set(DRIVER, noAttach());
    const pv = csiPV('pv-1', 'vol-1', { nodePublishSecretRef: { name: 'gone', namespace: NS } });
    expect((await h.vm.mountPod(podWith([bind(h, pv)]))).ok).to.equal(false);
    expect(h.events[0]!.message).to.equal(
      `MountVolume.SetUp failed for volume "data" : kubernetes.io/csi: mounter.SetUpAt failed: fetching NodePublishSecretRef ${NS}/gone failed: secrets "gone" not found`,
    );
    expect(h.driver.calls).to.deep.equal([]);
  });

  it('a failed publish removes the volume directory and reports the driver error', async () => {
    const h = csiHarness();
    h.driver.caps = new Set();
    h.csiDrivers.set(DRIVER, noAttach());
    h.driver.fail.set('publish', new Error('rpc error: code = Internal desc = boom'));
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(false);
    expect(h.events[0]!.message).to.equal(
      'MountVolume.SetUp failed for volume "data" : rpc error: code = Internal desc = boom',
    );
    expect(await h.fs.lstat(`${PODS}/uid-1/volumes/kubernetes.io~csi/pv-1`)).to.equal(undefined);
  });

  it('applies the fsGroup itself unless the driver has VOLUME_MOUNT_GROUP', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())], { fsGroup: 2000 }))).ok).to.equal(true);
    expect((await h.fs.stat(publishTargetPath(PODS, 'uid-1', 'pv-1')))?.gid).to.equal(2000);

    const g = csiHarness();
    g.driver.caps = new Set(['VOLUME_MOUNT_GROUP']);
    g.csiDrivers.set(DRIVER, noAttach());
    expect((await g.vm.mountPod(podWith([bind(g, csiPV())], { fsGroup: 2000 }))).ok).to.equal(true);
    expect(g.driver.publishes[0]!.capability.volumeMountGroup).to.equal('2000');
    expect((await g.fs.stat(publishTargetPath(PODS, 'uid-1', 'pv-1')))?.gid).to.equal(0);
  });

  it('teardown unpublishes, then unstages once no other pod publishes the volume', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    const vol = bind(h, csiPV());
    expect((await h.vm.mountPod(podWith([vol], { uid: 'uid-1' }))).ok).to.equal(true);
    expect((await h.vm.mountPod(podWith([vol], { uid: 'uid-2', name: 'web-1' }))).ok).to.equal(true);
    h.driver.calls.length = 0;
    await h.vm.unmountPod('uid-1');
    expect(h.driver.calls).to.deep.equal(['unpublish vol-1']);
    expect(await h.fs.lstat(`${PODS}/uid-1/volumes/kubernetes.io~csi/pv-1`)).to.equal(undefined);
    // A new process (restart): the teardown reads what is on disk.
    await h.restart().unmountPod('uid-2');
    expect(h.driver.calls).to.deep.equal(['unpublish vol-1', 'unpublish vol-1', 'unstage vol-1']);
    expect(
      await h.fs.lstat(stagingTargetPath(PLUGINS, DRIVER, 'vol-1').replace(/\/globalmount$/, '')),
    ).to.equal(undefined);
  });

  it('a failed unpublish keeps everything and rejects; the next try completes', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(true);
    h.driver.fail.set('unpublish', new Error('rpc error: code = Internal desc = busy'));
    let err: unknown;
    await h.vm.unmountPod('uid-1').catch((e: unknown) => (err = e));
    expect(String(err)).to.contain(
      'UnmountVolume.TearDown failed for volume "pv-1": rpc error: code = Internal desc = busy',
    );
    expect(h.driver.calls).to.not.include('unstage vol-1');
    expect(await h.mounter.mountPoint(publishTargetPath(PODS, 'uid-1', 'pv-1'))).to.not.equal(undefined);
    // The orphan cleanup does not remove the directory under a published volume either.
    expect(await h.vm.cleanupOrphanedPodDirs(() => false)).to.deep.equal([]);
    h.driver.fail.delete('unpublish');
    await h.vm.unmountPod('uid-1');
    expect(h.driver.calls.slice(-2)).to.deep.equal(['unpublish vol-1', 'unstage vol-1']);
  });

  it('teardown with the driver gone rejects until it is back', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, noAttach());
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(true);
    h.registered.value = false;
    let err: unknown;
    await h.vm.unmountPod('uid-1').catch((e: unknown) => (err = e));
    expect(String(err)).to.contain(`driver name ${DRIVER} not found in the list of registered CSI drivers`);
    h.registered.value = true;
    await h.vm.unmountPod('uid-1');
    expect(h.driver.calls.slice(-2)).to.deep.equal(['unpublish vol-1', 'unstage vol-1']);
  });

  it('an inline ephemeral volume is published with the pod info, never staged, and unpublished at teardown', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, { ...noAttach(), spec: { ...noAttach().spec, podInfoOnMount: true } });
    const pod = podWith([{ name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { size: '1Mi' } } }]);
    const r = await h.vm.mountPod(pod);
    expect(r.ok).to.equal(true);
    const handle = ephemeralVolumeHandle('uid-1', 'scratch');
    expect(h.driver.calls).to.deep.equal([`publish ${handle}`]);
    expect(h.driver.publishes[0]!.targetPath).to.equal(publishTargetPath(PODS, 'uid-1', 'scratch'));
    expect(h.driver.publishes[0]!.volumeContext).to.deep.include({
      size: '1Mi',
      'csi.storage.k8s.io/pod.name': 'web-0',
      'csi.storage.k8s.io/ephemeral': 'true',
    });
    await h.vm.unmountPod('uid-1');
    expect(h.driver.calls).to.deep.equal([`publish ${handle}`, `unpublish ${handle}`]);
  });

  it('an inline volume of a driver that serves only persistent volumes waits with the kubelet error', async () => {
    const h = csiHarness();
    h.csiDrivers.set(DRIVER, {
      metadata: { name: DRIVER },
      spec: { fsGroupPolicy: 'File', volumeLifecycleModes: ['Persistent'] },
    });
    expect((await h.vm.mountPod(podWith([{ name: 'scratch', csi: { driver: DRIVER } }]))).ok).to.equal(false);
    expect(h.events[0]!.message).to.equal(
      `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ${DRIVER} (only supports ["Persistent"])`,
    );
    expect(h.driver.calls).to.deep.equal([]);
  });

  it('service-account tokens for a CSIDriver with tokenRequests, in the volume context', async () => {
    const h = csiHarness();
    h.driver.caps = new Set();
    h.csiDrivers.set(DRIVER, {
      ...noAttach(),
      spec: { ...noAttach().spec, tokenRequests: [{ audience: 'vault', expirationSeconds: 600 }] },
    });
    expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(true);
    expect(h.tokenCalls.map((c) => c.projection)).to.deep.equal([
      { audience: 'vault', expirationSeconds: 600, path: 'token' },
    ]);
    expect(
      JSON.parse(h.driver.publishes[0]!.volumeContext['csi.storage.k8s.io/serviceAccount.tokens']!),
    ).to.deep.equal({
      vault: { token: 'jwt-token', expirationTimestamp: '2026-01-02T03:14:05Z' },
    });
  });

  describe('volume stats (NodeGetVolumeStats for the Summary)', () => {
    it('reports a mounted CSI claim with its pvcRef, asks once a minute, and keeps the last on a failure', async () => {
      const h = csiHarness();
      h.driver.caps = new Set(['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS']);
      h.csiDrivers.set(DRIVER, noAttach());
      expect((await h.vm.mountPod(podWith([bind(h, csiPV())]))).ok).to.equal(true);
      const want = {
        name: 'data',
        timeMs: h.clock.now(),
        capacityBytes: 1000,
        availableBytes: 600,
        usedBytes: 400,
        inodes: 50,
        inodesFree: 45,
        inodesUsed: 5,
        pvcRef: { name: 'claim-pv-1', namespace: NS },
      };
      expect(await h.vm.csiVolumeStats('uid-1')).to.deep.equal([want]);
      expect(h.driver.statsCalls).to.deep.equal([
        `vol-1 ${publishTargetPath(PODS, 'uid-1', 'pv-1')} ${stagingTargetPath(PLUGINS, DRIVER, 'vol-1')}`,
      ]);
      h.clock.advance(30_000);
      expect(await h.vm.csiVolumeStats('uid-1')).to.deep.equal([want]);
      expect(h.driver.statsCalls).to.have.length(1);
      h.clock.advance(30_000);
      h.driver.fail.set('stats', new Error('rpc error: code = Internal desc = gone'));
      expect(await h.vm.csiVolumeStats('uid-1')).to.deep.equal([want]);
      expect(h.driver.statsCalls).to.have.length(2);
      h.driver.fail.delete('stats');
      h.driver.usage = [{ unit: 'BYTES', total: 1000, available: 100, used: 900 }];
      const [now] = await h.vm.csiVolumeStats('uid-1');
      expect(now).to.deep.equal({
        name: 'data',
        timeMs: h.clock.now(),
        capacityBytes: 1000,
        availableBytes: 100,
        usedBytes: 900,
        pvcRef: { name: 'claim-pv-1', namespace: NS },
      });
    });

    it('leaves out drivers without GET_VOLUME_STATS and volumes that are not CSI', async () => {
      const h = csiHarness();
      h.csiDrivers.set(DRIVER, noAttach());
      h.sources.configMaps.set(`${NS}/cfg`, { data: { a: 'b' } });
      const pod = podWith([bind(h, csiPV()), { name: 'cfg', configMap: { name: 'cfg' } }]);
      expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      expect(await h.vm.csiVolumeStats('uid-1')).to.deep.equal([]);
      expect(h.driver.statsCalls).to.deep.equal([]);
      expect(await h.vm.csiVolumeStats('unknown-uid')).to.deep.equal([]);
    });

    it('an inline volume has no pvcRef and no staging path', async () => {
      const h = csiHarness();
      h.driver.caps = new Set(['GET_VOLUME_STATS']);
      h.csiDrivers.set(DRIVER, noAttach());
      expect((await h.vm.mountPod(podWith([{ name: 'scratch', csi: { driver: DRIVER } }]))).ok).to.equal(
        true,
      );
      const [st] = await h.vm.csiVolumeStats('uid-1');
      expect(st?.name).to.equal('scratch');
      expect(st).to.not.have.property('pvcRef');
      expect(h.driver.statsCalls[0]!.endsWith(' ')).to.equal(true);
    });
  });

  describe('the attach limit (MutableCSINodeAllocatableCount)', () => {
    const exhausted = (h: CSIHarness): void => {
      h.attachments.set(attachmentName('vol-1', DRIVER, NODE), {
        metadata: { name: 'x' },
        status: {
          attached: false,
          attachError: { message: 'rpc error: code = ResourceExhausted desc = node full', errorCode: 8 },
        },
      });
    };

    it('a volume waiting for attach is in the unattached list', async () => {
      const h = csiHarness();
      const pod = podWith([bind(h, csiPV())]);
      h.clock.advance(0);
      await h.vm.mountPod(pod);
      h.clock.advance(2 * 60_000 + 3_000);
      const r = await h.vm.mountPod(pod);
      expect(r.ok === false && r.message).to.equal(
        'unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: context deadline exceeded',
      );
    });

    it('ResourceExhausted with a refresh period: the CSINode count refreshed and the pod rejected', async () => {
      const h = csiHarness();
      h.period.value = 30;
      exhausted(h);
      const r = await h.vm.mountPod(podWith([bind(h, csiPV())]));
      expect(r).to.deep.equal({
        ok: false,
        report: true,
        reject: 'VolumeAttachmentLimitExceeded',
        message:
          'Node has reached its volume attachment limit, rejecting pod. unmounted volumes=[data], unattached volumes=[data], ' +
          'failed to process volumes=[]: rpc error: code = ResourceExhausted desc = node full',
      });
      expect(h.refreshes).to.deep.equal([DRIVER]);
      expect(h.driver.calls).to.deep.equal([]);
    });

    it('ResourceExhausted without a refresh period: the pod keeps waiting', async () => {
      const h = csiHarness();
      exhausted(h);
      const r = await h.vm.mountPod(podWith([bind(h, csiPV())]));
      expect(r).to.deep.include({ ok: false, report: false });
      expect(r.ok === false && r.reject).to.equal(undefined);
      expect(h.refreshes).to.deep.equal([]);
      expect(h.events[0]!.message).to.equal(
        'MountVolume.SetUp failed for volume "data" : rpc error: code = ResourceExhausted desc = node full',
      );
    });

    it('another attach error is no limit', async () => {
      const h = csiHarness();
      h.period.value = 30;
      h.attachments.set(attachmentName('vol-1', DRIVER, NODE), {
        metadata: { name: 'x' },
        status: { attached: false, attachError: { message: 'disk busy', errorCode: 13 } },
      });
      const r = await h.vm.mountPod(podWith([bind(h, csiPV())]));
      expect(r.ok === false && r.reject).to.equal(undefined);
      expect(h.refreshes).to.deep.equal([]);
    });
  });

  describe('node expansion (RecoverVolumeExpansionFailure)', () => {
    const MI = 1024 * 1024;
    /** A mounted claim whose resizer grew the PV to 2Mi and asks the node to expand. */
    async function resized(h: CSIHarness): Promise<ReturnType<typeof podWith>> {
      h.driver.caps = new Set(['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME']);
      h.csiDrivers.set(DRIVER, noAttach());
      const pv = csiPV();
      const pod = podWith([bind(h, pv)]);
      expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      pv.spec.capacity = { storage: '2Mi' };
      h.sources.volumes.set('pv-1', pv);
      h.claims.set(`${NS}/claim-pv-1`, {
        metadata: { name: 'claim-pv-1', namespace: NS, resourceVersion: '5' },
        spec: {
          volumeName: 'pv-1',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '2Mi' } },
        },
        status: {
          capacity: { storage: '1Mi' },
          allocatedResources: { storage: '2Mi' },
          allocatedResourceStatuses: { storage: 'NodeResizePending' },
          conditions: [{ type: 'FileSystemResizePending', status: 'True' }],
        },
      });
      return pod;
    }

    it('NodeResizePending: in progress, NodeExpandVolume at the allocated size, then the new capacity and cleared', async () => {
      const h = csiHarness();
      const pod = await resized(h);
      expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      expect(h.driver.calls.at(-1)).to.equal(`expand vol-1 ${2 * MI}`);
      expect(h.driver.expands[0]).to.deep.include({
        volumePath: publishTargetPath(PODS, 'uid-1', 'pv-1'),
        stagingTargetPath: stagingTargetPath(PLUGINS, DRIVER, 'vol-1'),
      });
      expect(h.claimPatches).to.deep.equal([
        {
          metadata: { resourceVersion: '5' },
          status: { allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } },
        },
        {
          metadata: { resourceVersion: '6' },
          status: {
            capacity: { storage: '2Mi' },
            allocatedResourceStatuses: { storage: null },
            conditions: [],
          },
        },
      ]);
      const c = h.claims.get(`${NS}/claim-pv-1`)!;
      expect(c.status?.capacity).to.deep.equal({ storage: '2Mi' });
      expect(c.status?.allocatedResourceStatuses).to.deep.equal({});
      expect(h.events.map((e) => `${e.reason} ${e.message}`)).to.deep.equal([
        `FileSystemResizeSuccessful MountVolume.NodeExpandVolume succeeded for volume "data" ${NODE}`,
      ]);
      // Done: the next sync finds nothing to do.
      await h.vm.mountPod(pod);
      expect(h.driver.expands).to.have.length(1);
    });

    it('a final driver error marks the claim infeasible with a NodeResizeError, backs off, and retries', async () => {
      const h = csiHarness();
      const pod = await resized(h);
      h.driver.fail.set(
        'expand',
        Object.assign(new Error('rpc error: code = OutOfRange desc = too big'), { code: 'OutOfRange' }),
      );
      expect((await h.vm.mountPod(pod)).ok, 'the pod keeps running').to.equal(true);
      const c = h.claims.get(`${NS}/claim-pv-1`)!;
      expect(c.status?.allocatedResourceStatuses).to.deep.equal({ storage: 'NodeResizeInfeasible' });
      expect(c.status?.conditions?.map((x) => [x.type, x.message])).to.deep.equal([
        ['FileSystemResizePending', undefined],
        [
          'NodeResizeError',
          'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = OutOfRange desc = too big',
        ],
      ]);
      expect(h.events.at(-1)?.reason).to.equal('FileSystemResizeFailed');
      // The user asks for a size the volume can have: the resizer sets NodeResizePending again.
      c.status!.allocatedResourceStatuses = { storage: 'NodeResizePending' };
      await h.vm.mountPod(pod);
      expect(h.driver.calls.filter((x) => x.startsWith('expand'))).to.have.length(1, 'backing off');
      h.driver.fail.delete('expand');
      h.clock.advance(600);
      await h.vm.mountPod(pod);
      expect(h.driver.calls.filter((x) => x.startsWith('expand'))).to.have.length(2);
      expect(h.claims.get(`${NS}/claim-pv-1`)!.status?.capacity).to.deep.equal({ storage: '2Mi' });
    });

    it('a conflict marking it in progress calls nothing and fails nothing; the next sync expands', async () => {
      const h = csiHarness();
      const pod = await resized(h);
      const c = h.claims.get(`${NS}/claim-pv-1`)!;
      const patch = h.deps.csi!.claims!.patchClaimStatus;
      let conflicts = 1;
      h.deps.csi!.claims!.patchClaimStatus = (ns, name, p) =>
        conflicts-- > 0 ? Promise.reject(new Error('the object has been modified')) : patch(ns, name, p);
      await h.vm.mountPod(pod);
      expect(h.driver.expands).to.deep.equal([]);
      expect(c.status?.conditions?.some((x) => x.type === 'NodeResizeError')).to.equal(false);
      await h.vm.mountPod(pod);
      expect(h.driver.expands).to.have.length(1);
      expect(h.claims.get(`${NS}/claim-pv-1`)!.status?.capacity).to.deep.equal({ storage: '2Mi' });
    });

    it('a retryable error leaves a NodeResizeError and NodeResizeInProgress', async () => {
      const h = csiHarness();
      const pod = await resized(h);
      h.driver.fail.set(
        'expand',
        Object.assign(new Error('rpc error: code = Internal desc = busy'), { code: 'Internal' }),
      );
      await h.vm.mountPod(pod);
      const c = h.claims.get(`${NS}/claim-pv-1`)!;
      expect(c.status?.allocatedResourceStatuses).to.deep.equal({ storage: 'NodeResizeInProgress' });
      expect(c.status?.conditions?.some((x) => x.type === 'NodeResizeError')).to.equal(true);
    });

    it('a driver without EXPAND_VOLUME: the claim gets the kubelet error, the pod runs on', async () => {
      const h = csiHarness();
      const pod = await resized(h);
      h.driver.caps = new Set(['STAGE_UNSTAGE_VOLUME']);
      expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      expect(h.driver.expands).to.deep.equal([]);
      expect(h.events.at(-1)?.message).to.contain(`NodeExpand is not supported by the CSI driver ${DRIVER}`);
    });
  });
});

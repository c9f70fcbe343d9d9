/**
 * The CSI volume plugin's SetUp and TearDown (kubelet: csi_attacher.go WaitForAttach and MountDevice,
 * csi_mounter.go SetUpAt and TearDownAt, UnmountDevice): the decisions are csi.ts; the calls go to the
 * driver's Node service through the node's CSIHost, the files through VolumeFS.
 *
 * SetUp of a persistent volume: the VolumeAttachment must say attached when the CSIDriver requires attach
 * (the attach-detach controller of kube-controller-manager makes it; its metadata is the publish context),
 * NodeStageVolume into the staging path when the driver stages (vol_data.json beside it), then
 * NodePublishVolume into the pod's volume directory (vol_data.json beside `mount`), then the pod's fsGroup
 * when the kubelet applies it. An inline ephemeral volume is only published.
 *
 * TearDown, from what is on disk so a restarted process finds it: NodeUnpublishVolume for each of the pod's
 * CSI volumes, then NodeUnstageVolume of a staged volume no other pod of the node publishes any more. A
 * failure leaves the directories as they are and rejects, so the caller tries again (the pod worker, the
 * housekeeping's orphan cleanup).
 */
import type { Pod } from '../../api/core.js';
import type { PersistentVolume } from '../../api/volumes.js';
import { errorMessage } from '../../util/errors.js';
import {
  attachState,
  csiAccessMode,
  kubeletAppliesFSGroup,
  parseVolData,
  planEphemeral,
  planPersistent,
  podCSIVolumeDir,
  publishTargetPath,
  secretStrings,
  stagingDataDir,
  stagingTargetPath,
  stillPublished,
  volData,
  volumeCapability,
  volumeFigures,
  CSIPluginDir,
  VolDataFileName,
  type CSIDriver,
  type CSIHost,
  type CSIPersistentVolumeSource,
  type CSIVolumeFigures,
  type CSIVolumePlan,
  type CSIVolumeSource,
  type PlanResult,
  type VolData,
} from './csi.js';
import {
  expansionFailure,
  markFailedPatch,
  markFinishedPatch,
  markInProgressPatch,
  nodeExpansionDecision,
  type ExpandableClaim,
} from './csiexpand.js';
import { fsGroupFrom } from './fsuser.js';
import { setVolumeOwnership } from './ownership.js';
import { joinPath } from './paths.js';
import { mountFailure, type PluginContext, type SetUpResult } from './plugin.js';

const log = (msg: string): string => `kubernetes.io/csi: ${msg}`;

function notRegistered(driver: string): string {
  return `driver name ${driver} not found in the list of registered CSI drivers`;
}

/** A persistentVolumeClaim volume bound to a CSI PersistentVolume. */
export async function setUpCSIPersistent(
  ctx: PluginContext,
  pod: Pod,
  pv: PersistentVolume,
  claimReadOnly: boolean,
): Promise<SetUpResult> {
  const host = ctx.csi;
  if (!host) return mountFailure('no CSI host on this node');
  const driverName = (pv.spec.csi as { driver?: string } | undefined)?.driver ?? '';
  const driver = await readCSIDriver(host, driverName);
  if (!driver.ok) return mountFailure(driver.message);
  return setUp(ctx, host, pod, planPersistent(pod, pv, claimReadOnly, driver.driver, host.nodeName));
}

/** An inline `csi:` volume of the pod (ephemeral). */
export async function setUpCSIEphemeral(
  ctx: PluginContext,
  pod: Pod,
  volumeName: string,
  source: CSIVolumeSource,
): Promise<SetUpResult> {
  const host = ctx.csi;
  if (!host) return mountFailure('no CSI host on this node');
  const driver = await readCSIDriver(host, source.driver ?? '');
  if (!driver.ok) return mountFailure(driver.message);
  return setUp(ctx, host, pod, planEphemeral(pod, volumeName, source, driver.driver, host.nodeName));
}

async function readCSIDriver(
  host: CSIHost,
  name: string,
): Promise<{ ok: true; driver: CSIDriver | undefined } | { ok: false; message: string }> {
  try {
    return { ok: true, driver: await host.getCSIDriver(name) };
  } catch (err) {
    return { ok: false, message: log(`failed to get CSIDriver ${name}: ${errorMessage(err)}`) };
  }
}

async function readSecret(
  ctx: PluginContext,
  ref: { namespace: string; name: string } | undefined,
  what: string,
): Promise<Record<string, string>> {
  if (!ref) return {};
  let secret;
  try {
    secret = await ctx.sources.getSecret(ref.namespace, ref.name);
  } catch (err) {
    throw new Error(`fetching ${what} ${ref.namespace}/${ref.name} failed: ${errorMessage(err)}`);
  }
  if (!secret) {
    throw new Error(
      `fetching ${what} ${ref.namespace}/${ref.name} failed: secrets ${JSON.stringify(ref.name)} not found`,
    );
  }
  return secretStrings(secret.data);
}

/** csi.storage.k8s.io/serviceAccount.tokens: a token per audience the CSIDriver asks for, bound to the pod. */
async function serviceAccountTokens(
  ctx: PluginContext,
  pod: Pod,
  plan: CSIVolumePlan,
): Promise<Record<string, string>> {
  if (plan.tokenRequests.length === 0) return {};
  const out: Record<string, { token: string; expirationTimestamp: string }> = {};
  for (const r of plan.tokenRequests) {
    const seconds = r.expirationSeconds ?? 3600;
    const token = await ctx.tokens(pod, {
      ...(r.audience ? { audience: r.audience } : {}),
      expirationSeconds: seconds,
      path: 'token',
    });
    out[r.audience] = {
      token,
      expirationTimestamp: new Date(ctx.clock.now() + seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z'),
    };
  }
  return { 'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify(out) };
}

async function writeVolData(ctx: PluginContext, dir: string, data: Record<string, string>): Promise<void> {
  await ctx.fs.mkdir(dir, 0o750);
  await ctx.fs.writeFile(joinPath(dir, VolDataFileName), Buffer.from(JSON.stringify(data)), 0o640);
}

async function setUp(ctx: PluginContext, host: CSIHost, pod: Pod, planned: PlanResult): Promise<SetUpResult> {
  if (!planned.ok) return mountFailure(log(planned.message));
  const plan = planned.plan;
  const client = host.nodeClient(plan.driver);
  if (!client) {
    return mountFailure(log(`mounter.SetUpAt failed to get CSI client: ${notRegistered(plan.driver)}`));
  }
  const uid = pod.metadata.uid ?? '';
  const fsGroup = fsGroupFrom(pod);
  try {
    const caps = await client.nodeGetCapabilities();
    const capability = volumeCapability(plan, caps, fsGroup);
    let publishContext: Record<string, string> = {};
    let staging = '';
    if (plan.mode === 'Persistent') {
      if (plan.attachRequired) {
        const st = attachState(
          await host.getVolumeAttachment(plan.attachmentID),
          plan.volumeHandle,
          plan.attachmentID,
        );
        if (!st.attached) {
          const limit = st.exhausted === true && (await host.refreshAllocatable?.(plan.driver)) === true;
          return { ...mountFailure(st.message), attach: limit ? 'limit' : 'unattached' } as SetUpResult;
        }
        publishContext = st.publishContext;
      }
      if (caps.has('STAGE_UNSTAGE_VOLUME')) {
        staging = stagingTargetPath(host.pluginsDir, plan.driver, plan.volumeHandle);
        const secrets = await readSecret(ctx, plan.stageSecretRef, 'NodeStageSecretRef');
        await writeVolData(ctx, stagingDataDir(host.pluginsDir, plan.driver, plan.volumeHandle), {
          driverName: plan.driver,
          volumeHandle: plan.volumeHandle,
        });
        await ctx.fs.mkdir(staging, 0o750);
        try {
          await client.nodeStageVolume({
            volumeId: plan.volumeHandle,
            publishContext,
            stagingTargetPath: staging,
            capability,
            secrets,
            volumeContext: plan.volumeContext,
          });
        } catch (err) {
          return mountFailure(`MountVolume.MountDevice failed: ${errorMessage(err)}`);
        }
      }
    }
    const target = publishTargetPath(ctx.podsDir, uid, plan.specVolID);
    const volumeDir = podCSIVolumeDir(ctx.podsDir, uid, plan.specVolID);
    let secrets = await readSecret(ctx, plan.publishSecretRef, 'NodePublishSecretRef');
    let volumeContext = plan.volumeContext;
    const tokens = await serviceAccountTokens(ctx, pod, plan);
    if (plan.tokensInSecrets) secrets = { ...secrets, ...tokens };
    else volumeContext = { ...volumeContext, ...tokens };
    await writeVolData(ctx, volumeDir, { ...volData(plan, host.nodeName) });
    try {
      await client.nodePublishVolume({
        volumeId: plan.volumeHandle,
        publishContext,
        stagingTargetPath: staging,
        targetPath: target,
        capability,
        readOnly: plan.readOnly,
        secrets,
        volumeContext,
      });
    } catch (err) {
      // Nothing was published: the directory goes, so the teardown does not ask the driver about it.
      if (!(await ctx.mounter.mountPoint(target))) await ctx.fs.rm(volumeDir).catch(() => undefined);
      return mountFailure(errorMessage(err));
    }
    if (!caps.has('VOLUME_MOUNT_GROUP') && kubeletAppliesFSGroup(plan, fsGroup)) {
      const res = await setVolumeOwnership(ctx.fs, target, {
        fsGroup,
        readOnly: false,
        ...(pod.spec.securityContext?.fsGroupChangePolicy
          ? { fsGroupChangePolicy: pod.spec.securityContext.fsGroupChangePolicy }
          : {}),
      });
      if (res.failures.length > 0) {
        const f = res.failures[0]!;
        return mountFailure(
          `applyFSGroup failed for vol ${plan.volumeHandle}: ${f.op} ${f.path}: ${errorMessage(f.error)}`,
        );
      }
    }
    return {
      ok: true,
      volume: { hostPath: target, readOnly: plan.readOnly, selinuxRelabel: !plan.readOnly },
    };
  } catch (err) {
    return mountFailure(log(`mounter.SetUpAt failed: ${errorMessage(err)}`));
  }
}

async function readVolData(ctx: PluginContext, dir: string): Promise<VolData | undefined> {
  try {
    return parseVolData((await ctx.fs.readFile(joinPath(dir, VolDataFileName))).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The vol_data of every CSI volume of every pod of the node but `exceptUID`. */
async function otherPodsVolData(ctx: PluginContext, exceptUID: string): Promise<VolData[]> {
  const out: VolData[] = [];
  let uids: string[];
  try {
    uids = await ctx.fs.readdir(ctx.podsDir);
  } catch {
    return out;
  }
  for (const uid of uids) {
    if (uid === exceptUID) continue;
    const base = joinPath(ctx.podsDir, uid, 'volumes', CSIPluginDir);
    let names: string[];
    try {
      names = await ctx.fs.readdir(base);
    } catch {
      continue;
    }
    for (const name of names) {
      const d = await readVolData(ctx, joinPath(base, name));
      if (d) out.push(d);
    }
  }
  return out;
}

/**
 * Unpublishes every CSI volume of a pod and unstages those no other pod publishes. Rejects with every
 * failure once all were tried; what failed stays on disk for the next try.
 */
export async function tearDownCSIPodVolumes(ctx: PluginContext, uid: string): Promise<void> {
  const base = joinPath(ctx.podsDir, uid, 'volumes', CSIPluginDir);
  let names: string[];
  try {
    names = await ctx.fs.readdir(base);
  } catch {
    return;
  }
  const errors: string[] = [];
  const unpublished: VolData[] = [];
  for (const name of names) {
    const dir = joinPath(base, name);
    const target = joinPath(dir, 'mount');
    const data = await readVolData(ctx, dir);
    if (!data) {
      // No record of the driver: only an unmounted directory can go (the kubelet refuses the rest too).
      if (await ctx.mounter.mountPoint(target)) {
        errors.push(
          `UnmountVolume.TearDown failed for volume ${JSON.stringify(name)}: no ${VolDataFileName}`,
        );
      } else {
        await ctx.fs.rm(dir);
      }
      continue;
    }
    const client = ctx.csi?.nodeClient(data.driverName);
    if (!client) {
      errors.push(
        `UnmountVolume.TearDown failed for volume ${JSON.stringify(name)}: ${log(notRegistered(data.driverName))}`,
      );
      continue;
    }
    try {
      await client.nodeUnpublishVolume(data.volumeHandle, target);
    } catch (err) {
      errors.push(`UnmountVolume.TearDown failed for volume ${JSON.stringify(name)}: ${errorMessage(err)}`);
      continue;
    }
    // A driver that left its mount there (or an empty target it never made) must not take the data with rm.
    if (await ctx.mounter.mountPoint(target)) {
      errors.push(
        `UnmountVolume.TearDown failed for volume ${JSON.stringify(name)}: ${target} is still mounted`,
      );
      continue;
    }
    await ctx.fs.rm(dir);
    if (data.volumeLifecycleMode !== 'Ephemeral') unpublished.push(data);
  }
  if (unpublished.length > 0 && ctx.csi) {
    const others = await otherPodsVolData(ctx, uid);
    for (const data of unpublished) {
      if (stillPublished(others, data.driverName, data.volumeHandle)) continue;
      const err = await unstage(ctx, ctx.csi, data);
      if (err) errors.push(err);
    }
  }
  if (errors.length > 0) throw new Error(errors.join('; '));
}

/** UnmountDevice: NodeUnstageVolume when the driver stages, then the staging directory goes. */
async function unstage(ctx: PluginContext, host: CSIHost, data: VolData): Promise<string | undefined> {
  const dataDir = stagingDataDir(host.pluginsDir, data.driverName, data.volumeHandle);
  if (!(await ctx.fs.lstat(dataDir))) return undefined;
  const client = host.nodeClient(data.driverName);
  if (!client)
    return `UnmountDevice failed for volume ${data.volumeHandle}: ${log(notRegistered(data.driverName))}`;
  try {
    const caps = await client.nodeGetCapabilities();
    if (caps.has('STAGE_UNSTAGE_VOLUME')) {
      await client.nodeUnstageVolume(
        data.volumeHandle,
        stagingTargetPath(host.pluginsDir, data.driverName, data.volumeHandle),
      );
    }
  } catch (err) {
    return `UnmountDevice failed for volume ${data.volumeHandle}: ${log(`attacher.UnmountDevice failed: ${errorMessage(err)}`)}`;
  }
  const staging = stagingTargetPath(host.pluginsDir, data.driverName, data.volumeHandle);
  if (await ctx.mounter.mountPoint(staging)) {
    return `UnmountDevice failed for volume ${data.volumeHandle}: ${staging} is still mounted`;
  }
  await ctx.fs.rm(dataDir);
  return undefined;
}

/**
 * NodeGetVolumeStats of a published CSI volume (`target` is its `mount` directory): undefined when the
 * target is no CSI volume, or its driver is not registered or does not report volume stats.
 */
export async function csiVolumeStats(
  ctx: PluginContext,
  target: string,
): Promise<CSIVolumeFigures | undefined> {
  const dir = target.replace(/\/mount$/, '');
  if (dir === target || !ctx.csi) return undefined;
  const data = await readVolData(ctx, dir);
  const client = data && ctx.csi.nodeClient(data.driverName);
  if (!data || !client) return undefined;
  const caps = await client.nodeGetCapabilities();
  if (!caps.has('GET_VOLUME_STATS')) return undefined;
  const staging = caps.has('STAGE_UNSTAGE_VOLUME')
    ? stagingTargetPath(ctx.csi.pluginsDir, data.driverName, data.volumeHandle)
    : '';
  return volumeFigures(await client.nodeGetVolumeStats(data.volumeHandle, target, staging));
}

/** What an expansion attempt did, for the volume manager's memory and the pod's Events. */
export interface NodeExpansionOutcome {
  events: { type: 'Normal' | 'Warning'; reason: string; message: string }[];
  /** The attempt ended with a final error (kept for the next decision's infeasibleOnFailure). */
  failedFinal?: boolean;
}

/**
 * Node expansion of a mounted CSI claim (the populator's checkVolumeFSResize and the NodeExpander, once):
 * reads the claim and its PV afresh, decides (csiexpand.ts), and when the claim asks the node to grow the
 * volume marks it NodeResizeInProgress, calls NodeExpandVolume and writes the outcome into the claim's status.
 */
export async function nodeExpandCSIVolume(
  ctx: PluginContext,
  pod: Pod,
  volumeName: string,
  claimName: string,
  readOnly: boolean,
  failedFinalBefore: boolean,
): Promise<NodeExpansionOutcome> {
  const host = ctx.csi;
  const api = host?.claims;
  if (!host || !api) return { events: [] };
  const ns = pod.metadata.namespace ?? '';
  const claim = await api.getClaim(ns, claimName);
  if (!claim?.spec) return { events: [] };
  const pvName = claim.spec.volumeName ?? '';
  const pv = pvName ? await api.getVolume(pvName) : undefined;
  const src = pv?.spec.csi as CSIPersistentVolumeSource | undefined;
  if (!pv || !src?.driver) return { events: [] };
  const capacity = (pv.spec.capacity as Record<string, string> | undefined)?.storage;
  const d = nodeExpansionDecision({ claim, pvCapacity: capacity, readOnly, failedFinalBefore });
  if (d.action !== 'expand') return { events: [] };
  const what = `for volume ${JSON.stringify(volumeName)}`;
  const client = host.nodeClient(src.driver);
  if (!client) return { events: [] };
  let current: ExpandableClaim = claim;
  if (d.markInProgress) {
    try {
      current = await api.patchClaimStatus(ns, claimName, markInProgressPatch(claim));
    } catch (err) {
      // Not expanded, not failed: the next sync reads the claim again (a conflict is someone else's write).
      ctx.logger.warn('MountVolume.NodeExpandVolume failed to mark node expansion in progress', {
        volumeName,
        err: errorMessage(err),
      });
      return { events: [] };
    }
  }
  try {
    const caps = await client.nodeGetCapabilities();
    if (!caps.has('EXPAND_VOLUME')) {
      throw Object.assign(new Error(`NodeExpand is not supported by the CSI driver ${src.driver}`), {
        code: 'Unimplemented',
      });
    }
    const secrets = await readSecret(
      ctx,
      src.nodeExpandSecretRef?.name
        ? { namespace: src.nodeExpandSecretRef.namespace ?? '', name: src.nodeExpandSecretRef.name }
        : undefined,
      'NodeExpandSecretRef',
    );
    const accessModes = (pv.spec.accessModes as string[] | undefined) ?? [];
    const target = publishTargetPath(ctx.podsDir, pod.metadata.uid ?? '', pvName);
    await client.nodeExpandVolume({
      volumeId: src.volumeHandle,
      volumePath: target,
      stagingTargetPath: caps.has('STAGE_UNSTAGE_VOLUME')
        ? stagingTargetPath(host.pluginsDir, src.driver, src.volumeHandle)
        : '',
      requiredBytes: d.newSizeBytes,
      capability: {
        fsType: src.fsType ?? '',
        mountFlags: [...((pv.spec.mountOptions as string[] | undefined) ?? [])],
        volumeMountGroup: '',
        accessMode: csiAccessMode(accessModes[0] ?? 'ReadWriteOnce', caps.has('SINGLE_NODE_MULTI_WRITER')),
      },
      secrets,
    });
  } catch (err) {
    const message = `Expander.NodeExpand failed to expand the volume : ${errorMessage(err)}`;
    const f = expansionFailure({ code: (err as { code?: unknown }).code as string | undefined, message });
    try {
      await api.patchClaimStatus(
        ns,
        claimName,
        markFailedPatch(
          current,
          message,
          f.infeasible || d.infeasibleOnFailure,
          new Date(ctx.clock.now()).toISOString().replace(/\.\d+Z$/, 'Z'),
        ),
      );
    } catch (patchErr) {
      ctx.logger.warn('MountVolume.NodeExpandVolume failed to mark node expansion as failed', {
        err: errorMessage(patchErr),
      });
    }
    return {
      events: [
        {
          type: 'Warning',
          reason: 'FileSystemResizeFailed',
          message: `MountVolume.NodeExpandVolume failed ${what} : ${message}`,
        },
      ],
      failedFinal: true,
    };
  }
  const events: NodeExpansionOutcome['events'] = [
    {
      type: 'Normal',
      reason: 'FileSystemResizeSuccessful',
      message: `MountVolume.NodeExpandVolume succeeded ${what} ${host.nodeName}`,
    },
  ];
  if (d.markInProgress) {
    try {
      await api.patchClaimStatus(ns, claimName, markFinishedPatch(current, d.newSize));
    } catch (err) {
      ctx.logger.warn('mountVolume.NodeExpandVolume update pvc status failed', { err: errorMessage(err) });
      return { events, failedFinal: false };
    }
  }
  return { events, failedFinal: false };
}

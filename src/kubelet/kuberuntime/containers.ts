/**
 * Starting one container (kubelet: kuberuntime_container.go startContainer, generateContainerConfig). Killing and
 * removing live in killcontainer.ts, the sidecar shutdown order in terminationorder.ts.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/core.js';
import { buildContainerConfig } from './containerconfig.js';
import { podLogsDirectory } from './sandboxconfig.js';
import { PreStopHandlerAnnotation } from '../../runtime/labels.js';
import type { ContainerConfig, Image, PodSandboxConfig } from '../../runtime/types.js';
import type { DeviceRunContainerOptions } from '../cm/devicemanager/types.js';
import { errorMessage, KindError } from '../../util/errors.js';
import { formatPod } from '../backoff.js';
import { findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import {
  envFileKey,
  envFileRefs,
  envSourceRefs,
  expandContainerCommandAndArgs,
  makeEnvironmentVariables,
  type EnvFileRead,
  type EnvSources,
  type EnvVarValue,
} from '../envvars.js';
import { hookDeps, recordContainerEvent, recordPodEvent, type ManagerContext } from './context.js';
import { runLifecycleHandler } from './hooks.js';
import { killContainer } from './killcontainer.js';
import { imageUserOf, needsImageUser, verifyRunAsNonRoot } from './securitycontext.js';
import { ensureImageExists } from './images.js';
import {
  containerImageVolumes,
  imageMountRefusal,
  NO_IMAGE_VOLUMES,
  type ImageVolumePulls,
} from './imagevolumes.js';
import type { SyncErrorReason } from './syncresult.js';
import { handlerSupportsRecursiveReadOnly } from '../volumemanager/makemounts.js';
import { mergeEnv } from '../cm/dra/cdi.js';
import { containerResourceClaims, extendedResourceRequests } from '../cm/dra/claiminfo.js';
import type { ContainerDynamicResources } from '../cm/dra/manager.js';

export type StartOutcome =
  { ok: true; containerId: string } | { ok: false; error: SyncErrorReason; message: string };

export interface StartContainerArgs {
  /** The pod as the node runs it (see effectivePod). */
  pod: Pod;
  container: Container;
  ephemeral: boolean;
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  podStatus: RuntimePodStatus;
  podIP: string;
  podIPs: string[];
  /** The sync's cancellation; its signal is read only when a postStart hook runs. */
  cancel: { readonly signal: AbortSignal };
  /** The pod's image volumes as this sync pulled them (imagevolumes.ts); absent: the pod has none. */
  imageVolumes?: ImageVolumePulls;
}

/** The restart count implied by the log files `<n>.log` in the container's log directory (calcRestartCountByLogDir). */
async function restartCountFromLogDir(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of names) {
    const m = /^(\d+)\.log(\..*)?$/.exec(name);
    if (m) count = Math.max(count, Number(m[1]) + 1);
  }
  return count;
}

/**
 * Fetches the ConfigMaps and Secrets the container's environment refers to, in the kubelet's order, up to the
 * first missing one that is not optional (the environment fails there; what follows is not asked for, so a
 * pod retrying against a missing ConfigMap costs the lookups up to it, not one per reference), and reads the
 * env files of its `fileKeyRef` entries (none without a runtime helper: every such volume is then missing).
 */
async function fetchEnvSources(ctx: ManagerContext, pod: Pod, container: Container): Promise<EnvSources> {
  const namespace = pod.metadata.namespace ?? '';
  const configMaps = new Map<string, Record<string, string> | undefined>();
  const secrets = new Map<string, Record<string, string> | undefined>();
  for (const ref of envSourceRefs(container)) {
    const fetched = ref.kind === 'configMap' ? configMaps : secrets;
    if (!fetched.has(ref.name)) {
      fetched.set(
        ref.name,
        ref.kind === 'configMap'
          ? await ctx.envSource.getConfigMap(namespace, ref.name)
          : await ctx.envSource.getSecret(namespace, ref.name),
      );
    }
    if (fetched.get(ref.name) === undefined && !ref.optional) break;
  }
  const envFiles = new Map<string, EnvFileRead>();
  for (const ref of ctx.runtimeHelper ? envFileRefs(container) : []) {
    envFiles.set(
      envFileKey(ref.volumeName, ref.path),
      await ctx.runtimeHelper!.envFile(pod, ref.volumeName, ref.path),
    );
  }
  return { configMaps, secrets, envFiles };
}

/** What the container config is made from; `volumeImages`: the images of the container's image volumes. */
type ConfigArgs = Pick<StartContainerArgs, 'pod' | 'container' | 'sandboxConfig' | 'podIP' | 'podIPs'> & {
  volumeImages?: ReadonlyMap<string, string>;
};

/**
 * The container config (kubelet: generateContainerConfig): environment, mounts, the runAsNonRoot check
 * against the image's user, expanded command and args, the preStop annotation, the sim behaviour annotations
 * of the pod, and the container's log directory. Throws with the kubelet's CreateContainerConfigError message.
 * Without `image` (adoption: the container passed the check when it first started, and its image may not be
 * on the runtime yet) the check is skipped and no Event is recorded; the config is the same.
 */
async function generateContainerConfig(
  ctx: ManagerContext,
  a: ConfigArgs,
  restartCount: number,
  image: { imageRef: string; image?: Image } | undefined,
): Promise<ContainerConfig> {
  const { pod, container } = a;
  const namespace = pod.metadata.namespace ?? '';
  // kubelet GenerateRunContainerOptions: the device manager's options first (PreStartContainer runs here).
  // Adoption (no image) of a running container asks nothing of plugins that may not be back yet.
  const devices = ctx.devices && image ? await ctx.devices.runContainerOptions(pod, container) : undefined;
  const sources = await fetchEnvSources(ctx, pod, container);
  const nodeIPs = ctx.node.nodeIPs && ctx.node.nodeIPs.length > 0 ? ctx.node.nodeIPs : [ctx.node.nodeIP];
  // A host-network pod has the node's addresses, whatever the sandbox reports.
  const podIPs = a.podIPs.length > 0 ? a.podIPs : pod.spec.hostNetwork ? nodeIPs : [];
  const { env, skipped } = makeEnvironmentVariables(pod, container, sources, {
    podIP: podIPs[0] ?? a.podIP,
    podIPs,
    hostIP: nodeIPs[0] ?? '',
    hostIPs: nodeIPs,
    nodeName: pod.spec.nodeName ?? ctx.node.nodeName,
    serviceAccountName: pod.spec.serviceAccountName ?? '',
    ...(ctx.node.allocatable ? { nodeAllocatable: ctx.node.allocatable } : {}),
    ...(ctx.runtimeHelper ? { serviceEnv: ctx.runtimeHelper.serviceEnv(pod) } : {}),
  });
  for (const s of image ? skipped : []) {
    recordPodEvent(
      ctx,
      pod,
      'Warning',
      'InvalidEnvironmentVariableNames',
      `Keys [${s.keys.join(', ')}] from the EnvFrom ${s.kind === 'ConfigMap' ? 'configMap' : 'secret'} ${namespace}/${s.name} were skipped since they are considered invalid environment variable names.`,
    );
  }
  const mounts = ctx.runtimeHelper
    ? await ctx.runtimeHelper.containerMounts(pod, container, podIPs, env, {
        supportsRecursiveReadOnly: handlerSupportsRecursiveReadOnly(ctx.runtimeHandlers()),
        ...(a.volumeImages ? { imageVolumes: a.volumeImages } : {}),
      })
    : undefined;
  if (image) {
    // kubelet getImageUser + verifyRunAsNonRoot: only a numeric, non-zero image user passes runAsNonRoot.
    const user = needsImageUser(pod, container)
      ? imageUserOf(image.image ?? (await ctx.runtime.imageStatus(image.imageRef)))
      : { username: '' };
    const denied = verifyRunAsNonRoot(pod, container, user.uid, user.username);
    if (denied) throw new KindError('Forbidden', denied, { container: container.name });
  }
  // The CDI devices of the claims it references (and of the DRA-backed extended resources it requests); a
  // runtime without CDI gets their edits applied here.
  const dra =
    ctx.runtimeHelper?.containerDynamicResources &&
    (containerResourceClaims(container).length > 0 || extendedResourceRequests(pod, container).length > 0)
      ? await ctx.runtimeHelper.containerDynamicResources(
          pod,
          container,
          ctx.runtime.capabilities.cdi !== true,
        )
      : undefined;
  const config = buildContainerConfig(
    pod,
    container,
    { restartCount, envs: toKeyValues(env), ...(mounts ? { mounts } : {}) },
    ctx.node,
  );
  if (dra) applyDynamicResources(config, dra);
  if (devices) applyDeviceOptions(config, devices);
  // The sandbox's user namespace is the containers' too (kubelet NamespacesForPod in both configs).
  const userns = a.sandboxConfig.linux?.securityContext?.namespaceOptions?.userNamespace;
  const csc = config.linux?.securityContext;
  if (userns && csc) csc.namespaceOptions = { ...csc.namespaceOptions, userNamespace: userns };
  const expanded = expandContainerCommandAndArgs(container, env);
  if (expanded.command) config.command = expanded.command;
  if (expanded.args) config.args = expanded.args;
  const preStop = container.lifecycle?.preStop;
  if (preStop) config.annotations[PreStopHandlerAnnotation] = JSON.stringify(preStop);
  const passthrough = ctx.runtime.capabilities.podAnnotationPrefix;
  if (passthrough) {
    // The runtime reads per-container settings from annotations the pods carry (the sim's behaviour profiles).
    for (const [k, v] of Object.entries(pod.metadata.annotations ?? {})) {
      if (k.startsWith(passthrough)) config.annotations[k] = v;
    }
  }
  if (ctx.manageLogDirectories && a.sandboxConfig.logDirectory) {
    const { namespace, name: podName, uid } = a.sandboxConfig.metadata;
    ctx.leftovers.record(namespace, podName, uid);
    await mkdir(join(a.sandboxConfig.logDirectory, container.name), { recursive: true, mode: 0o755 });
  }
  return config;
}

/**
 * The device manager's options in the config as the kubelet puts them: its environment before the
 * container's own, its mounts before the volumes', its device nodes and CDI devices, its annotations under
 * the kubelet's own.
 */
function applyDeviceOptions(config: ContainerConfig, d: DeviceRunContainerOptions): void {
  config.envs = [...d.envs.map((e) => ({ key: e.name, value: e.value })), ...(config.envs ?? [])];
  if (d.mounts.length > 0)
    config.mounts = [
      ...d.mounts.map((m) => ({
        containerPath: m.containerPath,
        hostPath: m.hostPath,
        readonly: m.readOnly,
      })),
      ...(config.mounts ?? []),
    ];
  if (d.devices.length > 0) config.devices = d.devices.map((x) => ({ ...x }));
  if (d.cdiDevices.length > 0) config.cdiDevices = [...d.cdiDevices];
  if (d.annotations.length > 0)
    config.annotations = {
      ...Object.fromEntries(d.annotations.map((x) => [x.name, x.value])),
      ...config.annotations,
    };
}

/**
 * The config a start of `a.container` at `restartCount` would use, for a container that is already running
 * or ran (adoption, kubelet_adopt.ts): the same environment, mounts (a fresh termination-message file),
 * hash and restart-count annotations, without Events or image checks. Throws as generateContainerConfig.
 */
export function adoptedContainerConfig(
  ctx: ManagerContext,
  a: ConfigArgs,
  restartCount: number,
): Promise<ContainerConfig> {
  return generateContainerConfig(ctx, a, restartCount, undefined);
}

/** The claims' CDI devices into the config, and the CDI edits when the kubelet applies them. */
function applyDynamicResources(config: ContainerConfig, dra: ContainerDynamicResources): void {
  if (dra.cdiDevices.length > 0) config.cdiDevices = [...dra.cdiDevices];
  const e = dra.edits;
  if (!e) return;
  if (e.env.length > 0) config.envs = mergeEnv(config.envs ?? [], e.env);
  if (e.mounts.length > 0) config.mounts = [...(config.mounts ?? []), ...e.mounts];
  if (e.devices.length > 0) config.devices = [...(config.devices ?? []), ...e.devices];
}

function toKeyValues(env: readonly EnvVarValue[]): { key: string; value: string }[] {
  return env.map((e) => ({ key: e.name, value: e.value }));
}

/**
 * Starts one container (kubelet: startContainer): image, config, create, start, postStart hook. Never throws:
 * a failure is an outcome with the kubelet's error reason and message, after the kubelet's events
 * (`Error: <reason or message>`, `Created container: <name>`, `Started container <name>`,
 * `FailedPostStartHook`). A failed postStart hook kills the container.
 */
export async function startContainer(ctx: ManagerContext, a: StartContainerArgs): Promise<StartOutcome> {
  const { pod, container } = a;
  const name = container.name;
  const failed = (
    error: SyncErrorReason,
    message: string,
    containerId = '',
    eventMessage = message,
  ): StartOutcome => {
    recordContainerEvent(ctx, pod, name, containerId, 'Warning', 'Failed', `Error: ${eventMessage}`);
    return { ok: false, error, message };
  };

  // The image volumes it mounts (kubelet toKubeContainerImageVolumes, before the image: a failed pull of one
  // shows as the container's ErrImagePull or ImagePullBackOff).
  const volumeImages = containerImageVolumes(a.imageVolumes ?? NO_IMAGE_VOLUMES, container);
  if (!volumeImages.ok) {
    for (const f of volumeImages.failed)
      recordContainerEvent(ctx, pod, name, '', 'Warning', 'Failed', `Error: ${f.error}`);
    const last = volumeImages.failed[volumeImages.failed.length - 1]!;
    return { ok: false, error: last.error, message: last.message };
  }

  // Step 1: the image.
  const image = await ensureImageExists(ctx, pod, container, a.sandboxConfig);
  if (!image.ok) return failed(image.error, image.message, '', image.error);

  // Step 2: the container.
  const previous = findContainerStatusByName(a.podStatus, name);
  let restartCount = previous ? previous.restartCount + 1 : 0;
  if (!previous && ctx.manageLogDirectories) {
    // Runtimes that lose their state on a node reboot would restart counting at 0 and overwrite 0.log.
    const { namespace = '', name: podName = '', uid = '' } = pod.metadata;
    restartCount = await restartCountFromLogDir(
      join(podLogsDirectory(ctx.node.podLogsRoot, namespace, podName, uid), name),
    );
  }
  const target = (container as { targetContainerName?: string }).targetContainerName;
  if (a.ephemeral && target && !findContainerStatusByName(a.podStatus, target)) {
    return failed('CreateContainerConfigError', `unable to find target container ${target}`);
  }

  let config: ContainerConfig;
  try {
    const args: ConfigArgs = volumeImages.images ? { ...a, volumeImages: volumeImages.images } : a;
    config = await generateContainerConfig(ctx, args, restartCount, image);
  } catch (err) {
    return failed('CreateContainerConfigError', errorMessage(err));
  }
  const refused = imageMountRefusal(config.mounts, ctx.runtime.capabilities.imageVolumes === true);
  if (refused !== undefined) return failed('CreateContainerError', refused);

  let containerId: string;
  try {
    containerId = await ctx.runtime.createContainer(a.sandboxId, config, a.sandboxConfig);
  } catch (err) {
    return failed('CreateContainerError', errorMessage(err));
  }
  recordContainerEvent(ctx, pod, name, containerId, 'Normal', 'Created', `Created container: ${name}`);

  // Step 3: start it.
  try {
    await ctx.runtime.startContainer(containerId);
  } catch (err) {
    return failed('RunContainerError', errorMessage(err), containerId);
  }
  recordContainerEvent(ctx, pod, name, containerId, 'Normal', 'Started', `Started container ${name}`);

  // Step 4: the postStart hook.
  const postStart = container.lifecycle?.postStart;
  if (postStart) {
    const outcome = await runLifecycleHandler(hookDeps(ctx), {
      containerId,
      pod,
      container,
      handler: postStart,
      podIP: a.podIPs[0] ?? a.podIP,
      signal: a.cancel.signal,
    });
    if (!outcome.ok) {
      ctx.logger.warn('Failed to execute PostStartHook', {
        pod: formatPod(pod),
        container: name,
        containerID: containerId,
        err: outcome.error.message,
      });
      // The hook's message may hold secrets: the event does not carry it.
      recordContainerEvent(
        ctx,
        pod,
        name,
        containerId,
        'Warning',
        'FailedPostStartHook',
        'PostStartHook failed',
      );
      try {
        await killContainer(ctx, pod, containerId, name, 'FailedPostStartHook', 'FailedPostStartHook', {
          podIP: a.podIPs[0] ?? a.podIP,
        });
      } catch (err) {
        ctx.logger.warn('Failed to kill container', {
          pod: formatPod(pod),
          container: name,
          err: errorMessage(err),
        });
      }
      return { ok: false, error: 'PostStartHookError', message: outcome.message };
    }
  }
  return { ok: true, containerId };
}

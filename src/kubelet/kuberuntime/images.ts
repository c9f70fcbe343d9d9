/**
 * Making sure a container's image, or an image volume's, is there before it is used (kubelet:
 * images/image_manager.go EnsureImageExists), with the kubelet's events and errors: pull policy, the
 * per-pod/image pull back-off, and the Pulling / Pulled / Failed / BackOff / ErrImageNeverPull / InspectFailed
 * events (on the container, or on the pod for an image volume).
 */
import type { Container, Pod, PullPolicy } from '../../api/core.js';
import type { Image, PodSandboxConfig } from '../../runtime/types.js';
import { formatGoDuration } from '../../util/duration.js';
import { errorMessage } from '../../util/errors.js';
import { recordContainerEvent, recordPodEvent, type ManagerContext } from './context.js';
import type { SyncErrorReason } from './syncresult.js';
import { NO_IMAGE_VOLUMES, type ImageVolumePull, type ImageVolumePulls } from './imagevolumes.js';

export type EnsureImageOutcome =
  | {
      ok: true;
      imageRef: string;
      /** The image status the check saw (its user decides runAsNonRoot); absent when none could be read. */
      image?: Image;
    }
  | { ok: false; error: SyncErrorReason; message: string };

/** The reference with `:latest` added when it names neither a tag nor a digest (kubelet applyDefaultImageTag). */
export function applyDefaultImageTag(image: string): string {
  if (image.includes('@')) return image;
  const lastSlash = image.lastIndexOf('/');
  if (image.slice(lastSlash + 1).includes(':')) return image;
  return `${image}:latest`;
}

/** The API server's default pull policy: Always for `:latest` or no tag, IfNotPresent otherwise (digests too). */
export function defaultPullPolicy(image: string): PullPolicy {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const last = image.slice(lastSlash + 1);
  const colon = last.lastIndexOf(':');
  const tag = colon >= 0 ? last.slice(colon + 1) : 'latest';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/**
 * Ensures `container`'s image exists on the node for `pod`. Never throws: every failure is an outcome with the
 * image manager's error (ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName,
 * ImageInspectError, RegistryUnavailable, SignatureValidationFailed) and message, after its event.
 */
export function ensureImageExists(
  ctx: ManagerContext,
  pod: Pod,
  container: Container,
  sandboxConfig: PodSandboxConfig,
): Promise<EnsureImageOutcome> {
  const requested = container.image ?? '';
  return ensureImage(ctx, pod, requested, container.imagePullPolicy ?? defaultPullPolicy(requested), {
    sandboxConfig,
    event: (type, reason, message) =>
      recordContainerEvent(ctx, pod, container.name, '', type, reason, message),
  });
}

/**
 * Ensures an image volume's image exists for `pod` (kubelet getImageVolumes): the same as a container's image,
 * with the volume's pull policy (the API server defaults it as a container's) and the events on the pod.
 */
export function ensureVolumeImageExists(
  ctx: ManagerContext,
  pod: Pod,
  source: { reference?: string; pullPolicy?: PullPolicy },
  sandboxConfig: PodSandboxConfig,
): Promise<EnsureImageOutcome> {
  const requested = source.reference ?? '';
  return ensureImage(ctx, pod, requested, source.pullPolicy ?? defaultPullPolicy(requested), {
    sandboxConfig,
    event: (type, reason, message) => recordPodEvent(ctx, pod, type, reason, message),
  });
}

async function ensureImage(
  ctx: ManagerContext,
  pod: Pod,
  requested: string,
  policy: PullPolicy,
  at: {
    sandboxConfig: PodSandboxConfig;
    event: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  },
): Promise<EnsureImageOutcome> {
  const quoted = JSON.stringify(requested);
  const { event, sandboxConfig } = at;

  if (requested.trim() === '' || /\s/.test(requested)) {
    const message = `Failed to apply default image tag ${quoted}: couldn't parse image name ${quoted}: invalid reference format`;
    event('Warning', 'InspectFailed', message);
    return { ok: false, error: 'InvalidImageName', message };
  }
  const image = applyDefaultImageTag(requested);

  let present: Image | null;
  try {
    present = await ctx.runtime.imageStatus(image);
  } catch (err) {
    const message = `Failed to inspect image ${quoted}: ${errorMessage(err)}`;
    event('Warning', 'InspectFailed', message);
    return { ok: false, error: 'ImageInspectError', message };
  }

  const shouldPull = policy === 'Always' || (policy === 'IfNotPresent' && !present);
  if (!shouldPull) {
    if (present) {
      event('Normal', 'Pulled', `Container image ${quoted} already present on machine`);
      return { ok: true, imageRef: present.id, image: present };
    }
    const message = `Container image ${quoted} is not present with pull policy of Never`;
    event('Warning', 'ErrImageNeverPull', message);
    return { ok: false, error: 'ErrImageNeverPull', message };
  }

  const uid = pod.metadata.uid ?? '';
  const decision = ctx.imagePullBackOff.check(uid, requested, ctx.clock.now());
  if (decision.inBackOff) {
    event('Normal', 'BackOff', `Back-off pulling image ${quoted}`);
    return { ok: false, error: 'ImagePullBackOff', message: decision.message };
  }

  event('Normal', 'Pulling', `Pulling image ${quoted}`);
  const start = ctx.clock.now();
  let imageRef: string;
  try {
    imageRef = await ctx.runtime.pullImage(image, sandboxConfig);
  } catch (err) {
    const text = errorMessage(err);
    event('Warning', 'Failed', `Failed to pull image ${quoted}: ${text}`);
    const failed = ctx.imagePullBackOff.recordFailure(uid, requested, text, ctx.clock.now());
    return { ok: false, error: failed.error, message: failed.message };
  }
  const end = ctx.clock.now();
  ctx.imagePullBackOff.recordSuccess(end);
  let pulled: Image | undefined;
  try {
    pulled = (await ctx.runtime.imageStatus(image)) ?? undefined;
  } catch {
    // The size only decorates the event; the user is asked again when it matters.
  }
  const size = pulled?.size ?? 0;
  // No pull queue here: the pull took as long as the wait for it.
  const took = formatGoDuration(Math.floor(end - start));
  event(
    'Normal',
    'Pulled',
    `Successfully pulled image ${quoted} in ${took} (${took} including waiting). Image size: ${size} bytes.`,
  );
  return { ok: true, imageRef, ...(pulled ? { image: pulled } : {}) };
}

/** kubelet getImageVolumes: every image volume of the pod, whether a container mounts it or not. */
export async function pullImageVolumes(
  ctx: ManagerContext,
  pod: Pod,
  sandboxConfig: PodSandboxConfig,
): Promise<ImageVolumePulls> {
  const volumes = (pod.spec.volumes ?? []).filter((v) => v.image);
  if (volumes.length === 0) return NO_IMAGE_VOLUMES;
  const out = new Map<string, ImageVolumePull>();
  for (const v of volumes) {
    const got = await ensureVolumeImageExists(ctx, pod, v.image!, sandboxConfig);
    out.set(v.name, got.ok ? { ok: true, imageRef: got.imageRef } : got);
  }
  return out;
}

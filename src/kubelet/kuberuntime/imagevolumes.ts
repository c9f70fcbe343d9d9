/**
 * Image volumes (ImageVolume, GA since v1.36; kubelet: kuberuntime_manager.go getImageVolumes, in images.ts
 * pullImageVolumes, and toKubeContainerImageVolumes): before the first container of a sync starts, the image of every `image` volume
 * of the pod is made present with the volume's pull policy, with the image manager's events on the pod; each
 * container then mounts the pulled images of the volumes it names (the runtime mounts them: CRI Mount.image),
 * or, when a pull failed, is not started: an `Error: <reason>` event per failed volume and the pull's reason
 * (ErrImagePull, ImagePullBackOff, ...) as its waiting reason.
 *
 * A runtime whose capabilities do not include image volumes (containerd 1.6 ignores Mount.image) would be
 * handed a mount without a source. The container is refused at its creation instead, as a runtime that cannot
 * mount an image volume refuses it: CreateContainerError with the CRI's ImageVolumeMountFailed.
 */
import type { Container } from '../../api/core.js';
import type { Mount } from '../../runtime/types.js';
import type { SyncErrorReason } from './shell/syncresult.js';

/** One pull per image volume: the image ID, or the image manager's error and message. */
export type ImageVolumePull =
  { ok: true; imageRef: string } | { ok: false; error: SyncErrorReason; message: string };

/** The pod's image volumes by name. */
export type ImageVolumePulls = ReadonlyMap<string, ImageVolumePull>;

/** A pod without image volumes. */
export const NO_IMAGE_VOLUMES: ImageVolumePulls = new Map();

/**
 * kubelet toKubeContainerImageVolumes: the images the container mounts (volume name to image ID), or the last
 * failed pull among its volumes with the failed pulls listed (each one gets its Event).
 */
export function containerImageVolumes(
  pulls: ImageVolumePulls,
  container: Pick<Container, 'volumeMounts'>,
):
  | { ok: true; images: ReadonlyMap<string, string> | undefined }
  | { ok: false; failed: { error: SyncErrorReason; message: string }[] } {
  if (pulls.size === 0) return { ok: true, images: undefined };
  const images = new Map<string, string>();
  const failed: { error: SyncErrorReason; message: string }[] = [];
  for (const m of container.volumeMounts ?? []) {
    const pull = pulls.get(m.name);
    if (!pull) continue;
    if (pull.ok) images.set(m.name, pull.imageRef);
    else failed.push({ error: pull.error, message: pull.message });
  }
  return failed.length > 0 ? { ok: false, failed } : { ok: true, images };
}

/**
 * What a runtime without image mounts answers for a container config that has one (CRI ErrImageVolumeMountFailed
 * as a runtime words it); undefined when the runtime mounts images or there is none.
 */
export function imageMountRefusal(
  mounts: readonly Mount[] | undefined,
  runtimeMountsImages: boolean,
): string | undefined {
  if (runtimeMountsImages) return undefined;
  const m = mounts?.find((x) => x.image !== undefined);
  if (!m) return undefined;
  return (
    `ImageVolumeMountFailed: cannot mount image ${JSON.stringify(m.image)} at ${JSON.stringify(m.containerPath)}: ` +
    'the container runtime does not support image volumes (CRI Mount.image: containerd 2.1 or later)'
  );
}

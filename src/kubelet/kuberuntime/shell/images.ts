/**
 * Making sure a container's image, or an image volume's, is there before it is used (kubelet:
 * images/image_manager.go EnsureImageExists), with the kubelet's events and errors: pull policy, the
 * per-pod/image pull back-off, and the Pulling / Pulled / Failed / BackOff / ErrImageNeverPull / InspectFailed
 * events (on the container, or on the pod for an image volume).
 */
import type { Container, Pod, PullPolicy } from '../../../api/core.js';
import type { AuthConfig as RuntimeAuthConfig, Image, PodSandboxConfig } from '../../../runtime/types.js';
import { formatGoDuration } from '../../../util/duration.js';
import { errorMessage } from '../../../util/errors.js';
import { recordContainerEvent, recordPodEvent, type ManagerContext } from './context.js';
import type { SyncErrorReason } from './syncresult.js';
import { NO_IMAGE_VOLUMES, type ImageVolumePull, type ImageVolumePulls } from '../imagevolumes.js';
import {
  DockerKeyring,
  keyringFromSecrets,
  repositoryToPull,
  type PullSecret,
  type TrackedAuthConfig,
} from '../../credentialprovider/keyring.js';
import { sha256Hex } from '../../../util/sha256.js';

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
  const { event } = at;

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

  // The pod's credentials for the image, looked up once and only when needed (kubelet
  // makeLookupPullCredentialsFunc): its pull secrets first, then the node's credential providers.
  let lookedUp: Promise<CredentialLookup> | undefined;
  const credentials = () => (lookedUp ??= lookupPullCredentials(ctx, pod, image));
  // Nothing to look up: no extra turn of the event loop, so pods without credentials sync as before.
  const noLookup = (pod.spec.imagePullSecrets ?? []).length === 0 && !ctx.credentialProviders;

  const pullManager = ctx.imagePullManager;
  if (policy !== 'Always' && present) {
    if (!pullManager) {
      event('Normal', 'Pulled', `Container image ${quoted} already present on machine`);
      return { ok: true, imageRef: present.id, image: present };
    }
    // KubeletEnsureSecretPulledImages: a pod may use an image pulled with credentials only with them too.
    // The pod's credentials are looked up only when the image's record asks for them, as the kubelet does.
    let lookupError: string | undefined;
    const check = await pullManager.mustAttemptImagePull(requested, present.id, async () => {
      const found = noLookup ? NO_CREDENTIALS : await credentials();
      if (found.ok) return found.credentials;
      lookupError = found.message;
      return [];
    });
    if (!check.pull) {
      event(
        'Normal',
        'Pulled',
        `Container image ${quoted} already present on machine and can be accessed by the pod`,
      );
      return { ok: true, imageRef: present.id, image: present };
    }
    if (lookupError !== undefined) return credentialError(event, lookupError);
  }
  if (policy === 'Never') {
    // Not present, or present but not for this pod's credentials: the kubelet says the same for both.
    const message = `Container image ${quoted} is not present with pull policy of Never`;
    event('Warning', 'ErrImageNeverPull', message);
    return { ok: false, error: 'ErrImageNeverPull', message };
  }

  const found = noLookup ? NO_CREDENTIALS : await credentials();
  if (!found.ok) return credentialError(event, found.message);

  if (pullManager) {
    try {
      await pullManager.recordPullIntent(requested);
    } catch (err) {
      const message = `Failed to record image pull intent for container image ${quoted}: failed to record image pull intent: ${errorMessage(err)}`;
      return { ok: false, error: 'ErrImagePull', message };
    }
  }
  const pulled = await pullWithBackOff(ctx, pod, requested, image, found.credentials, at);
  if (pullManager) {
    if (pulled.ok) await pullManager.recordImagePulled(requested, pulled.imageRef, pulled.used);
    else await pullManager.recordImagePullFailed(requested);
  }
  if (!pulled.ok && pulled.error === 'ErrImagePull' && found.missingSecrets.length > 0) {
    // The kubelet says so after a sync whose pull failed, as a hint at a configuration error.
    recordPodEvent(
      ctx,
      pod,
      'Warning',
      'FailedToRetrieveImagePullSecret',
      `Unable to retrieve some image pull secrets (${found.missingSecrets.join(', ')}); attempting to pull the image may not succeed.`,
    );
  }
  if (!pulled.ok) return pulled;
  const { used: _used, ...outcome } = pulled;
  return outcome;
}

type CredentialLookup =
  { ok: true; credentials: TrackedAuthConfig[]; missingSecrets: string[] } | { ok: false; message: string };
const NO_CREDENTIALS: CredentialLookup = { ok: true, credentials: [], missingSecrets: [] };

/**
 * The pod's imagePullSecrets (kubelet getPullSecretsForPod: unnamed entries skipped, unreadable ones named as
 * missing) in a keyring with the node's credential providers after them, looked up for the image's repository.
 */
async function lookupPullCredentials(
  ctx: ManagerContext,
  pod: Pod,
  image: string,
): Promise<CredentialLookup> {
  const namespace = pod.metadata.namespace ?? 'default';
  const secrets: PullSecret[] = [];
  const missingSecrets: string[] = [];
  for (const ref of pod.spec.imagePullSecrets ?? []) {
    if (!ref.name) continue;
    let got: PullSecret | undefined;
    try {
      got = ctx.getPullSecret ? await ctx.getPullSecret(namespace, ref.name) : undefined;
    } catch (err) {
      ctx.logger.info('Unable to retrieve pull secret, the image pull may not succeed.', {
        pod: `${namespace}/${pod.metadata.name ?? ''}`,
        secret: `${namespace}/${ref.name}`,
        err: errorMessage(err),
      });
    }
    if (got) secrets.push(got);
    else missingSecrets.push(ref.name);
  }
  const repository = repositoryToPull(image);
  let fromSecrets: TrackedAuthConfig[];
  try {
    fromSecrets = keyringFromSecrets(secrets, new DockerKeyring(sha256Hex)).lookup(repository);
  } catch (err) {
    return { ok: false, message: errorMessage(err) };
  }
  let fromProviders: TrackedAuthConfig[] = [];
  if (ctx.credentialProviders) {
    try {
      fromProviders = await ctx.credentialProviders(pod, image, repository);
    } catch (err) {
      // A failing plugin gives no credentials; the kubelet logs it and pulls without them.
      ctx.logger.warn('Failed to get credentials from the credential provider plugins', {
        image,
        err: errorMessage(err),
      });
    }
  }
  return { ok: true, credentials: [...fromSecrets, ...fromProviders], missingSecrets };
}

/** A pull secret that does not parse fails the image as the kubelet does: with the parse error. */
function credentialError(
  event: (type: 'Normal' | 'Warning', reason: string, message: string) => void,
  message: string,
): EnsureImageOutcome {
  event('Warning', 'Failed', `Failed to pull image: ${message}`);
  return { ok: false, error: 'ErrImagePull', message };
}

/** CRI's AuthConfig for one set of credentials. */
function runtimeAuth(c: TrackedAuthConfig): RuntimeAuthConfig {
  return { ...c.auth };
}

/**
 * The pull itself behind the per-pod/image back-off (kubelet imageManager.pullImage): each credential in
 * order until one works (kubelet PullImage), without any when there are none.
 */
async function pullWithBackOff(
  ctx: ManagerContext,
  pod: Pod,
  requested: string,
  image: string,
  credentials: readonly TrackedAuthConfig[],
  at: {
    sandboxConfig: PodSandboxConfig;
    event: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  },
): Promise<
  | (EnsureImageOutcome & { ok: false })
  | { ok: true; imageRef: string; image?: Image; used?: TrackedAuthConfig }
> {
  const quoted = JSON.stringify(requested);
  const { event, sandboxConfig } = at;
  const uid = pod.metadata.uid ?? '';
  const decision = ctx.imagePullBackOff.check(uid, requested, ctx.clock.now());
  if (decision.inBackOff) {
    event('Normal', 'BackOff', `Back-off pulling image ${quoted}`);
    return { ok: false, error: 'ImagePullBackOff', message: decision.message };
  }

  event('Normal', 'Pulling', `Pulling image ${quoted}`);
  const start = ctx.clock.now();
  let imageRef = '';
  let used: TrackedAuthConfig | undefined;
  try {
    if (credentials.length === 0) imageRef = await ctx.runtime.pullImage(image, sandboxConfig);
    else {
      const errors: string[] = [];
      for (const c of credentials) {
        try {
          imageRef = await ctx.runtime.pullImage(image, sandboxConfig, runtimeAuth(c));
          used = c;
          break;
        } catch (err) {
          errors.push(errorMessage(err));
        }
      }
      // Go's aggregate error: the one message, or all of them in brackets.
      if (!used) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
    }
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
  return { ok: true, imageRef, ...(pulled ? { image: pulled } : {}), ...(used ? { used } : {}) };
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

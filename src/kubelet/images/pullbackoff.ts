/**
 * Image-pull back-off (kubelet: images/image_manager.go, the back-off part of `pullImage`). A policy
 * only: the pull itself is a function the caller passes in, so the decision logic has no I/O.
 */
import { Backoff } from '../backoff.js';
import type { Clock } from '../../util/clock.js';

/** Initial and maximum delay between pulls of one image for one pod (kubelet: backOffPeriod, MaxImageBackOff). */
export const ImageBackOffInitialMs = 10_000;
export const MaxImageBackOffMs = 300_000;

/** The image manager's errors as they appear in waiting reasons. */
export type ImagePullError =
  'ImagePullBackOff' | 'ErrImagePull' | 'RegistryUnavailable' | 'SignatureValidationFailed';

/** An event for the caller to record against the container. */
export interface ImagePullEvent {
  type: 'Normal' | 'Warning';
  reason: 'BackOff' | 'Pulling' | 'Failed' | 'Pulled';
  message: string;
}

/** What a pull function reports. A failure's `message` is the runtime's error text. */
export type PullOutcome = { ok: true; imageRef: string } | { ok: false; message: string };

export type EnsureImageResult =
  | { ok: true; imageRef: string; pullAttempted: true; events: ImagePullEvent[] }
  | { ok: false; error: ImagePullError; message: string; pullAttempted: boolean; events: ImagePullEvent[] };

/** The back-off key: one schedule per pod and image (`<podUID>_<image>`). */
export function imagePullBackOffKey(podUID: string, image: string): string {
  return `${podUID}_${image}`;
}

/** A Backoff with the kubelet's image-pull settings (10s, 300s, default expiry of twice the max). */
export function newImagePullBackOff(): Backoff {
  return new Backoff(ImageBackOffInitialMs, MaxImageBackOffMs);
}

const registryUnavailable = 'RegistryUnavailable';
const signatureValidationFailed = 'SignatureValidationFailed';

/**
 * Maps a runtime pull error to the image manager's error and message (kubelet: `evalCRIPullErr`). The CRI
 * marks two cases by a prefix of the error text; everything else is ErrImagePull with the text as is.
 */
export function evalPullError(image: string, text: string): { error: ImagePullError; message: string } {
  if (text.startsWith(registryUnavailable)) {
    const rest = text.slice(registryUnavailable.length);
    return {
      error: 'RegistryUnavailable',
      message: `image pull failed for ${image} because the registry is unavailable${rest}`,
    };
  }
  if (text.startsWith(signatureValidationFailed)) {
    const rest = text.slice(signatureValidationFailed.length);
    return {
      error: 'SignatureValidationFailed',
      message: `image pull failed for ${image} because the signature validation failed${rest}`,
    };
  }
  return { error: 'ErrImagePull', message: text };
}

/**
 * The pull back-off of one node: a Backoff plus the last pull error per key, which the kubelet appends to
 * the back-off message so the waiting reason says why pulls fail.
 *
 * Invariant: a remembered error exists only for a key whose last pull failed and that has not been pulled
 * since.
 */
export class ImagePullBackOff {
  readonly backoff: Backoff;
  private readonly lastError = new Map<string, string>();

  constructor(backoff: Backoff = newImagePullBackOff()) {
    this.backoff = backoff;
  }

  /**
   * Whether a pull of `image` for `podUID` must wait. When it must, returns ImagePullBackOff with the
   * kubelet's message (`Back-off pulling image "<image>"`, followed by `: <last error>` when the last failure
   * had a text). When it may go ahead, forgets the remembered error, as the kubelet does before a pull.
   */
  check(
    podUID: string,
    image: string,
    now: number,
  ): { inBackOff: true; error: 'ImagePullBackOff'; message: string } | { inBackOff: false } {
    const key = imagePullBackOffKey(podUID, image);
    if (this.backoff.isInBackOffSinceUpdate(key, now)) {
      let message = `Back-off pulling image ${JSON.stringify(image)}`;
      const last = this.lastError.get(key);
      if (last !== undefined) message = `${message}: ${last}`;
      return { inBackOff: true, error: 'ImagePullBackOff', message };
    }
    this.lastError.delete(key);
    return { inBackOff: false };
  }

  /**
   * Records a failed pull at `now`: advances the schedule and remembers the error for later back-off
   * messages. `text` is the runtime's error text ("" when it gave none: nothing is remembered then).
   */
  recordFailure(
    podUID: string,
    image: string,
    text: string,
    now: number,
  ): { error: ImagePullError; message: string } {
    const key = imagePullBackOffKey(podUID, image);
    this.backoff.next(key, now, now);
    const result = evalPullError(image, text);
    if (text !== '') this.lastError.set(key, `${result.error}: ${result.message}`);
    return result;
  }

  /** Records a successful pull: the kubelet garbage-collects stale entries at that point. */
  recordSuccess(now: number): void {
    this.backoff.gc(now);
  }

  /**
   * The whole back-off flow around one pull (kubelet: the back-off part of `pullImage`): wait if in
   * back-off, else call `pull` and record its outcome. Time is read from `clock` before the pull and again
   * after it, since a pull can take long. A `pull` that throws counts as a failure with the error's text.
   */
  async ensureImage(
    podUID: string,
    image: string,
    pull: () => Promise<PullOutcome> | PullOutcome,
    clock: Pick<Clock, 'now'>,
  ): Promise<EnsureImageResult> {
    const events: ImagePullEvent[] = [];
    const quoted = JSON.stringify(image);
    const decision = this.check(podUID, image, clock.now());
    if (decision.inBackOff) {
      events.push({ type: 'Normal', reason: 'BackOff', message: decision.message });
      return { ok: false, error: decision.error, message: decision.message, pullAttempted: false, events };
    }
    events.push({ type: 'Normal', reason: 'Pulling', message: `Pulling image ${quoted}` });
    let outcome: PullOutcome;
    try {
      outcome = await pull();
    } catch (err) {
      outcome = { ok: false, message: err instanceof Error ? err.message : String(err) };
    }
    if (!outcome.ok) {
      events.push({
        type: 'Warning',
        reason: 'Failed',
        message: `Failed to pull image ${quoted}: ${outcome.message}`,
      });
      const failed = this.recordFailure(podUID, image, outcome.message, clock.now());
      return { ok: false, ...failed, pullAttempted: true, events };
    }
    this.recordSuccess(clock.now());
    events.push({ type: 'Normal', reason: 'Pulled', message: `Successfully pulled image ${quoted}` });
    return { ok: true, imageRef: outcome.imageRef, pullAttempted: true, events };
  }
}

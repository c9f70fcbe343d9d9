/**
 * The simulated runtime's ImageService: pulls take their latency and failure from the image's profile (and
 * a registry host under `.invalid` is unreachable, as a DNS failure would make it), image status and lists
 * report the image's USER from its profile, removal forgets the image. The runtime checks faults and
 * closing before it calls in.
 */
import { KindError } from '../../util/errors.js';
import type { Image, PodSandboxConfig } from '../types.js';
import type { BehaviourResolver } from './behaviour.js';
import { pullFailed } from './errors.js';
import { imageUser, parseImageReference, unreachableRegistryMessage, type ImageStore } from './images.js';

export class SimImageService {
  constructor(
    private readonly images: ImageStore,
    private readonly behaviours: BehaviourResolver,
    /** Waits on the runtime's clock (pull latency). */
    private readonly delay: (ms: number) => Promise<void>,
  ) {}

  /** Resolves to the image ID; InvalidArgument for a malformed reference, the profile's pull error else. */
  async pull(image: string, sandboxConfig?: PodSandboxConfig): Promise<string> {
    const r = parseImageReference(image);
    if (!r) {
      throw new KindError(
        'InvalidArgument',
        `failed to pull and unpack image "${image}": invalid reference format`,
      );
    }
    const profile = this.behaviours.pullProfile(r, sandboxConfig);
    if (profile.pullLatencyMs) await this.delay(profile.pullLatencyMs);
    const cause =
      profile.pullError ?? (r.host.endsWith('.invalid') ? unreachableRegistryMessage(r) : undefined);
    if (cause !== undefined) throw pullFailed(r.ref, cause);
    return this.images.add(r);
  }

  status(image: string): Image | null {
    const found = this.images.get(image);
    return found ? this.withUser(found) : null;
  }

  list(): Image[] {
    return this.images.list().map((i) => this.withUser(i));
  }

  remove(image: string): void {
    this.images.remove(image);
  }

  /** The image's USER from its profile (default root: neither uid nor username). */
  private withUser(image: Image): Image {
    const r = image.repoTags[0] !== undefined ? parseImageReference(image.repoTags[0]) : undefined;
    return r ? { ...image, ...imageUser(this.behaviours.imageProfile(r).user) } : image;
  }
}

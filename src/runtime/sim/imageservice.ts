/**
 * The simulated runtime's ImageService: pulls take their latency and failure from the image's profile (and
 * a registry host under `.invalid` is unreachable, as a DNS failure would make it), image status and lists
 * report the image's USER from its profile, removal forgets the image. The runtime checks faults and
 * closing before it calls in.
 */
import { KindError } from '../../util/errors.js';
import type { AuthConfig, Image, ImageFsInfo, PodSandboxConfig } from '../types.js';
import type { BehaviourResolver } from './behaviour.js';
import { pullFailed } from './errors.js';
import {
  imageUser,
  parseImageReference,
  unreachableRegistryMessage,
  type ImageReference,
  type ImageStore,
} from './images.js';

/** Whether a pull's credentials are the registry's (username and password, or the `auth` field). */
function basicAuthMatches(
  required: { username: string; password: string },
  auth: AuthConfig | undefined,
): boolean {
  if (!auth) return false;
  let { username, password } = auth;
  if (auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon >= 0) [username, password] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
  }
  return username === required.username && (password ?? '') === required.password;
}

/** containerd 1.6's words when a registry answers 401 to the manifest request (as the e2e registry does). */
function unauthorizedMessage(r: ImageReference): string {
  return `failed to resolve reference "${r.ref}": pulling from host ${r.host} failed with status code [manifests ${r.tag}]: 401 Unauthorized`;
}

/** Where the simulated runtime says its images live (a name only: no such directory exists). */
export const SimImageFsMountpoint = '/var/lib/sim/images';
/** Where it says containers' writable layers live when they have a filesystem of their own. */
export const SimContainerFsMountpoint = '/var/lib/sim/containers';

export class SimImageService {
  constructor(
    private readonly images: ImageStore,
    private readonly behaviours: BehaviourResolver,
    /** Waits on the runtime's clock (pull latency). */
    private readonly delay: (ms: number) => Promise<void>,
  ) {}

  /** Resolves to the image ID; InvalidArgument for a malformed reference, the profile's pull error else. */
  async pull(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    const r = parseImageReference(image);
    if (!r) {
      throw new KindError(
        'InvalidArgument',
        `failed to pull and unpack image "${image}": invalid reference format`,
      );
    }
    const profile = this.behaviours.pullProfile(r, sandboxConfig);
    if (profile.pullLatencyMs) await this.delay(profile.pullLatencyMs);
    const required = this.behaviours.imageProfile(r).pullCredentials;
    const cause =
      profile.pullError ??
      (r.host.endsWith('.invalid') ? unreachableRegistryMessage(r) : undefined) ??
      (required && !basicAuthMatches(required, auth) ? unauthorizedMessage(r) : undefined);
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

  /**
   * The image filesystem: the images' sizes summed, one inode per image. The containers' filesystem is the
   * same one (as containerd's on one disk), or, given `writableLayers` (a runtime whose containers' layers
   * live apart), SimContainerFsMountpoint with those layers' bytes and inodes. Capacity is
   * not the runtime's to say (CRI reports usage only): the kubelet takes it from the node's disks.
   */
  fsInfo(timestampNs: bigint, writableLayers?: { bytes: number; inodes: number }): ImageFsInfo {
    const images = this.images.list();
    const fs = {
      timestamp: timestampNs,
      mountpoint: SimImageFsMountpoint,
      usedBytes: images.reduce((sum, i) => sum + i.size, 0),
      inodesUsed: images.length,
    };
    const containers = writableLayers
      ? {
          timestamp: timestampNs,
          mountpoint: SimContainerFsMountpoint,
          usedBytes: writableLayers.bytes,
          inodesUsed: writableLayers.inodes,
        }
      : { ...fs };
    return { imageFilesystems: [fs], containerFilesystems: [containers] };
  }

  /** The image's USER from its profile (default root: neither uid nor username). */
  private withUser(image: Image): Image {
    const r = image.repoTags[0] !== undefined ? parseImageReference(image.repoTags[0]) : undefined;
    return r ? { ...image, ...imageUser(this.behaviours.imageProfile(r).user) } : image;
  }
}

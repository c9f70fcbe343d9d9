/**
 * The simulated runtime's image store and the reference rules it shares with containerd: `busybox` and
 * `docker.io/library/busybox:latest` name the same image, an image can also be named by its ID, and a pull
 * from a registry that cannot be reached fails with containerd's wording.
 */
import { sha256Hex } from '../../util/sha256.js';
import type { Image } from '../types.js';

export interface ImageReference {
  /** Fully qualified, tagged (or digested) reference: `docker.io/library/busybox:latest`. */
  ref: string;
  /** Registry host, `docker.io` when the reference names none. */
  host: string;
  /** Repository path below the host: `library/busybox`. */
  repository: string;
  /** Tag, or the digest (`sha256:...`) for a digested reference. */
  tag: string;
}

/**
 * Normalises an image reference as containerd's reference.ParseDockerRef does; undefined when `image` is
 * not a reference at all (empty, or containing whitespace or upper case in the repository).
 */
export function parseImageReference(image: string): ImageReference | undefined {
  if (image === '' || /\s/.test(image)) return undefined;
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let host = 'docker.io';
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    host = first;
    rest = rest.slice(slash + 1);
  }
  let tag = digest;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    if (tag === undefined) tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  tag ??= 'latest';
  if (host === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  if (rest === '' || tag === '' || rest !== rest.toLowerCase()) return undefined;
  const sep = digest === undefined ? ':' : '@';
  return { ref: `${host}/${rest}${sep}${tag}`, host, repository: rest, tag };
}

/** containerd's message for a pull whose registry host does not resolve. */
export function unreachableRegistryMessage(r: ImageReference): string {
  const sep = r.tag.startsWith('sha256:') ? '@' : ':';
  const full = `${r.host}/${r.repository}${sep}${r.tag}`;
  return (
    `failed to resolve reference "${full}": failed to do request: ` +
    `Head "https://${r.host}/v2/${r.repository}/manifests/${r.tag}": dial tcp: lookup ${r.host}: no such host`
  );
}

interface ImageRecord {
  id: string;
  ref: string;
  repoDigest: string;
  size: number;
}

/** In-memory images keyed by normalised reference and by ID; every operation but list is O(1). */
export class ImageStore {
  private readonly byRef = new Map<string, ImageRecord>();
  private readonly byId = new Map<string, ImageRecord>();
  private readonly byDigest = new Map<string, ImageRecord>();

  /** Adds (or keeps) the image and returns its ID. The ID is a digest of the reference: deterministic. */
  add(r: ImageReference): string {
    const existing = this.byRef.get(r.ref);
    if (existing) return existing.id;
    const digest = sha256Hex(`image:${r.ref}`);
    const rec: ImageRecord = {
      id: `sha256:${digest}`,
      ref: r.ref,
      repoDigest: `${r.host}/${r.repository}@sha256:${sha256Hex(`manifest:${r.ref}`)}`,
      size: 1_048_576 + (parseInt(digest.slice(0, 6), 16) % 8_388_608),
    };
    this.byRef.set(rec.ref, rec);
    this.byId.set(rec.id, rec);
    this.byDigest.set(rec.repoDigest, rec);
    return rec.id;
  }

  /** Finds an image by reference in any form, by full ID, or by repo digest. */
  get(image: string): Image | undefined {
    const rec = this.lookup(image);
    return rec && toImage(rec);
  }

  remove(image: string): void {
    const rec = this.lookup(image);
    if (!rec) return;
    this.byRef.delete(rec.ref);
    this.byId.delete(rec.id);
    this.byDigest.delete(rec.repoDigest);
  }

  list(): Image[] {
    return [...this.byRef.values()].map(toImage);
  }

  private lookup(image: string): ImageRecord | undefined {
    const byId = this.byId.get(image.startsWith('sha256:') ? image : `sha256:${image}`);
    if (byId) return byId;
    const r = parseImageReference(image);
    if (!r) return undefined;
    return this.byRef.get(r.ref) ?? this.byDigest.get(r.ref);
  }
}

function toImage(rec: ImageRecord): Image {
  return { id: rec.id, repoTags: [rec.ref], repoDigests: [rec.repoDigest], size: rec.size };
}

/**
 * The image status fields for an OCI config USER (containerd's getUserFromImage): the part before `:`, as a
 * uid when numeric, else as a username; nothing for an unset user (the kubelet then takes root).
 */
export function imageUser(user: string | undefined): Pick<Image, 'uid' | 'username'> {
  if (user === undefined || user === '') return {};
  const name = user.split(':')[0] ?? '';
  if (/^-?\d+$/.test(name)) return { uid: Number(name) };
  return name === '' ? {} : { username: name };
}

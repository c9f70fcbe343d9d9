/**
 * What the simulated runtime keeps of a container config and never changes afterwards: its metadata, image,
 * annotations, relative log path, environment, mounts and created resources. Replicas of a pod have the same
 * spec but for their mounts' host paths (the pod's own directory), so a spec keeps the mounts without their
 * host paths and the record keeps those; equal specs are then one shared object (intern.ts). A spec holds
 * copies of the config's values, so a caller changing its config afterwards changes nothing here.
 */
import type { ContainerConfig, ContainerMetadata, Image, LinuxContainerResources, Mount } from '../types.js';
import type { ProcessUser } from './identity.js';
import { SharedValues } from '../../util/sharedvalues.js';
import { plainKey } from './intern.js';

export interface ContainerSpec {
  readonly metadata: Readonly<ContainerMetadata>;
  /** The image as the config named it, and the image ID: what ListContainers reports. */
  readonly image: string;
  readonly imageId: string;
  /** What ContainerStatus reports, as containerd does: the image's repo tag and repo digest. */
  readonly statusImage: string;
  readonly statusImageRef: string;
  readonly annotations: Readonly<Record<string, string>>;
  /** Relative to the sandbox's log directory, as configured (falsy: no log file). */
  readonly logPath: string | undefined;
  readonly env: Readonly<Record<string, string>>;
  /** The mounts as created, each with `hostPath` '' where it had one (`hostPaths` of the record has it). */
  readonly mounts: readonly Readonly<Mount>[];
  /** As created; undefined when created without any. */
  readonly resources: Readonly<LinuxContainerResources> | undefined;
  /** Who its process runs as (identity.ts processUser). */
  readonly user: Readonly<ProcessUser>;
}

/**
 * The host path of each of a spec's mounts (undefined for a mount that named none): packed into one string,
 * NUL-separated (a path cannot hold a NUL), whenever they are all strings without one.
 */
export type HostPaths = string | readonly (string | undefined)[];

/** A spec, and the host paths of its mounts. */
export interface SpecParts {
  spec: ContainerSpec;
  hostPaths: HostPaths;
}

const NO_MOUNTS: readonly Mount[] = Object.freeze([]);
const NO_ENV: Readonly<Record<string, string>> = Object.freeze({});
/** Distinct specs kept for sharing (a few hundred bytes each). */
const TABLE_LIMIT = 512;

export class ContainerSpecs {
  private readonly table = new SharedValues<ContainerSpec>(TABLE_LIMIT);

  /** The (shared) spec of a container created from `config` running `image` as `user`. */
  of(config: ContainerConfig, image: Image, user: ProcessUser): SpecParts {
    const given = config.mounts?.length ? config.mounts : undefined;
    const mounts = given ? given.map(withoutHostPath) : NO_MOUNTS;
    const hostPaths = given ? pack(given.map((m) => (hasHostPath(m) ? m.hostPath : undefined))) : '';
    const env = config.envs?.length ? config.envs.map((e): [string, string] => [e.key, e.value]) : undefined;
    const metadata = { name: config.metadata.name, attempt: config.metadata.attempt ?? 0 };
    const statusImage = image.repoTags[0] ?? config.image;
    const statusImageRef = image.repoDigests[0] ?? image.id;
    const resources = config.linux?.resources;
    const key = plainKey([
      metadata.name,
      metadata.attempt,
      config.image,
      image.id,
      statusImage,
      statusImageRef,
      config.annotations ?? {},
      config.logPath ?? null,
      env ?? null,
      mounts,
      resources ?? null,
      user.uid,
      user.gid,
      user.groups,
    ]);
    // Metadata and annotations are frozen: the runtime's answers hand them out as they are (convert.ts).
    const spec = this.table.get(key, () => ({
      metadata: Object.freeze(metadata),
      image: config.image,
      imageId: image.id,
      statusImage,
      statusImageRef,
      annotations: Object.freeze({ ...config.annotations }),
      logPath: config.logPath,
      env: env ? Object.fromEntries(env) : NO_ENV,
      mounts,
      resources: resources ? { ...resources } : undefined,
      user: Object.freeze({ uid: user.uid, gid: user.gid, groups: Object.freeze([...user.groups]) }),
    }));
    return { spec, hostPaths };
  }

  /** Distinct specs held for sharing (tests). */
  get size(): number {
    return this.table.size;
  }
}

/** The mounts as created: fresh copies, host paths put back. */
export function mountsOf(spec: ContainerSpec, hostPaths: HostPaths): Mount[] {
  if (spec.mounts.length === 0) return [];
  const paths = typeof hostPaths === 'string' ? hostPaths.split('\0') : hostPaths;
  return spec.mounts.map((m, i) => (hasHostPath(m) ? { ...m, hostPath: paths[i] as string } : { ...m }));
}

function pack(paths: (string | undefined)[]): HostPaths {
  return paths.every((p) => typeof p === 'string' && !p.includes('\0')) ? paths.join('\0') : paths;
}

function hasHostPath(m: Mount): boolean {
  return m !== null && m !== undefined && Object.hasOwn(m, 'hostPath');
}

function withoutHostPath(m: Mount): Mount {
  return hasHostPath(m) ? { ...m, hostPath: '' } : { ...m };
}

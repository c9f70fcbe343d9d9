/**
 * Who a simulated container's process is (podview.ts shows it, records keep it): containerd's resolution of
 * the process's user and groups for an image without /etc/passwd. Pure.
 */
import type { ContainerConfig } from '../types.js';

/** A process's uid, primary gid and every group, the gid first (what CRI ContainerStatus.user reports). */
export interface ProcessUser {
  uid: number;
  gid: number;
  groups: readonly number[];
}

/**
 * The identity a container's process gets, as containerd resolves it for an image without /etc/passwd (the
 * simulated images have none): the uid is runAsUser, else the image's USER (numeric), else root; the gid is
 * runAsGroup, else the group part of a numeric `uid:gid` USER, else 0. Its groups: the gid, then under Merge
 * (the default) the groups the image's /etc/group gives its user (`imageGroups`), then the pod's fsGroup
 * and supplementalGroups; under Strict the image's groups are left out. Each group once, the gid first.
 */
export function processUser(
  config: Pick<ContainerConfig, 'linux'>,
  imageUser: string | undefined,
  imageGroups: readonly number[] | undefined,
): ProcessUser {
  const sc = config.linux?.securityContext;
  const [userPart, groupPart] = (imageUser ?? '').split(':');
  const numeric = (v: string | undefined): number | undefined =>
    v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
  const uid = sc?.runAsUser ?? numeric(userPart) ?? 0;
  const gid = sc?.runAsGroup ?? (sc?.runAsUser === undefined ? numeric(groupPart) : undefined) ?? 0;
  const strict = sc?.supplementalGroupsPolicy === 'Strict';
  const groups = [gid];
  for (const g of [...(strict ? [] : (imageGroups ?? [])), ...(sc?.supplementalGroups ?? [])])
    if (!groups.includes(g)) groups.push(g);
  return { uid, gid, groups };
}

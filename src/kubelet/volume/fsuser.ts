/**
 * The uid and gid a pod's volumes are prepared for (the kubelet's MounterArgs.FsUser / FsGroup, set by the
 * operation generator from the pod before every SetUp).
 */
import type { Container, Pod } from '../../api/core.js';

/** securitycontext.DetermineEffectiveRunAsUser: the container's runAsUser, else the pod's, else none. */
export function effectiveRunAsUser(pod: Pod, container: Container): number | undefined {
  return container.securityContext?.runAsUser ?? pod.spec.securityContext?.runAsUser;
}

/**
 * volumeutil.FsUserFrom: the uid every init and regular container runs as, when they all name the same one;
 * undefined when one of them names none or two differ. Ephemeral containers are left out, as upstream leaves
 * them out: they join a pod whose volumes are already set up.
 */
export function fsUserFrom(pod: Pod): number | undefined {
  let fsUser: number | undefined;
  for (const container of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    const uid = effectiveRunAsUser(pod, container);
    if (uid === undefined || (fsUser !== undefined && fsUser !== uid)) return undefined;
    fsUser = uid;
  }
  return fsUser;
}

/** The pod's fsGroup (MounterArgs.FsGroup), if any. */
export function fsGroupFrom(pod: Pod): number | undefined {
  return pod.spec.securityContext?.fsGroup;
}

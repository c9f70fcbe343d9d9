/**
 * Which podCertificate projections a pod has, and how one is named: the kubelet keeps a credential state per
 * (namespace, pod name, pod UID, volume name, index of the source in the volume's sources).
 */
import type { Pod } from '../../api/core.js';
import type { PodCertificateProjection } from '../../api/volumes.js';

export interface ProjectionKey {
  namespace: string;
  podName: string;
  podUID: string;
  volumeName: string;
  sourceIndex: number;
}

/** The served credentials of one projection, as the pod's files get them. */
export interface CredentialBundle {
  /** PEM PRIVATE KEY (PKCS#8). */
  privateKey: string;
  /** PEM CERTIFICATE blocks, the leaf first. */
  certChain: string;
}

/** One string per key (a Map key): the fields joined by a separator no name or UID contains. */
export function projectionKeyString(k: ProjectionKey): string {
  return `${k.namespace}/${k.podName}/${k.podUID}/${k.volumeName}/${k.sourceIndex}`;
}

/** Go's %v of the kubelet's key struct, as its "no credentials yet" error prints it. */
export function projectionKeyGoString(k: ProjectionKey): string {
  return `{${k.namespace} ${k.podName} ${k.podUID} ${k.volumeName} ${k.sourceIndex}}`;
}

/** Every podCertificate source of the pod's projected volumes, with its key, in spec order. */
export function podCertificateProjections(
  pod: Pod,
): { key: ProjectionKey; source: PodCertificateProjection }[] {
  const out: { key: ProjectionKey; source: PodCertificateProjection }[] = [];
  for (const v of pod.spec.volumes ?? []) {
    const sources = v.projected?.sources;
    if (!sources) continue;
    sources.forEach((s, sourceIndex) => {
      if (!s.podCertificate) return;
      out.push({
        key: {
          namespace: pod.metadata.namespace ?? '',
          podName: pod.metadata.name ?? '',
          podUID: pod.metadata.uid ?? '',
          volumeName: v.name,
          sourceIndex,
        },
        source: s.podCertificate,
      });
    });
  }
  return out;
}

/** Whether the pod has any podCertificate source (most have none: checked without building keys). */
export function hasPodCertificateProjections(pod: Pod): boolean {
  for (const v of pod.spec.volumes ?? [])
    for (const s of v.projected?.sources ?? []) if (s.podCertificate) return true;
  return false;
}

/** The source at `key` in the pod's spec, when it is a podCertificate source. */
export function projectionSource(pod: Pod, key: ProjectionKey): PodCertificateProjection | undefined {
  const v = pod.spec.volumes?.find((x) => x.name === key.volumeName);
  return v?.projected?.sources?.[key.sourceIndex]?.podCertificate;
}

/**
 * Where a pod came from (kubelet: pkg/kubelet/types/pod_update.go). A static pod is defined on the node
 * (file or URL source) and is known to the API server only through its mirror pod, which the kubelet
 * creates with the mirror annotation; the two have different UIDs.
 */
import type { Pod } from '../../api/core.js';

/** Annotation naming the config source of a pod: `api`, `file`, `http`. Absent on API pods as read back. */
export const ConfigSourceAnnotationKey = 'kubernetes.io/config.source';
/** Annotation present on mirror pods (its value is the static pod's hash; only presence matters here). */
export const ConfigMirrorAnnotationKey = 'kubernetes.io/config.mirror';
/** The source value of pods that come from the API server. */
export const ApiserverSource = 'api';

function annotations(pod: Pod | undefined | null): Record<string, string> {
  const a: unknown = pod?.metadata?.annotations;
  return typeof a === 'object' && a !== null ? (a as Record<string, string>) : {};
}

/** The pod's config source, or undefined when the annotation is missing (as the kubelet's GetPodSource errs). */
export function getPodSource(pod: Pod | undefined | null): string | undefined {
  const source = annotations(pod)[ConfigSourceAnnotationKey];
  return typeof source === 'string' ? source : undefined;
}

/** A static pod has a known source other than the API server. A pod without a source is not static. */
export function isStaticPod(pod: Pod | undefined | null): boolean {
  const source = getPodSource(pod);
  return source !== undefined && source !== ApiserverSource;
}

/** A mirror pod carries the mirror annotation, whatever its value. */
export function isMirrorPod(pod: Pod | undefined | null): boolean {
  return Object.hasOwn(annotations(pod), ConfigMirrorAnnotationKey);
}

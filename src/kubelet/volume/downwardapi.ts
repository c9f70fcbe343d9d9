/**
 * The content of a downwardAPI volume (pkg/volume/downwardapi CollectData), also used for the downwardAPI
 * sources of a projected volume.
 *
 * Each item becomes one file at its cleaned `path`, with its `mode` or the defaultMode:
 * - `fieldRef`: the pod's metadata through fieldpath.ExtractFieldPathAsString (see fieldpath.ts).
 * - `resourceFieldRef`: a container's limit or request as ExtractResourceValueByContainerNameAndNodeAllocatable
 *   computes it: a cpu, memory or ephemeral-storage limit that is unset or zero is the node's allocatable;
 *   an unset or zero divisor is 1; the value is rounded up to a whole number of divisors.
 * Every item is tried; the errors of all failing items are returned together, as the kubelet aggregates them.
 */
import type { Pod } from '../../api/core.js';
import type {
  DownwardAPIVolumeFile,
  DownwardAPIVolumeSource,
  ResourceFieldSelector,
} from '../../api/volumes.js';
import { errorMessage } from '../../util/errors.js';
import {
  containerNotFoundMessage,
  containerResourceValue,
  findContainerInPod,
  parseContainerResourceName,
  unsupportedResourceMessage,
} from '../resourcefieldref.js';
import { type FieldValue, extractFieldPathAsString } from './fieldpath.js';
import { DEFAULT_MODE, type Payload, type PayloadResult, failure, success } from './payload.js';
import { cleanPath } from './paths.js';

export interface DownwardAPIInputs {
  pod: Pod;
  /** Node allocatable (cpu, memory, ephemeral-storage): the value of a limit the container does not set. */
  nodeAllocatable?: Readonly<Record<string, string | number>>;
}

/** ExtractResourceValueByContainerNameAndNodeAllocatable. */
export function resourceFieldValue(
  ref: ResourceFieldSelector,
  pod: Pod,
  nodeAllocatable: Readonly<Record<string, string | number>> | undefined,
): FieldValue {
  const containerName = ref.containerName ?? '';
  const container = findContainerInPod(pod, containerName);
  if (!container) return { ok: false, message: containerNotFoundMessage(containerName) };
  const parsed = parseContainerResourceName(ref.resource);
  if (!parsed) return { ok: false, message: unsupportedResourceMessage(ref.resource) };
  try {
    return { ok: true, value: containerResourceValue(container, parsed, ref.divisor, nodeAllocatable) };
  } catch (err) {
    return { ok: false, message: errorMessage(err) };
  }
}

/** CollectData: the files of `items`, or every item's error. */
export function collectDownwardAPIData(
  items: readonly DownwardAPIVolumeFile[] | undefined,
  defaultMode: number,
  inputs: DownwardAPIInputs,
): PayloadResult {
  const payload: Payload = new Map();
  const errors: string[] = [];
  for (const item of items ?? []) {
    let value: FieldValue = { ok: true, value: '' };
    if (item.fieldRef) value = extractFieldPathAsString(inputs.pod.metadata, item.fieldRef.fieldPath);
    else if (item.resourceFieldRef)
      value = resourceFieldValue(item.resourceFieldRef, inputs.pod, inputs.nodeAllocatable);
    if (!value.ok) errors.push(value.message);
    payload.set(cleanPath(item.path), {
      data: Buffer.from(value.ok ? value.value : '', 'utf8'),
      mode: item.mode ?? defaultMode,
    });
  }
  return errors.length > 0 ? failure(errors) : success(payload);
}

/** The payload of a downwardAPI volume. */
export function makeDownwardAPIPayload(
  source: DownwardAPIVolumeSource,
  inputs: DownwardAPIInputs,
): PayloadResult {
  return collectDownwardAPIData(source.items, source.defaultMode ?? DEFAULT_MODE, inputs);
}

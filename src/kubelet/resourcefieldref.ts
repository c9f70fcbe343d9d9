/**
 * The downward API's `resourceFieldRef` (pkg/api/v1/resource/helpers.go): which container resources it may
 * name and how a quantity is printed against a divisor. Shared by environment variables (envvars.ts) and
 * downwardAPI/projected volumes (volume/downwardapi.ts), which differ only in how they pick the quantity.
 */
import type { Container, Pod } from '../api/core.js';
import { isPodLevelLimitsSet, isSupportedPodLevelResource } from '../api/resources.js';
import { parseQuantityNano, quantityMilliValue, quantityValue } from '../util/quantity.js';

export type ResourceFieldKind = 'limits' | 'requests';

export interface ContainerResourceName {
  kind: ResourceFieldKind;
  /** cpu, memory, ephemeral-storage or hugepages-<size>. */
  name: string;
}

/**
 * `limits.cpu` -> { kind: 'limits', name: 'cpu' }; undefined for anything ExtractContainerResourceValue
 * refuses (see `unsupportedResourceMessage`).
 */
export function parseContainerResourceName(resource: string): ContainerResourceName | undefined {
  const dot = resource.indexOf('.');
  if (dot < 0) return undefined;
  const kind = resource.slice(0, dot);
  const name = resource.slice(dot + 1);
  if (kind !== 'limits' && kind !== 'requests') return undefined;
  const known =
    name === 'cpu' || name === 'memory' || name === 'ephemeral-storage' || name.startsWith('hugepages-');
  return known ? { kind, name } : undefined;
}

export function unsupportedResourceMessage(resource: string): string {
  return `unsupported container resource : ${resource}`;
}

/** findContainerInPod: regular containers first, then init containers (ephemeral ones have no resources). */
export function findContainerInPod(pod: Pod, name: string): Container | undefined {
  return (
    pod.spec.containers.find((c) => c.name === name) ?? pod.spec.initContainers?.find((c) => c.name === name)
  );
}

export function containerNotFoundMessage(name: string): string {
  return `container ${name} not found`;
}

/**
 * convertResourceCPUToString and friends: ceil(quantity / divisor), cpu compared in thousandths and the
 * others in whole units, as the kubelet does. An absent quantity is 0; a zero divisor gives "0" (callers that
 * follow the kubelet replace a zero divisor with 1 first). Throws KindError InvalidArgument for a malformed
 * quantity.
 */
export function convertResourceToString(
  name: string,
  quantity: string | number | undefined,
  divisor: string | number,
): string {
  const scale = name === 'cpu' ? quantityMilliValue : quantityValue;
  const d = scale(divisor);
  const v = quantity === undefined ? 0 : scale(quantity);
  return String(d === 0 ? 0 : Math.ceil(v / d));
}

/** MergeContainerResourceLimits fills these from node allocatable; hugepages are never overcommitted. */
const DEFAULTED_LIMITS = new Set(['cpu', 'memory', 'ephemeral-storage']);

function isZeroQuantity(q: string | number): boolean {
  try {
    return parseQuantityNano(q) === 0n;
  } catch {
    return false;
  }
}

/**
 * The value a resourceFieldRef prints for `container` (ExtractResourceValueByContainerNameAndNodeAllocatable):
 * a limit the container leaves unset (or at zero) is the node's allocatable; a zero divisor (what the API
 * server returns for an unset one) counts as 1. Throws KindError InvalidArgument for a malformed quantity.
 */
export function containerResourceValue(
  container: Container,
  resource: ContainerResourceName,
  divisor: string | number | undefined,
  nodeAllocatable: Readonly<Record<string, string | number>> | undefined,
): string {
  const { kind, name } = resource;
  let quantity =
    kind === 'limits' ? container.resources?.limits?.[name] : container.resources?.requests?.[name];
  if (
    kind === 'limits' &&
    DEFAULTED_LIMITS.has(name) &&
    (quantity === undefined || isZeroQuantity(quantity)) &&
    nodeAllocatable?.[name] !== undefined
  ) {
    quantity = nodeAllocatable[name];
  }
  const d = divisor === undefined || isZeroQuantity(divisor) ? '1' : divisor;
  return convertResourceToString(name, quantity, d);
}

/**
 * The allocatable that environment variables' `resourceFieldRef`s fall back to (kubelet
 * defaultPodLimitsForDownwardAPI): with pod-level limits set (PodLevelResources), a non-zero pod-level cpu or
 * memory limit stands in for the node's allocatable of that resource (where the node reports one), so a
 * container without a limit of its own reads the pod's. downwardAPI volumes keep the node's allocatable, as
 * the kubelet's volume plugin does.
 */
export function downwardAPIAllocatable(
  pod: Pod,
  nodeAllocatable: Readonly<Record<string, string | number>> | undefined,
): Readonly<Record<string, string | number>> | undefined {
  if (!nodeAllocatable || !isPodLevelLimitsSet(pod.spec)) return nodeAllocatable;
  const out = { ...nodeAllocatable };
  for (const name of ['cpu', 'memory', 'ephemeral-storage']) {
    if (!isSupportedPodLevelResource(name)) continue;
    const limit = pod.spec.resources?.limits?.[name];
    if (limit !== undefined && !isZeroQuantity(limit) && out[name] !== undefined) out[name] = limit;
  }
  return out;
}

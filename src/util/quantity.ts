/**
 * Kubernetes quantities as the kubelet reads them when it sizes a container: `MilliValue()` for cpu and
 * `Value()` for memory, both rounding up like apimachinery's ScaledValue. Parsing (suffixes n u m k M G T P
 * E, Ki Mi Gi Ti Pi Ei, decimal exponents) is the exact nano-unit parser of src/api/quantity.ts, so QoS and
 * resource sizing can never disagree on what a string means.
 */
import { parseQuantityNano } from '../api/quantity.js';
import { KindError } from './errors.js';

export { parseQuantityNano };

/** Divides rounding towards +infinity (apimachinery rounds scaled values up). */
function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

function toSafeNumber(v: bigint, q: string | number): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new KindError('InvalidArgument', `quantity ${JSON.stringify(q)} does not fit a safe integer`);
  }
  return Number(v);
}

/** The quantity in thousandths, rounded up: "100m" -> 100, "1.5" -> 1500, "1" -> 1000. */
export function quantityMilliValue(q: string | number): number {
  return toSafeNumber(ceilDiv(parseQuantityNano(q), 1_000_000n), q);
}

/** The quantity in whole units, rounded up: "64Mi" -> 67108864, "1k" -> 1000, "1500m" -> 2. */
export function quantityValue(q: string | number): number {
  return toSafeNumber(ceilDiv(parseQuantityNano(q), 1_000_000_000n), q);
}

/**
 * resource.Quantity, reduced to what kubelet-operator compares: a parsed value in exact integer
 * nano-units, so sums and equality (QoS class, capacity) never suffer from floating point.
 *
 * Grammar (as apimachinery): `[+-]?(digits[.digits]|.digits)` followed by a binary SI suffix
 * (Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E) or a decimal exponent (e|E[+-]?digits).
 * A JSON number is read through its decimal string form.
 */
import { KindError } from '../util/errors.js';

const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$/;

/**
 * The value of a quantity in nano-units (1 = 10^-9), rounded up when finer than that, as apimachinery
 * rounds. Throws KindError('InvalidArgument') on anything that is not a quantity.
 */
export function parseQuantityNano(q: string | number): bigint {
  const text =
    typeof q === 'number' ? (Number.isFinite(q) ? String(q) : '') : typeof q === 'string' ? q.trim() : '';
  const m = QUANTITY.exec(text);
  if (!m) throw new KindError('InvalidArgument', `invalid quantity ${JSON.stringify(q)}`);
  const [, sign = '', num = '', suffix = ''] = m;
  const [intPart = '', fracPart = ''] = num.split('.');
  let mantissa = BigInt((intPart || '0') + fracPart);
  let exponent = -fracPart.length + 9; // power of ten that turns the digits into nano-units
  if (suffix in BINARY) {
    mantissa *= 1024n ** BigInt(BINARY[suffix] ?? 0);
  } else if (suffix.startsWith('e') || suffix.startsWith('E')) {
    exponent += Number.parseInt(suffix.slice(1), 10);
  } else {
    exponent += DECIMAL[suffix] ?? 0;
  }
  // Bounds keep a hostile exponent from building an enormous number; no real resource comes near them.
  if (exponent > 60 || exponent < -60)
    throw new KindError('InvalidArgument', `quantity out of range ${JSON.stringify(q)}`);
  let value: bigint;
  if (exponent >= 0) {
    value = mantissa * 10n ** BigInt(exponent);
  } else {
    const div = 10n ** BigInt(-exponent);
    value = (mantissa + div - 1n) / div;
  }
  return sign === '-' ? -value : value;
}

/**
 * Kubernetes quantities (resource.Quantity) as the kubelet reads them when it sizes a container:
 * `MilliValue()` for cpu and `Value()` for memory, both rounding up like apimachinery's ScaledValue.
 *
 * Grammar: `[+-]?(digits[.digits]|.digits)` then one of: a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal
 * exponent (`e`/`E` followed by `[+-]?digits`), a decimal suffix (n u m "" k M G T P E). A bare `E` is exa,
 * `E3` is an exponent. Values are exact (bigint nano-units) until the final conversion, which refuses a
 * result beyond Number.MAX_SAFE_INTEGER rather than rounding it.
 */
import { KindError } from './errors.js';

const BINARY_POWER: Record<string, bigint> = { Ki: 1n, Mi: 2n, Gi: 3n, Ti: 4n, Pi: 5n, Ei: 6n };
const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+)|([numkMGTPE]?))$/;
/** Keeps a hostile exponent from building an enormous bigint; no resource comes near it. */
const MAX_EXPONENT = 60;

function invalid(q: unknown, why = 'invalid quantity'): KindError {
  return new KindError('InvalidArgument', `${why} ${JSON.stringify(q)}`);
}

/**
 * The quantity scaled by 10^`scale` (scale 9 = nano-units, 3 = milli, 0 = units), rounded towards
 * +infinity. Throws KindError('InvalidArgument') on anything that is not a quantity.
 */
export function parseQuantityScaled(q: string | number, scale: number): bigint {
  let text: string;
  if (typeof q === 'number') {
    if (!Number.isFinite(q)) throw invalid(q);
    text = String(q);
  } else if (typeof q === 'string') {
    text = q.trim();
  } else {
    throw invalid(q);
  }
  const m = QUANTITY.exec(text);
  if (!m) throw invalid(q);
  const [, sign = '', num = '', binary, exponent, decimal] = m;
  const [intPart = '', fracPart = ''] = num.split('.');
  let mantissa = BigInt((intPart || '0') + fracPart);
  let power = scale - fracPart.length;
  if (binary !== undefined) mantissa *= 1024n ** (BINARY_POWER[binary] ?? 0n);
  else if (exponent !== undefined) power += Number.parseInt(exponent, 10);
  else power += DECIMAL_EXPONENT[decimal ?? ''] ?? 0;
  if (Math.abs(power) > MAX_EXPONENT) throw invalid(q, 'quantity out of range');

  const negative = sign === '-';
  let value: bigint;
  if (power >= 0) {
    value = mantissa * 10n ** BigInt(power);
  } else {
    const div = 10n ** BigInt(-power);
    // Towards +infinity: up for positive values, truncation (towards zero) for negative ones.
    value = negative ? mantissa / div : (mantissa + div - 1n) / div;
  }
  return negative ? -value : value;
}

/** Exact nano-units (10^-9), rounded up. */
export function parseQuantityNano(q: string | number): bigint {
  return parseQuantityScaled(q, 9);
}

function toSafeNumber(v: bigint, q: string | number): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw invalid(q, 'quantity does not fit a safe integer:');
  }
  return Number(v);
}

/** The quantity in thousandths, rounded up: "100m" -> 100, "1.5" -> 1500, "1" -> 1000. */
export function quantityMilliValue(q: string | number): number {
  return toSafeNumber(parseQuantityScaled(q, 3), q);
}

/** The quantity in whole units, rounded up: "64Mi" -> 67108864, "1k" -> 1000, "1500m" -> 2. */
export function quantityValue(q: string | number): number {
  return toSafeNumber(parseQuantityScaled(q, 0), q);
}

/**
 * A millicore count as apimachinery prints a DecimalSI milli-quantity: whole units without a suffix ("2"),
 * otherwise milli ("1500m").
 */
export function formatMilliQuantity(milli: number): string {
  if (!Number.isSafeInteger(milli)) throw invalid(milli, 'not an integer milli value:');
  return milli % 1000 === 0 ? String(milli / 1000) : `${milli}m`;
}

const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/**
 * A byte count as apimachinery prints a BinarySI quantity: the largest binary suffix that divides it exactly
 * ("64Mi", "3584Ki"), or the plain number when 1024 does not divide it ("1000").
 */
export function formatBinaryQuantity(bytes: number): string {
  if (!Number.isSafeInteger(bytes)) throw invalid(bytes, 'not an integer byte count:');
  if (bytes === 0 || Math.abs(bytes) < 1024) return String(bytes);
  let n = bytes;
  let i = 0;
  while (i < BINARY_SUFFIXES.length - 1 && n % 1024 === 0) {
    n /= 1024;
    i++;
  }
  return `${n}${BINARY_SUFFIXES[i]}`;
}

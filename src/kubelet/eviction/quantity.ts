/**
 * Quantities as the eviction manager compares and prints them. Its messages carry quantities in
 * apimachinery's canonical form, which depends on the format a quantity was written in (a parsed "1.5Gi"
 * prints "1536Mi", a parsed "2000" prints "2k") and, for measured figures, on whether they count bytes
 * (BinarySI: 1000 bytes print "1k", 2048 print "2Ki") or things (DecimalSI: 2048 inodes print "2048").
 *
 * Values are exact: nano-units in a bigint. src/util/quantity.ts does the parsing; this file adds the format
 * and the printing, which the eviction messages need to read as the kubelet's.
 */
import { parseQuantityNano } from '../../util/quantity.js';

export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/** A quantity with the format apimachinery keeps beside its value. */
export interface Quantity {
  /** The value in nano-units (10^-9), exact. */
  readonly nano: bigint;
  readonly format: QuantityFormat;
}

const NANO = 1_000_000_000n;

/** apimachinery's wording when a string is no quantity at all. */
export const QuantityFormatError =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/** ... and when the number reads but the suffix does not. */
export const QuantitySuffixError = "unable to parse quantity's suffix";

const GO_SHAPE = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/;

/**
 * Parses a quantity as resource.ParseQuantity does, keeping its format: a binary suffix (Ki..Ei) gives
 * BinarySI, an exponent (1e6) DecimalExponent, anything else DecimalSI. Throws an Error with
 * apimachinery's message on bad input.
 */
export function parseQuantity(text: string): Quantity {
  if (text.length === 0 || text.trim() !== text) throw new Error(QuantityFormatError);
  let nano: bigint;
  try {
    nano = parseQuantityNano(text);
  } catch {
    throw new Error(GO_SHAPE.test(text) ? QuantitySuffixError : QuantityFormatError);
  }
  let format: QuantityFormat = 'DecimalSI';
  if (/(Ki|Mi|Gi|Ti|Pi|Ei)$/.test(text)) format = 'BinarySI';
  else if (/[eE][+-]?\d+$/.test(text)) format = 'DecimalExponent';
  return { nano, format };
}

/** A quantity written in a spec (string or number), or undefined when absent or unreadable. */
export function specQuantity(q: string | number | undefined): Quantity | undefined {
  if (q === undefined) return undefined;
  try {
    return parseQuantity(typeof q === 'number' ? String(q) : q);
  } catch {
    return undefined;
  }
}

/** A measured count as resource.NewQuantity(n, format) holds it. */
export function newQuantity(n: number, format: QuantityFormat): Quantity {
  return { nano: BigInt(Math.trunc(n)) * NANO, format };
}

/** Whole units, rounded up as Quantity.Value() does. */
export function quantityUnits(q: Quantity): number {
  const whole = q.nano / NANO;
  return Number(q.nano > 0n && q.nano % NANO !== 0n ? whole + 1n : whole);
}

export function cmpQuantity(a: Quantity, b: Quantity): number {
  return a.nano === b.nano ? 0 : a.nano > b.nano ? 1 : -1;
}

/** a + b in a's format, as Quantity.Add keeps the receiver's. */
export function addQuantity(a: Quantity, b: Quantity): Quantity {
  return { nano: a.nano + b.nano, format: a.format };
}

const DECIMAL_SUFFIX: Record<number, string> = {
  [-9]: 'n',
  [-6]: 'u',
  [-3]: 'm',
  0: '',
  3: 'k',
  6: 'M',
  9: 'G',
  12: 'T',
  15: 'P',
  18: 'E',
};
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** mantissa * 10^exponent with the exponent a multiple of 3 and as large as keeps the mantissa whole. */
function base10(nano: bigint): { mantissa: bigint; exponent: number } {
  if (nano === 0n) return { mantissa: 0n, exponent: 0 };
  let mantissa = nano;
  let exponent = -9;
  while (mantissa % 1000n === 0n) {
    mantissa /= 1000n;
    exponent += 3;
  }
  return { mantissa, exponent };
}

function formatDecimal(nano: bigint, exponentForm: boolean): string {
  const { mantissa, exponent } = base10(nano);
  if (mantissa === 0n) return '0';
  if (exponentForm) return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  const suffix = DECIMAL_SUFFIX[exponent];
  if (suffix !== undefined) return `${mantissa}${suffix}`;
  // Beyond exa: apimachinery keeps the largest suffix and a longer mantissa.
  return `${mantissa * 10n ** BigInt(exponent - 18)}E`;
}

/** The quantity as Quantity.String() prints it. */
export function formatQuantity(q: Quantity): string {
  if (q.format === 'BinarySI') {
    const small = q.nano > -1024n * NANO && q.nano < 1024n * NANO;
    if (small || q.nano % NANO !== 0n) return formatDecimal(q.nano, false);
    let n = q.nano / NANO;
    let i = 0;
    while (i < BINARY_SUFFIX.length - 1 && n % 1024n === 0n) {
      n /= 1024n;
      i++;
    }
    return `${n}${BINARY_SUFFIX[i]}`;
  }
  return formatDecimal(q.nano, q.format === 'DecimalExponent');
}

/**
 * A tiny DER writer: just the ASN.1 types a PKCS#10 certificate request needs. Each function returns the
 * complete TLV encoding as a Buffer; constructed types take already-encoded children.
 *
 * Contract: pure; bad input (a malformed OID, a negative length) throws InvalidArgument.
 */
import { KindError } from './errors.js';

/** The DER length octets of `n`: short form below 128, else 0x80|count followed by big-endian bytes. */
export function derLength(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new KindError('InvalidArgument', `bad DER length ${n}`);
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One TLV with the given tag byte. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

export const sequence = (...children: Buffer[]): Buffer => tlv(0x30, Buffer.concat(children));

/** SET OF: DER orders the elements by their encodings. */
export const setOf = (...children: Buffer[]): Buffer =>
  tlv(0x31, Buffer.concat([...children].sort(Buffer.compare)));

/** A non-negative INTEGER that fits in a JavaScript number. */
export function integer(n: number): Buffer {
  if (!Number.isSafeInteger(n) || n < 0) throw new KindError('InvalidArgument', `bad DER integer ${n}`);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  if (bytes.length === 0 || bytes[0]! & 0x80) bytes.unshift(0);
  return tlv(0x02, Buffer.from(bytes));
}

/** OBJECT IDENTIFIER from dotted notation (base-128 arcs, the first two combined). */
export function oid(dotted: string): Buffer {
  if (!/^[0-2]\.\d+(\.\d+)*$/.test(dotted)) throw new KindError('InvalidArgument', `bad OID ${dotted}`);
  const arcs = dotted.split('.').map(Number);
  const out: number[] = [];
  const push = (v: number): void => {
    const groups: number[] = [v & 0x7f];
    for (v = Math.floor(v / 128); v > 0; v = Math.floor(v / 128)) groups.unshift(0x80 | (v & 0x7f));
    out.push(...groups);
  };
  push(arcs[0]! * 40 + arcs[1]!);
  for (const a of arcs.slice(2)) push(a);
  return tlv(0x06, Buffer.from(out));
}

export const utf8String = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
export const octetString = (b: Buffer): Buffer => tlv(0x04, b);
/** BIT STRING of whole bytes (no unused bits). */
export const bitString = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
export const boolean = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));

/** A context-specific tag: [n] IMPLICIT over a primitive value, or [n] constructed (EXPLICIT/IMPLICIT SET). */
export const contextPrimitive = (n: number, content: Buffer): Buffer => tlv(0x80 | n, content);
export const contextConstructed = (n: number, content: Buffer): Buffer => tlv(0xa0 | n, content);

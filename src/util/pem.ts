/**
 * PEM armour (RFC 7468) as Go's encoding/pem reads and writes it: blocks found anywhere in a text (what lies
 * between them is ignored), `Key: value` headers skipped, the base64 body decoded; written with 64 characters
 * a line and a final newline.
 *
 * Contract: pure. A block whose body is not base64 is skipped, as pem.Decode skips it.
 */

export interface PemBlock {
  /** The label between `BEGIN ` and the dashes, e.g. `CERTIFICATE`. */
  type: string;
  der: Buffer;
}

const PEM_BLOCK = /-----BEGIN ([^-\r\n]+)-----\r?\n([\s\S]*?)-----END \1-----/g;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Every PEM block of `text`, in order. */
export function pemBlocks(text: string): PemBlock[] {
  const out: PemBlock[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    // Headers (`Key: value` lines before a blank line) are not part of the bytes.
    const body = m[2]!.includes(':')
      ? m[2]!
          .split(/\r?\n\r?\n/)
          .slice(1)
          .join('')
      : m[2]!;
    const b64 = body.replace(/\s+/g, '');
    if (!BASE64.test(b64) || b64.length % 4 === 1) continue;
    out.push({ type: m[1]!, der: Buffer.from(b64, 'base64') });
  }
  return out;
}

/** One PEM block of `der` labelled `type`. */
export function pemEncode(type: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${type}-----\n${b64}-----END ${type}-----\n`;
}

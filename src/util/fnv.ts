/** FNV-1a, 32 bits, of a string's UTF-8 bytes (the hash of the kubelet's checkpoint checksums). */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(text)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

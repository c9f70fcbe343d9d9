/** Strings quoted as Go quotes them, for messages the kubelet builds with `%q` that users and tools match on. */

const HEX = '0123456789abcdef';

function hex(n: number, width: number): string {
  let s = '';
  for (let shift = (width - 1) * 4; shift >= 0; shift -= 4) s += HEX[(n >> shift) & 0xf];
  return s;
}

/** Printable ASCII other than `"` and `\`: a string of only these is quoted as it is (the common case). */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/**
 * What strconv.Quote changes: `"`, `\`, and every code point Go's strconv.IsPrint rejects (it accepts
 * letters, marks, numbers, punctuation, symbols and the ASCII space). A lone UTF-16 surrogate matches too
 * (general category Cs).
 */
const NEEDS_ESCAPE = /["\\]|[^\p{L}\p{M}\p{N}\p{P}\p{S} ]/gu;

const NAMED_ESCAPES: Readonly<Record<number, string>> = {
  0x07: '\\a',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x0b: '\\v',
};

function escapeOne(ch: string): string {
  if (ch === '"' || ch === '\\') return `\\${ch}`;
  const cp = ch.codePointAt(0)!;
  // A Go string cannot hold a lone surrogate (its JSON decoder makes it U+FFFD, which is printable).
  if (cp >= 0xd800 && cp <= 0xdfff) return '\ufffd';
  const named = NAMED_ESCAPES[cp];
  if (named) return named;
  if (cp < 0x20 || cp === 0x7f) return `\\x${hex(cp, 2)}`;
  if (cp < 0x10000) return `\\u${hex(cp, 4)}`;
  return `\\U${hex(cp, 8)}`;
}

/**
 * Go's strconv.Quote (the `%q` verb): double quotes, `"` and `\` escaped, printable characters as they are,
 * \a \b \f \n \r \t \v by name, other bytes below 0x20 and DEL as \xHH, other unprintable runes as \uHHHH or
 * \UHHHHHHHH. A lone UTF-16 surrogate, which a Go string cannot hold (its JSON decoder makes it U+FFFD), is
 * written as U+FFFD. One pass of one regular expression: annotation maps reach 256 KiB, and a test per
 * character held the event loop for a second on a few such pods.
 */
export function goQuote(s: string): string {
  if (PLAIN_ASCII.test(s)) return `"${s}"`;
  return `"${s.replace(NEEDS_ESCAPE, escapeOne)}"`;
}

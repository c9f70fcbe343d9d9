/**
 * YAML as Kubernetes components write it: the apimachinery YAML serializer marshals an object to JSON, then
 * sigs.k8s.io/yaml's JSONToYAML decodes that and encodes it again with go-yaml v2. The structured `/statusz`
 * and `/flagz` answers (`Accept: application/yaml;as=...`) and their 406 Status are written this way, so what
 * a client sees matches the kubelet byte for byte: keys in go-yaml's order, block style with sequences not
 * indented under their key, `{}` and `[]` for empty collections, and go-yaml's choice of scalar style (plain
 * when the text reads back as the same string, double quotes when it would read as a number, bool, null or
 * timestamp, single quotes when YAML indicators forbid plain, a literal block for multi-line text), long
 * scalars folded at spaces past column 80.
 *
 * Input is what JSON.parse gives (objects, arrays, strings, finite numbers, booleans, null). Mapping keys are
 * written as simple keys (go-yaml writes `? key` for one longer than 128 characters or on several lines; ours
 * are field and flag names). Checked against sigs.k8s.io/yaml v1.6.0 on ten thousand generated documents.
 */

const BEST_WIDTH = 80;
const BEST_INDENT = 2;

/** go-yaml's resolve(): whether a plain scalar with this text would read back as something else than a string. */
function resolvesToNonString(s: string): boolean {
  if (s === '') return true; // null
  const c = s[0]!;
  if (!/[-+0-9yYnNtTfFoO~.]/.test(c)) return false;
  if (RESOLVE_MAP.has(s)) return true;
  if (c === '.') return /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(s) && Number.isFinite(Number(s));
  if (!/[-+0-9]/.test(c)) return false;
  if (isTimestamp(s)) return true;
  const plain = s.replaceAll('_', '');
  if (isGoInt(plain)) return true;
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(plain) && Number.isFinite(Number(plain)))
    return true;
  return false;
}

const RESOLVE_MAP = new Set(
  [
    'y Y yes Yes YES true True TRUE on On ON',
    'n N no No NO false False FALSE off Off OFF',
    '~ null Null NULL .nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF',
  ].flatMap((l) => l.split(' ')),
);

/** strconv.ParseInt(s, 0, 64), or ParseUint(s, 0, 64) for what overflows int64. */
function isGoInt(s: string): boolean {
  const m = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(s);
  if (!m) return false;
  const digits = m[2]!;
  const body = /^0[0-7]+$/.test(digits) ? `0o${digits.slice(1)}` : digits;
  const v = BigInt(body);
  if (m[1] === '-') return v <= 2n ** 63n;
  return v < 2n ** 63n || (m[1] === '' && v < 2n ** 64n);
}

/** go-yaml's parseTimestamp: the few layouts of time.Parse it tries, with their range checks. */
function isTimestamp(s: string): boolean {
  const m =
    /^(\d{4})-(\d{1,2})-(\d{1,2})(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[-+]\d\d:\d\d))|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?))?$/.exec(
      s,
    );
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return false;
  const [h, min, sec] = [m[4] ?? m[7], m[5] ?? m[8], m[6] ?? m[9]].map((x) => Number(x ?? 0));
  return h! < 24 && min! < 60 && sec! < 60;
}

function isBase60Float(s: string): boolean {
  return /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/.test(s);
}

/** YAML's printable set (go-yaml's is_printable, on code points). */
function printable(cp: number): boolean {
  return (
    cp === 0x0a ||
    (cp >= 0x20 && cp <= 0x7e) ||
    (cp >= 0xa0 && cp <= 0xd7ff) ||
    (cp >= 0xe000 && cp <= 0xfffd && cp !== 0xfeff)
  );
}

const isBreak = (ch: string | undefined): boolean =>
  ch === '\r' || ch === '\n' || ch === '\u0085' || ch === '\u2028' || ch === '\u2029';
const isBlank = (ch: string | undefined): boolean => ch === ' ' || ch === '\t';

interface Analysis {
  multiline: boolean;
  blockPlain: boolean;
  singleQuoted: boolean;
  block: boolean;
}

/** go-yaml's analyze_scalar, for the block context (the only one we write scalars in). */
function analyze(chars: string[]): Analysis {
  if (chars.length === 0) return { multiline: false, blockPlain: true, singleQuoted: true, block: false };
  const start = chars.slice(0, 3).join('');
  let blockIndicators = start === '---' || start === '...';
  let [lineBreaks, special] = [false, false];
  let [leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak] =
    Array<boolean>(6).fill(false);
  let [precededByWhitespace, previousSpace, previousBreak] = [true, false, false];
  chars.forEach((ch, i) => {
    const last = i === chars.length - 1;
    const followedByWhitespace = last || isBlank(chars[i + 1]);
    if (i === 0) {
      if ('#,[]{}&*!|>\'"%@`'.includes(ch)) blockIndicators = true;
      else if ((ch === '?' || ch === ':' || ch === '-') && followedByWhitespace) blockIndicators = true;
    } else if ((ch === ':' && followedByWhitespace) || (ch === '#' && precededByWhitespace)) {
      blockIndicators = true;
    }
    if (!printable(ch.codePointAt(0)!)) special = true;
    if (ch === ' ') {
      if (i === 0) leadingSpace = true;
      if (last) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      [previousSpace, previousBreak] = [true, false];
    } else if (isBreak(ch)) {
      lineBreaks = true;
      if (i === 0) leadingBreak = true;
      if (last) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      [previousSpace, previousBreak] = [false, true];
    } else {
      [previousSpace, previousBreak] = [false, false];
    }
    precededByWhitespace = isBlank(ch) || isBreak(ch) || ch === '\0';
  });
  const a: Analysis = { multiline: lineBreaks, blockPlain: true, singleQuoted: true, block: true };
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) a.blockPlain = false;
  if (trailingSpace) a.block = false;
  if (breakSpace) a.blockPlain = a.singleQuoted = false;
  if (spaceBreak || special) a.blockPlain = a.singleQuoted = a.block = false;
  if (lineBreaks || blockIndicators) a.blockPlain = false;
  return a;
}

type Style = 'plain' | 'single' | 'double' | 'literal';

/** The style go-yaml asks for (encoder's stringv) and the emitter settles on (select_scalar_style). */
function styleOf(s: string, chars: string[], simpleKey: boolean): Style {
  let style: Style = s.includes('\n')
    ? 'literal'
    : !resolvesToNonString(s) && !isBase60Float(s)
      ? 'plain'
      : 'double';
  const a = analyze(chars);
  if (simpleKey && a.multiline) style = 'double';
  if (style === 'plain' && (!a.blockPlain || (chars.length === 0 && simpleKey))) style = 'single';
  if (style === 'single' && !a.singleQuoted) style = 'double';
  if (style === 'literal' && (!a.block || simpleKey)) style = 'double';
  return style;
}

const ESCAPES: Record<number, string> = {
  0x00: '0',
  0x07: 'a',
  0x08: 'b',
  0x09: 't',
  0x0a: 'n',
  0x0b: 'v',
  0x0c: 'f',
  0x0d: 'r',
  0x1b: 'e',
  0x22: '"',
  0x5c: '\\',
  0x85: 'N',
  0xa0: '_',
  0x2028: 'L',
  0x2029: 'P',
};

function escapeOf(cp: number): string {
  const named = ESCAPES[cp];
  if (named !== undefined) return `\\${named}`;
  const [tag, width] = cp <= 0xff ? ['x', 2] : cp <= 0xffff ? ['u', 4] : ['U', 8];
  return `\\${tag}${cp.toString(16).toUpperCase().padStart(width, '0')}`;
}

/** The emitter's output and the state its line folding reads. */
class Writer {
  out = '';
  column = 0;
  /** The last thing written was white space (or the start of a line). */
  whitespace = true;
  /** At the indentation of the line (nothing but indentation written on it). */
  indention = true;

  put(s: string): void {
    this.out += s;
    this.column += [...s].length;
  }
  newline(): void {
    this.out += '\n';
    this.column = 0;
  }
  /** A line break of the text itself (go-yaml's write_break). */
  lineBreak(ch: string): void {
    if (ch === '\n') return this.newline();
    this.out += ch;
    this.column = 0;
  }
  /** go-yaml's write_indent: a new line unless already at `indent` on a fresh one, then spaces to it. */
  indent(indent: number): void {
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace))
      this.newline();
    while (this.column < indent) this.put(' ');
    this.whitespace = this.indention = true;
  }
  indicator(s: string, needWhitespace: boolean): void {
    if (needWhitespace && !this.whitespace) this.put(' ');
    this.put(s);
    this.whitespace = this.indention = false;
  }
}

/** One scalar at the writer's position; `indent` is where folded lines continue. */
function writeScalar(w: Writer, s: string, indent: number, simpleKey: boolean): void {
  const chars = [...s];
  const style = styleOf(s, chars, simpleKey);
  const allowBreaks = !simpleKey;
  const fold = (i: number, spaces: boolean): boolean =>
    allowBreaks && !spaces && w.column > BEST_WIDTH && i > 0 && i < chars.length - 1;
  if (style === 'literal') return writeLiteral(w, chars, indent);
  if (style === 'double') {
    w.indicator('"', true);
    const bom = chars[0] === '\ufeff';
    let spaces = false;
    chars.forEach((ch, i) => {
      const cp = ch.codePointAt(0)!;
      if (!printable(cp) || bom || isBreak(ch) || ch === '"' || ch === '\\') {
        w.put(escapeOf(cp));
        spaces = false;
      } else if (ch === ' ') {
        if (fold(i, spaces)) {
          w.indent(indent);
          if (chars[i + 1] === ' ') w.put('\\');
        } else w.put(ch);
        spaces = true;
      } else {
        w.put(ch);
        spaces = false;
      }
    });
    w.indicator('"', false);
    return;
  }
  if (style === 'single') w.indicator("'", true);
  else if (!w.whitespace) w.put(' ');
  let [spaces, breaks] = [false, false];
  chars.forEach((ch, i) => {
    if (ch === ' ') {
      const folds = style === 'single' ? fold(i, spaces) : allowBreaks && !spaces && w.column > BEST_WIDTH;
      if (folds && chars[i + 1] !== ' ') w.indent(indent);
      else w.put(ch);
      spaces = true;
    } else if (isBreak(ch)) {
      if (!breaks && ch === '\n') w.newline();
      w.lineBreak(ch);
      w.indention = breaks = true;
    } else {
      if (breaks) w.indent(indent);
      if (ch === "'" && style === 'single') w.put("'");
      w.put(ch);
      w.indention = spaces = breaks = false;
    }
  });
  if (style === 'single') w.indicator("'", false);
  w.whitespace = w.indention = false;
}

/** `|` with go-yaml's indentation and chomping hints, then the lines at `indent`. */
function writeLiteral(w: Writer, chars: string[], indent: number): void {
  w.indicator('|', true);
  if (chars[0] === ' ' || isBreak(chars[0])) w.indicator(String(BEST_INDENT), false);
  const last = chars.length - 1;
  if (!isBreak(chars[last])) w.indicator('-', false);
  else if (last === 0 || isBreak(chars[last - 1])) w.indicator('+', false);
  w.newline();
  w.indention = w.whitespace = true;
  let breaks = true;
  for (const ch of chars) {
    if (isBreak(ch)) {
      w.lineBreak(ch);
      w.indention = breaks = true;
    } else {
      if (breaks) w.indent(indent);
      w.put(ch);
      w.indention = breaks = false;
    }
  }
}

/** go-yaml's key order: numbers by value, strings letter by letter with runs of digits compared as numbers. */
function keyLess(a: string, b: string): boolean {
  const [ar, br] = [[...a], [...b]];
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) continue;
    const al = /\p{L}/u.test(ar[i]!);
    const bl = /\p{L}/u.test(br[i]!);
    if (al && bl) return ar[i]!.codePointAt(0)! < br[i]!.codePointAt(0)!;
    if (al || bl) return bl;
    let [an, bn] = [0n, 0n];
    if (ar[i] === '0' || br[i] === '0') {
      for (let j = i - 1; j >= 0 && /[0-9]/.test(ar[j]!); j--) {
        if (ar[j] !== '0') {
          an = bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && /[0-9]/.test(ar[ai]!); ai++) an = an * 10n + BigInt(ar[ai]!);
    let bi = i;
    for (; bi < br.length && /[0-9]/.test(br[bi]!); bi++) bn = bn * 10n + BigInt(br[bi]!);
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return ar[i]!.codePointAt(0)! < br[i]!.codePointAt(0)!;
  }
  return ar.length < br.length;
}

export function sortKeysGoYaml(keys: string[]): string[] {
  return [...keys].sort((a, b) => (keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0));
}

function isCollection(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

function isEmpty(v: object): boolean {
  return Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0;
}

/** A scalar that is not a string: numbers as strconv prints them, booleans and null as YAML spells them. */
function otherScalar(v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? v.toFixed(0) : String(v);
  if (typeof v === 'boolean') return String(v);
  return 'null';
}

/** A node at the writer's position; `indent` is the enclosing collection's indentation. */
function writeNode(w: Writer, v: unknown, indent: number, inMapping: boolean): void {
  if (isCollection(v) && !isEmpty(v)) {
    if (Array.isArray(v)) {
      // In a mapping the sequence is not indented further (go-yaml's indentless sequence).
      const at = inMapping && !w.indention ? indent : indent + BEST_INDENT;
      for (const item of v as unknown[]) {
        w.indent(at);
        w.indicator('-', true);
        w.indention = true;
        writeNode(w, item, at, false);
      }
      return;
    }
    const at = indent + BEST_INDENT;
    const rec = v as Record<string, unknown>;
    for (const k of sortKeysGoYaml(Object.keys(rec))) {
      w.indent(at);
      writeScalar(w, k, at + BEST_INDENT, true);
      w.indicator(':', false);
      writeNode(w, rec[k], at, true);
    }
    return;
  }
  if (isCollection(v)) return w.indicator(Array.isArray(v) ? '[]' : '{}', true);
  if (typeof v === 'string') return writeScalar(w, v, indent + BEST_INDENT, false);
  if (!w.whitespace) w.put(' ');
  w.put(otherScalar(v));
  w.whitespace = w.indention = false;
}

/** `value` as sigs.k8s.io/yaml's JSONToYAML writes it (a document ending in a newline). */
export function toGoYaml(value: unknown): string {
  const w = new Writer();
  writeNode(w, value, -BEST_INDENT, false);
  w.indent(0);
  return w.out;
}

/**
 * A tokenizer for the small subset of POSIX sh that container commands use (`sh -c '...'`), enough for
 * command.ts to tell what a script does. Quoting ('...', "...", backslash), comments, the separators
 * `;` `&&` `||` `&` newline, redirections (`>file`, `>>file`, `<file`, `2>&1`, `>&2`) and parameter
 * expansion from the container's environment (`$NAME`, `${NAME}`, `${NAME:-word}`) are understood.
 * Command substitution (`$(...)`, backquotes) expands to "" because the simulation cannot run it; `$?`
 * expands to 0 and positional parameters to "". Pipes and parentheses are returned as operators for the
 * interpreter to refuse.
 */

export type ShellOp = ';' | '&&' | '||' | '&' | '|' | '\n' | '(' | ')';

export type Token =
  | { t: 'word'; v: string }
  | { t: 'op'; v: ShellOp }
  /** `target` is a file name, or `&N` for a duplication such as `>&2`. */
  | { t: 'redir'; fd: number; op: '>' | '>>' | '<'; target: string };

export class ShellSyntaxError extends Error {}

export function tokenize(src: string, env: Readonly<Record<string, string>>): Token[] {
  const out: Token[] = [];
  let word: string | null = null;
  let wordQuoted = false;
  let pendingRedir: { fd: number; op: '>' | '>>' | '<' } | null = null;

  const endWord = (): void => {
    if (word === null) return;
    if (pendingRedir) {
      out.push({ t: 'redir', ...pendingRedir, target: word });
      pendingRedir = null;
    } else {
      out.push({ t: 'word', v: word });
    }
    word = null;
    wordQuoted = false;
  };
  const pushOp = (v: ShellOp): void => {
    endWord();
    if (pendingRedir) throw new ShellSyntaxError(`unexpected "${v === '\n' ? 'newline' : v}"`);
    out.push({ t: 'op', v });
  };
  const append = (s: string, quoted = false): void => {
    word = (word ?? '') + s;
    wordQuoted ||= quoted;
  };

  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t') {
      endWord();
      i++;
    } else if (c === '\n' || c === ';' || c === '(' || c === ')') {
      pushOp(c);
      i++;
    } else if (c === '&' || c === '|') {
      const double = src[i + 1] === c;
      pushOp(double ? (c === '&' ? '&&' : '||') : c);
      i += double ? 2 : 1;
    } else if (c === '#' && word === null) {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '>' || c === '<') {
      let fd = c === '>' ? 1 : 0;
      if (word !== null && !wordQuoted && /^\d$/.test(word)) {
        fd = Number(word);
        word = null;
      } else {
        endWord();
      }
      if (pendingRedir) throw new ShellSyntaxError(`unexpected "${c}"`);
      let op: '>' | '>>' | '<' = c;
      i++;
      if (c === '>' && src[i] === '>') {
        op = '>>';
        i++;
      } else if (c === '>' && src[i] === '|') {
        i++;
      }
      if (src[i] === '&') {
        let j = i + 1;
        while (j < src.length && /[0-9-]/.test(src[j]!)) j++;
        out.push({ t: 'redir', fd, op, target: src.slice(i, j) });
        i = j;
      } else {
        pendingRedir = { fd, op };
      }
    } else if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new ShellSyntaxError('unterminated quoted string');
      append(src.slice(i + 1, end), true);
      i = end + 1;
    } else if (c === '"') {
      i = readDouble(src, i + 1, env, (s) => append(s, true));
    } else if (c === '\\') {
      if (src[i + 1] === '\n') i += 2;
      else {
        append(src[i + 1] ?? '', true);
        i += 2;
      }
    } else if (c === '$' || c === '`') {
      const [value, next] = expand(src, i, env);
      append(value);
      i = next;
    } else {
      append(c);
      i++;
    }
  }
  endWord();
  if (pendingRedir) throw new ShellSyntaxError('unexpected end of file');
  return out;
}

/** Reads a double-quoted string starting after its opening quote; returns the index after the closing one. */
function readDouble(
  src: string,
  start: number,
  env: Readonly<Record<string, string>>,
  emit: (s: string) => void,
): number {
  let i = start;
  let buf = '';
  while (i < src.length) {
    const c = src[i]!;
    if (c === '"') {
      emit(buf);
      return i + 1;
    }
    if (c === '\\' && i + 1 < src.length && '$`"\\\n'.includes(src[i + 1]!)) {
      if (src[i + 1] !== '\n') buf += src[i + 1];
      i += 2;
    } else if (c === '$' || c === '`') {
      const [value, next] = expand(src, i, env);
      buf += value;
      i = next;
    } else {
      buf += c;
      i++;
    }
  }
  throw new ShellSyntaxError('unterminated quoted string');
}

/** Expands the `$...` or backquote form at `i`; returns the value and the index after it. */
function expand(src: string, i: number, env: Readonly<Record<string, string>>): [string, number] {
  if (src[i] === '`') {
    const end = src.indexOf('`', i + 1);
    if (end < 0) throw new ShellSyntaxError('unterminated command substitution');
    return ['', end + 1];
  }
  const n = src[i + 1];
  if (n === '(') {
    let depth = 0;
    for (let j = i + 1; j < src.length; j++) {
      if (src[j] === '(') depth++;
      else if (src[j] === ')' && --depth === 0) return ['', j + 1];
    }
    throw new ShellSyntaxError('unterminated command substitution');
  }
  if (n === '{') {
    const end = src.indexOf('}', i + 2);
    if (end < 0) throw new ShellSyntaxError('missing }');
    const body = src.slice(i + 2, end);
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::?-(.*))?$/.exec(body);
    if (!m) return ['', end + 1];
    const value = env[m[1]!];
    return [value === undefined || (value === '' && body.includes(':-')) ? (m[2] ?? '') : value, end + 1];
  }
  const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i + 1))?.[0];
  if (name) return [env[name] ?? '', i + 1 + name.length];
  if (n === '?') return ['0', i + 2];
  if (n === '$') return ['1', i + 2];
  if (n === '#') return ['0', i + 2];
  if (n !== undefined && /[0-9@*!-]/.test(n)) return [n === '0' ? 'sh' : '', i + 2];
  return ['$', i + 1];
}

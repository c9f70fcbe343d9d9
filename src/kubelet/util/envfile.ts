/**
 * The env file format of `fileKeyRef` (EnvFiles; kubelet: pkg/kubelet/util/env ParseEnv), read for one key.
 * Pure: the caller reads the file.
 *
 * The format is a strict subset of what a POSIX shell sources: one `NAME='value'` per statement, the value in
 * single quotes taken literally (no `$` expansion, no escapes) and allowed to span lines; blank lines and lines
 * starting with `#` (after leading blanks) are skipped, and after the closing quote only blanks and a `#`
 * comment may follow. `NAME= 'x'` (a blank after `=`) sets NAME to the empty string, as the shell does.
 *
 * Lines are scanned as Go's bufio.Scanner does: split at `\n`, a `\r` before it dropped, and a line of
 * 64 KiB or more is an error. The first statement naming the key decides; statements after it are not read,
 * so a malformed line after the key goes unnoticed, one before it fails the lookup.
 */

/** A line this long (bytes, without its newline) or longer stops Go's bufio.Scanner: bufio.MaxScanTokenSize. */
const MAX_LINE_BYTES = 64 * 1024;

/** The key's value, '' when the file does not set it (or sets it empty); or why the file is malformed. */
export type EnvFileLookup = { ok: true; value: string } | { ok: false; error: string };

function splitLines(content: string): string[] {
  if (content === '') return [];
  const lines = content.split('\n');
  // A final newline ends the last line; it starts none.
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

function trimLeftBlanks(s: string): string {
  return s.replace(/^[ \t]+/, '');
}

/** The value of `key` in an env file's content (see the module comment for the format). */
export function lookupEnvFile(content: string, key: string): EnvFileLookup {
  const lines = splitLines(content);
  const fail = (error: string): EnvFileLookup => ({ ok: false, error });
  for (let i = 0; i < lines.length; i++) {
    const lineNum = i + 1;
    if (Buffer.byteLength(lines[i]!) >= MAX_LINE_BYTES) return fail('bufio.Scanner: token too long');
    const line = trimLeftBlanks(lines[i]!);
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) return fail(`invalid environment variable format at line ${lineNum}: missing '='`);
    const namePart = line.slice(0, eq);
    const name = namePart.replace(/[ \t]+$/, '');
    if (name === '')
      return fail(`invalid environment variable format at line ${lineNum}: empty variable name`);
    if (name !== namePart) {
      return fail(
        `invalid environment variable format at line ${lineNum}: whitespace before '=' is not allowed`,
      );
    }
    const valuePart = line.slice(eq + 1);
    const trimmed = trimLeftBlanks(valuePart);
    if (trimmed !== valuePart) {
      // `NAME= word`: NAME is set empty for the command `word`, as a shell reads it.
      if (name === key) return { ok: true, value: '' };
      continue;
    }
    if (!trimmed.startsWith("'")) {
      return fail(
        `invalid environment variable format at line ${lineNum}: value must be enclosed in single quotes`,
      );
    }
    const startLine = lineNum;
    let rest = trimmed.slice(1);
    let value = '';
    for (;;) {
      const close = rest.indexOf("'");
      if (close >= 0) {
        value += rest.slice(0, close);
        const after = trimLeftBlanks(rest.slice(close + 1));
        if (after !== '' && !after.startsWith('#')) {
          return fail(
            `invalid environment variable format at line ${i + 1}: unexpected content after closing quote`,
          );
        }
        if (name === key) return { ok: true, value };
        break;
      }
      value += `${rest}\n`;
      i++;
      if (i >= lines.length) {
        return fail(
          `invalid environment variable format starting at line ${startLine}: unclosed single quote`,
        );
      }
      if (Buffer.byteLength(lines[i]!) >= MAX_LINE_BYTES) return fail('bufio.Scanner: token too long');
      rest = lines[i]!;
    }
  }
  return { ok: true, value: '' };
}

import { expect } from 'chai';
import { lookupEnvFile } from '../../../../src/kubelet/util/envfile.js';

describe('envfile: lookupEnvFile (kubelet util/env ParseEnv)', () => {
  const value = (content: string, key: string) => lookupEnvFile(content, key);
  const ok = (v: string) => ({ ok: true, value: v });

  const found: [string, string, string, string][] = [
    ['leading blanks are skipped', "   A='1'\n\t\tB='2'\nC='3'\n", 'B', '2'],
    ['blank and comment lines are skipped', "# c\n\nA='x'\n   # c2\nB='y'\n", 'B', 'y'],
    ['an absent key is the empty string', "A='x'\n", 'Z', ''],
    ['a # inside the quotes is content', "A='x#y'\n", 'A', 'x#y'],
    ['blanks inside the quotes are kept', "A='   x y   '\n", 'A', '   x y   '],
    ['an empty value', "A=''\n", 'A', ''],
    ['= inside the value', "A='x=y=z'\n", 'A', 'x=y=z'],
    ['a comment after the closing quote', "A='x' # note\nB='y'\n", 'B', 'y'],
    ['no expansion of $NAME, ${NAME} or $(cmd)', "A='$B-${C}_$(d)'\n", 'A', '$B-${C}_$(d)'],
    ['no escapes: a backslash is a character', "A='x\\ny'\n", 'A', 'x\\ny'],
    ['a value spanning lines keeps its newlines', "A='one\ntwo\n# three'\nB='z'\n", 'A', 'one\ntwo\n# three'],
    ['CRLF line ends are dropped', "A='x'\r\nB='y'\r\n", 'B', 'y'],
    ['no final newline', "A='x'", 'A', 'x'],
    ['a blank after = sets the name empty (as sh does)', "A= 'x'\n", 'A', ''],
    ['a blank after = for another name is skipped', "A= 'x'\nB='y'\n", 'B', 'y'],
    ['the first statement of the key wins', "A='1'\nA='2'\n", 'A', '1'],
    ['what follows the key is not read', "A='1'\nnot a statement\n", 'A', '1'],
    ['an empty file', '', 'A', ''],
  ];
  for (const [name, content, key, want] of found) {
    it(name, () => expect(value(content, key)).to.deep.equal(ok(want)));
  }

  const malformed: [string, string, string, RegExp][] = [
    ['a blank before =', "A ='x'\nB='y'\n", 'B', /at line 1: whitespace before '=' is not allowed/],
    ['no =', "A='x'\nnothing\n", 'B', /at line 2: missing '='/],
    ['an empty name', "='x'\n", 'B', /at line 1: empty variable name/],
    ['an unquoted value', "A='x'\nB=y\n", 'B', /at line 2: value must be enclosed in single quotes/],
    ['a double-quoted value', 'B="y"\n', 'B', /value must be enclosed in single quotes/],
    ['two adjacent quoted strings', "A='x''y'", 'A', /at line 1: unexpected content after closing quote/],
    ['content after the closing quote', "A='x' y\n", 'A', /unexpected content after closing quote/],
    ['an unclosed quote', "A='x'\nB='y\nC='z'\n", 'C', /at line 3: unexpected content after closing quote/],
    ['an unclosed quote at the end', "A='x\ny\n", 'B', /starting at line 1: unclosed single quote/],
    ['a line of 64 KiB', `A='${'x'.repeat(65_536)}'\n`, 'A', /token too long/],
  ];
  for (const [name, content, key, error] of malformed) {
    it(`fails on ${name}`, () => {
      const r = value(content, key);
      expect(r.ok, name).to.equal(false);
      expect(r.ok ? '' : r.error).to.match(error);
    });
  }

  it('takes a line just under 64 KiB', () => {
    const long = 'x'.repeat(65_535 - "A=''".length);
    expect(value(`A='${long}'\n`, 'A')).to.deep.equal(ok(long));
  });
});

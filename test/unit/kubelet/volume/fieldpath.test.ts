import { expect } from 'chai';
import type { ObjectMeta } from '../../../../src/api/core.js';
import {
  extractFieldPathAsString,
  formatMap,
  isQualifiedName,
  splitMaybeSubscriptedPath,
} from '../../../../src/kubelet/volume/fieldpath.js';
import { goQuote } from '../../../../src/util/goquote.js';

describe('fieldpath: goQuote (Go strconv.Quote)', () => {
  const cases: [string, string][] = [
    ['', '""'],
    ['plain value', '"plain value"'],
    ['say "hi"', '"say \\"hi\\""'],
    ['back\\slash', '"back\\\\slash"'],
    ['a\nb\tc\rd', '"a\\nb\\tc\\rd"'],
    ['\x07\b\f\v', '"\\a\\b\\f\\v"'],
    ['\x00\x1b\x7f', '"\\x00\\x1b\\x7f"'],
    ['héllo wörld ✓ 日本', '"héllo wörld ✓ 日本"'],
    ['emoji 😀', '"emoji 😀"'],
    ['nbsp\u00a0and\u2028sep', '"nbsp\\u00a0and\\u2028sep"'],
    ['soft\u00adhyphen', '"soft\\u00adhyphen"'],
    ['\u{e0001}tag', '"\\U000e0001tag"'],
    ['lone \ud800 surrogate', '"lone \ufffd surrogate"'],
    ['{"json": [1, 2]}', '"{\\"json\\": [1, 2]}"'],
  ];
  for (const [input, want] of cases) {
    it(`${JSON.stringify(input)} -> ${want}`, () => expect(goQuote(input)).to.equal(want));
  }
});

describe('fieldpath: formatMap', () => {
  it('prints sorted key="value" lines with Go quoting and no trailing newline', () => {
    expect(formatMap({ tier: 'front', app: 'web', 'kubernetes.io/note': 'a "quoted"\nvalue' })).to.equal(
      'app="web"\nkubernetes.io/note="a \\"quoted\\"\\nvalue"\ntier="front"',
    );
  });

  it('is empty for an empty or absent map', () => {
    expect(formatMap({})).to.equal('');
    expect(formatMap(undefined)).to.equal('');
  });

  it('sorts by UTF-8 bytes as Go does (an astral character after a BMP one)', () => {
    expect(formatMap({ '😀': '1', '～': '2', a: '3' })).to.equal('a="3"\n～="2"\n😀="1"');
  });
});

describe('fieldpath: splitMaybeSubscriptedPath', () => {
  const cases: [string, { path: string; subscript: string } | undefined][] = [
    ["metadata.annotations['myKey']", { path: 'metadata.annotations', subscript: 'myKey' }],
    ["metadata.annotations['a[b]c']", { path: 'metadata.annotations', subscript: 'a[b]c' }],
    ["metadata.labels['']", { path: 'metadata.labels', subscript: '' }],
    ['metadata.labels', undefined],
    ["['x']", undefined],
    ["metadata.labels'x']", undefined],
  ];
  for (const [input, want] of cases) {
    it(input, () => expect(splitMaybeSubscriptedPath(input)).to.deep.equal(want));
  }
});

describe('fieldpath: isQualifiedName', () => {
  it('accepts names with and without a DNS prefix', () => {
    for (const ok of ['app', 'MyName', 'my.name', '123-abc', 'example.com/MyName', 'a'.repeat(63)]) {
      expect(isQualifiedName(ok), ok).to.deep.equal([]);
    }
  });

  it('explains what is wrong in apimachinery words', () => {
    const nameRule =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    expect(isQualifiedName('-bad')).to.deep.equal([nameRule]);
    expect(isQualifiedName('')).to.deep.equal(['name part must be non-empty', nameRule]);
    expect(isQualifiedName('a'.repeat(64))).to.deep.equal(['name part must be no more than 63 characters']);
    expect(isQualifiedName('/x')).to.deep.equal(['prefix part must be non-empty']);
    expect(isQualifiedName('a/b/c')[0]).to.match(
      /^a qualified name must consist of .* \(e\.g\. 'example\.com\/MyName'\)$/,
    );
    expect(isQualifiedName('Bad.Prefix/x')[0]).to.match(
      /^prefix part a lowercase RFC 1123 subdomain must consist/,
    );
  });
});

describe('fieldpath: extractFieldPathAsString', () => {
  const meta: ObjectMeta = {
    name: 'web-0',
    namespace: 'prod',
    uid: '1b2c',
    labels: { app: 'web', 'example.com/Tier': 'front' },
    annotations: { 'build.sha': 'abc123', note: 'multi\nline' },
  };
  const cases: [string, string | { error: string }][] = [
    ['metadata.name', 'web-0'],
    ['metadata.namespace', 'prod'],
    ['metadata.uid', '1b2c'],
    ['metadata.labels', 'app="web"\nexample.com/Tier="front"'],
    ['metadata.annotations', 'build.sha="abc123"\nnote="multi\\nline"'],
    ["metadata.labels['app']", 'web'],
    ["metadata.labels['example.com/Tier']", 'front'],
    ["metadata.labels['missing']", ''],
    ["metadata.annotations['note']", 'multi\nline'],
    ["metadata.annotations['Build.SHA']", ''],
    ['spec.nodeName', { error: 'unsupported fieldPath: spec.nodeName' }],
    ['status.podIP', { error: 'unsupported fieldPath: status.podIP' }],
    ['spec.serviceAccountName', { error: 'unsupported fieldPath: spec.serviceAccountName' }],
    ["metadata.name['x']", { error: 'fieldPath "metadata.name[\'x\']" does not support subscript' }],
    [
      "metadata.labels['-x']",
      { error: "invalid key subscript in metadata.labels['-x']: name part must consist" },
    ],
  ];
  for (const [path, want] of cases) {
    it(`${path}`, () => {
      const r = extractFieldPathAsString(meta, path);
      if (typeof want === 'string') expect(r).to.deep.equal({ ok: true, value: want });
      else expect(!r.ok && r.message).to.satisfy((m: string) => m.startsWith(want.error));
    });
  }

  it('an annotation subscript is validated lower-cased, a label subscript as written', () => {
    expect(extractFieldPathAsString(meta, "metadata.annotations['Example.COM/x']").ok).to.equal(true);
    expect(extractFieldPathAsString(meta, "metadata.labels['Example.COM/x']").ok).to.equal(false);
  });
});

import { expect } from 'chai';
import { withoutManagedFields as cutBytes } from '../../../src/kube/managedfields.js';

/** The cut on the text's UTF-8 bytes, decoded again (the text itself when nothing was cut). */
function withoutManagedFields(text: string): string {
  const bytes = Buffer.from(text);
  const cut = cutBytes(bytes);
  return cut === bytes ? text : cut.toString('utf8');
}

/** The object as JSON.parse would give it, every metadata.managedFields deleted afterwards. */
function parsedThenStripped(text: string): unknown {
  const strip = (o: { metadata?: Record<string, unknown> } | undefined): void => {
    if (o?.metadata) delete o.metadata.managedFields;
  };
  const v = JSON.parse(text) as { object?: never; items?: never[]; metadata?: Record<string, unknown> };
  strip(v);
  strip(v.object);
  for (const item of v.items ?? []) strip(item);
  return v;
}

const managers = [
  {
    manager: 'kubelet-operator',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-27T04:51:18Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:status': { 'f:conditions': { '.': {}, 'k:{"type":"Ready"}': { 'f:status': {} } } } },
    subresource: 'status',
  },
];

describe('withoutManagedFields', () => {
  it('cuts a pod’s managedFields (the last member of its metadata) and nothing else', () => {
    const pod = {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { a: 'b' }, managedFields: managers },
      spec: { containers: [{ name: 'c', image: 'i', args: ['[', ']', '{', '}'] }] },
      status: { phase: 'Running' },
    };
    const text = JSON.stringify(pod);
    const cut = withoutManagedFields(text);
    expect(cut.length).to.be.lessThan(text.length);
    expect(cut).not.to.include('managedFields');
    expect(JSON.parse(cut)).to.deep.equal(parsedThenStripped(text));
  });

  it('cuts every item of a list and the object of a watch event', () => {
    const item = (n: number) => ({ metadata: { name: `p${n}`, managedFields: managers }, spec: {} });
    const list = JSON.stringify({
      kind: 'PodList',
      metadata: { resourceVersion: '9' },
      items: [1, 2, 3].map(item),
    });
    expect(JSON.parse(withoutManagedFields(list))).to.deep.equal(parsedThenStripped(list));
    expect(withoutManagedFields(list)).not.to.include('managedFields');
    const event = JSON.stringify({ type: 'MODIFIED', object: item(4) });
    expect(JSON.parse(withoutManagedFields(event))).to.deep.equal(parsedThenStripped(event));
  });

  it('leaves the pattern alone inside strings, and a member that does not end its object', () => {
    const tricky = {
      metadata: {
        name: 'p',
        annotations: {
          a: ',"managedFields":[1]}',
          b: '\\",\\"managedFields\\":[\\"',
          c: 'x\\',
        },
        managedFields: [{ manager: 'm"]},"spec":{', fieldsV1: { 'f:x': {} } }],
      },
      // A user-keyed member that is not last in its object stays (only a member that ends one is cut).
      data: { managedFields: ['kept'], other: 1 },
    };
    const text = JSON.stringify(tricky);
    const got = JSON.parse(withoutManagedFields(text)) as typeof tricky;
    expect(got.metadata.annotations).to.deep.equal(tricky.metadata.annotations);
    expect(got.metadata).not.to.have.property('managedFields');
    expect(got.data).to.deep.equal(tricky.data);
  });

  it('returns the text itself when there is nothing to cut or the JSON is cut short', () => {
    const plain = JSON.stringify({ metadata: { name: 'p' } });
    expect(withoutManagedFields(plain)).to.equal(plain);
    const short = '{"metadata":{"name":"p","managedFields":[{"manager":"m","x":"]';
    expect(withoutManagedFields(short)).to.equal(short);
  });

  it('agrees with parse-then-delete on random metadata (strings with quotes, backslashes and brackets)', () => {
    let seed = 17;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ['a', '"', '\\', '[', ']', '{', '}', ',', ':', 'managedFields', '\n', 'ü', '€', '😀'];
    const str = (): string => Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      const k = rnd(depth > 2 ? 2 : 4);
      if (k === 0) return str();
      if (k === 1) return rnd(1000);
      if (k === 2) return Array.from({ length: rnd(4) }, () => value(depth + 1));
      // Outside metadata no key is managedFields: a user-keyed map of arrays is what the cut does not suit.
      const key = (): string => str().replace(/^managedFields$/, 'x');
      return Object.fromEntries(Array.from({ length: rnd(4) }, () => [key(), value(depth + 1)]));
    };
    for (let i = 0; i < 300; i++) {
      const metadata: Record<string, unknown> = { name: str(), annotations: { [str()]: str() } };
      if (rnd(4) > 0) metadata.managedFields = Array.from({ length: 1 + rnd(3) }, () => value(1));
      const text = JSON.stringify({ kind: str(), metadata, spec: value(0), status: value(0) });
      expect(JSON.parse(withoutManagedFields(text)), text).to.deep.equal(parsedThenStripped(text));
    }
  });
});

import { expect } from 'chai';
import { shareUnchanged } from '../../../src/kube/structshare.js';

const parse = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('shareUnchanged', () => {
  const v1 = {
    metadata: { name: 'p', resourceVersion: '1', labels: { app: 'a' } },
    spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }], nodeName: 'n' },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
  };

  it('keeps the earlier instance of every subtree that did not change', () => {
    const prev = parse(v1);
    const next = parse({
      ...v1,
      metadata: { ...v1.metadata, resourceVersion: '2' },
      status: { phase: 'Running', conditions: [...v1.status.conditions, { type: 'Ready', status: 'True' }] },
    });
    const got = shareUnchanged(prev, next);
    expect(got).to.equal(next);
    expect(got.spec).to.equal(prev.spec);
    expect(got.metadata).to.not.equal(prev.metadata);
    expect(got.metadata.labels).to.equal(prev.metadata.labels);
    expect(got.status.conditions).to.not.equal(prev.status.conditions);
    expect(got.status.conditions[0]).to.equal(prev.status.conditions[0]);
    expect(got).to.deep.equal({
      ...v1,
      metadata: { ...v1.metadata, resourceVersion: '2' },
      status: { phase: 'Running', conditions: [...v1.status.conditions, { type: 'Ready', status: 'True' }] },
    });
  });

  it('returns the earlier object when nothing differs', () => {
    const prev = parse(v1);
    expect(shareUnchanged(prev, parse(v1))).to.equal(prev);
  });

  it('never shares across a change of shape, length or key set', () => {
    const prev = parse(v1);
    const fewer = parse({ ...v1, metadata: { name: 'p', resourceVersion: '1' } });
    expect(shareUnchanged(prev, fewer).metadata).to.deep.equal({ name: 'p', resourceVersion: '1' });
    expect(shareUnchanged(prev, fewer).metadata).to.not.equal(prev.metadata);
    const more = parse({ ...v1, metadata: { ...v1.metadata, annotations: { a: 'b' } } });
    expect(shareUnchanged(parse(v1), more).metadata).to.have.property('annotations');
    const shorter = parse({ ...v1, spec: { ...v1.spec, containers: [] } });
    expect(shareUnchanged(parse(v1), shorter).spec.containers).to.deep.equal([]);
    const typed = parse({ ...v1, status: { phase: 'Pending', conditions: null } });
    expect(shareUnchanged(parse(v1), typed as unknown as typeof v1).status.conditions).to.equal(null);
    const arrToObj = { a: [1, 2] } as Record<string, unknown>;
    expect(shareUnchanged(arrToObj, { a: { 0: 1, 1: 2 } } as Record<string, unknown>).a).to.deep.equal({
      0: 1,
      1: 2,
    });
  });

  it('distinguishes values that are equal only loosely', () => {
    const got = shareUnchanged<Record<string, unknown>>({ a: 0, b: '', c: false }, { a: '', b: 0, c: null });
    expect(got).to.deep.equal({ a: '', b: 0, c: null });
  });
});

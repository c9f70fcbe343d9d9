import { expect } from 'chai';
import type { VirtualNode } from '../../../src/api/virtualnode.js';
import { needsSync } from '../../../src/operator/predicates.js';

const vn = (
  over: Partial<VirtualNode['metadata']> = {},
  spec: unknown = { runtime: { type: 'sim' } },
): VirtualNode => ({
  apiVersion: 'kubelet-operator.dev/v1alpha1',
  kind: 'VirtualNode',
  metadata: { name: 'vn-a', generation: 1, resourceVersion: '10', finalizers: ['f'], ...over },
  spec,
  status: { nodeName: 'vn-a' },
});

describe('operator: which VirtualNode updates need a sync', () => {
  it('not a change of the status alone (our own status writes)', () => {
    const next = { ...vn({ resourceVersion: '11' }), status: { nodeName: 'vn-a', observedGeneration: 1 } };
    expect(needsSync(vn(), next)).to.equal(false);
  });

  it('a change of the spec, labels, finalizers or the deletion', () => {
    expect(needsSync(vn(), vn({ generation: 2 }, { runtime: { type: 'cri' } }))).to.equal(true);
    expect(needsSync(vn(), vn({ labels: { a: 'b' } }))).to.equal(true);
    expect(needsSync(vn(), vn({ finalizers: [] }))).to.equal(true);
    expect(needsSync(vn(), vn({ deletionTimestamp: '2026-01-01T00:00:00Z' }))).to.equal(true);
  });
});

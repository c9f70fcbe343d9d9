import { expect } from 'chai';
import { iterateMasks, NUMAMask } from '../../../../src/kubelet/cm/topologymanager/bitmask.js';
import {
  mergeByPolicy,
  NUMAInfo,
  topologyPolicyOptions,
  type ProviderHints,
  type TopologyHint,
  type TopologyPolicyName,
} from '../../../../src/kubelet/cm/topologymanager/policy.js';

const M = (...n: number[]): NUMAMask => NUMAMask.of(...n);
const h = (pref: boolean, ...n: number[]): TopologyHint => ({
  affinity: n.length ? M(...n) : undefined,
  preferred: pref,
});
const show = (x: TopologyHint): string =>
  `${x.affinity ? x.affinity.bits().join(',') : 'any'}${x.preferred ? '' : ' (not preferred)'}`;

describe('topologymanager/bitmask', () => {
  it('iterates every subset, narrowest first', () => {
    const seen: string[] = [];
    iterateMasks([0, 1, 2], (m) => seen.push(m.bits().join('')));
    expect(seen).to.deep.equal(['0', '1', '2', '01', '02', '12', '012']);
  });
  it('orders by count, then value', () => {
    expect(M(1).isNarrowerThan(M(0, 1))).to.equal(true);
    expect(M(0, 2).isNarrowerThan(M(1, 2))).to.equal(true);
    expect(M(0, 1).toString()).to.equal('11');
    expect(M(0).toString()).to.equal('01');
  });
});

describe('topologymanager/policy merge', () => {
  const two = new NUMAInfo([0, 1], new Map());
  const opts = topologyPolicyOptions({});
  interface Case {
    name: string;
    providers: ProviderHints[];
    want: Partial<Record<Exclude<TopologyPolicyName, 'none'>, [string, boolean]>>;
  }
  const cases: Case[] = [
    {
      name: 'no providers: any NUMA node, preferred',
      providers: [],
      want: { 'best-effort': ['0,1', true], restricted: ['0,1', true], 'single-numa-node': ['any', true] },
    },
    {
      name: 'a provider without preference',
      providers: [undefined],
      want: { 'best-effort': ['0,1', true], 'single-numa-node': ['any', true] },
    },
    {
      name: 'one provider preferring NUMA 0',
      providers: [{ cpu: [h(true, 0), h(true, 1), h(false, 0, 1)] }],
      want: { 'best-effort': ['0', true], restricted: ['0', true], 'single-numa-node': ['0', true] },
    },
    {
      name: 'two providers agreeing on NUMA 1',
      providers: [{ cpu: [h(true, 0), h(true, 1)] }, { 'example.com/gpu': [h(true, 1)] }],
      want: { 'best-effort': ['1', true], restricted: ['1', true], 'single-numa-node': ['1', true] },
    },
    {
      // Not preferred either way: the narrowest mask as wide as the widest provider's narrowest hint wins.
      name: 'two providers preferring different NUMA nodes',
      providers: [{ cpu: [h(true, 0), h(false, 0, 1)] }, { 'example.com/gpu': [h(true, 1), h(false, 0, 1)] }],
      want: { 'best-effort': ['0', false], restricted: ['0', false], 'single-numa-node': ['any', false] },
    },
    {
      name: 'a resource with no possible placement',
      providers: [{ cpu: [] }],
      want: { 'best-effort': ['0,1', false], restricted: ['0,1', false], 'single-numa-node': ['any', false] },
    },
    {
      name: 'only a two-node hint is possible',
      providers: [{ cpu: [h(true, 0, 1)] }],
      want: { 'best-effort': ['0,1', true], restricted: ['0,1', true], 'single-numa-node': ['any', false] },
    },
  ];
  for (const c of cases) {
    for (const [policy, [aff, admit]] of Object.entries(c.want)) {
      it(`${policy}: ${c.name}`, () => {
        const r = mergeByPolicy(policy as Exclude<TopologyPolicyName, 'none'>, two, c.providers, opts);
        expect(r.hint.affinity ? r.hint.affinity.bits().join(',') : 'any').to.equal(aff, show(r.hint));
        expect(r.admit).to.equal(policy === 'best-effort' ? true : admit);
      });
    }
  }

  it('prefer-closest-numa-nodes picks the closer pair of as many nodes; without it, the lower one', () => {
    const distances = new Map([
      [0, [10, 21, 11, 21]],
      [1, [21, 10, 21, 11]],
      [2, [11, 21, 10, 21]],
      [3, [21, 11, 21, 10]],
    ]);
    const four = new NUMAInfo([0, 1, 2, 3], distances);
    const providers: ProviderHints[] = [{ cpu: [h(true, 0, 1), h(true, 0, 2)] }];
    const closest = mergeByPolicy(
      'best-effort',
      four,
      providers,
      topologyPolicyOptions({ 'prefer-closest-numa-nodes': 'true' }),
    );
    expect(closest.hint.affinity!.bits()).to.deep.equal([0, 2]);
    const narrowest = mergeByPolicy('best-effort', four, providers, opts);
    expect(narrowest.hint.affinity!.bits()).to.deep.equal([0, 1]);
  });
});

describe('topologymanager/policy options', () => {
  it('defaults max-allowable-numa-nodes to 8', () => {
    expect(topologyPolicyOptions({})).to.deep.equal({ preferClosestNUMA: false, maxAllowableNUMANodes: 8 });
  });
  const bad: [Record<string, string>, string][] = [
    [{ 'no-such-option': 'true' }, 'unknown Topology Manager Policy option: "no-such-option"'],
    [{ 'prefer-closest-numa-nodes': 'yes' }, 'bad value for option "prefer-closest-numa-nodes"'],
    [
      { 'max-allowable-numa-nodes': '4' },
      'the minimum value of "max-allowable-numa-nodes" should not be less than 8',
    ],
    [
      { 'max-allowable-numa-nodes': 'x' },
      'unable to convert policy option to integer "max-allowable-numa-nodes"',
    ],
  ];
  for (const [raw, msg] of bad) {
    it(`refuses ${JSON.stringify(raw)}`, () => {
      expect(() => topologyPolicyOptions(raw)).to.throw(msg);
    });
  }
  it('accepts a larger max-allowable-numa-nodes', () => {
    expect(topologyPolicyOptions({ 'max-allowable-numa-nodes': '16' }).maxAllowableNUMANodes).to.equal(16);
  });
});

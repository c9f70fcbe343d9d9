import { expect } from 'chai';
import {
  takeByTopologyNUMADistributed,
  takeByTopologyNUMAPacked,
} from '../../../../../src/kubelet/cm/cpumanager/cpu_assignment.js';
import { CPUSet } from '../../../../../src/kubelet/cm/cpumanager/cpuset.js';
import type { CPUTopology } from '../../../../../src/kubelet/cm/cpumanager/topology.js';
import {
  dualSocketHT,
  dualSocketMultiNumaPerSocketHT,
  singleSocketHT,
  uncoreDualSocketNoSMT,
  uncoreSingleSocketSMT,
} from './topologies.js';

const P = CPUSet.parse;

describe('cpumanager/cpuset', () => {
  const cases: [string, string][] = [
    ['', ''],
    ['0', '0'],
    ['0-1', '0-1'],
    ['3,1,2', '1-3'],
    ['0-3,8,10-11', '0-3,8,10-11'],
  ];
  for (const [input, out] of cases) {
    it(`parses ${JSON.stringify(input)} and writes ${JSON.stringify(out)}`, () => {
      expect(P(input).toString()).to.equal(out);
    });
  }
  for (const bad of ['a', '3-1', '1,,2', '-1']) {
    it(`refuses ${JSON.stringify(bad)} with a clear error`, () => {
      expect(() => P(bad)).to.throw(/invalid cpuset/);
    });
  }
  it('computes union, difference, intersection', () => {
    expect(P('0-3').union(P('6')).toString()).to.equal('0-3,6');
    expect(P('0-5').difference(P('2-3')).toString()).to.equal('0-1,4-5');
    expect(P('0-5').intersection(P('4-9')).toString()).to.equal('4-5');
  });
});

interface Case {
  name: string;
  topo: CPUTopology;
  available: string;
  n: number;
  want: string;
  uncore?: boolean;
  spread?: boolean;
}

describe('cpumanager/cpu_assignment takeByTopologyNUMAPacked', () => {
  const cases: Case[] = [
    { name: 'one CPU of a single socket with HT', topo: singleSocketHT, available: '0-7', n: 1, want: '0' },
    { name: 'a whole core first', topo: singleSocketHT, available: '0-7', n: 2, want: '0,4' },
    { name: 'the whole socket', topo: singleSocketHT, available: '0-7', n: 8, want: '0-7' },
    {
      name: 'a lone thread of a used core before breaking a free core',
      topo: singleSocketHT,
      available: '1-7',
      n: 1,
      want: '4',
    },
    {
      name: 'one CPU from dual socket HT: the partly used socket 0',
      topo: dualSocketHT,
      available: '1-5,7-11',
      n: 1,
      want: '2',
    },
    {
      name: 'a whole socket of dual socket HT (socket 0, sorted first)',
      topo: dualSocketHT,
      available: '0-11',
      n: 6,
      want: '0,2,4,6,8,10',
    },
    {
      name: '4 full cores: the first NUMA node whole and one core of the second',
      topo: dualSocketHT,
      available: '0-11',
      n: 8,
      want: '0,6,2,8,4,10,1,7',
    },
    {
      name: '32 full cores: three NUMA nodes whole, 2 cores of the fourth',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-79',
      n: 64,
      want: '0-29,40-69,30,31,70,71',
    },
    {
      name: 'prefer-align-cpus-by-uncorecache: the first uncore cache',
      topo: uncoreDualSocketNoSMT,
      available: '0-15',
      n: 4,
      want: '0-3',
      uncore: true,
    },
    {
      name: 'prefer-align-cpus-by-uncorecache: the free part of the first socket',
      topo: uncoreDualSocketNoSMT,
      available: '2-15',
      n: 6,
      want: '2-7',
      uncore: true,
    },
    {
      name: 'prefer-align-cpus-by-uncorecache with SMT: the best uncore cache group',
      topo: uncoreSingleSocketSMT,
      available: '2-3,10-11,4-7,12-15',
      n: 6,
      want: '4-6,12-14',
      uncore: true,
    },
    {
      name: 'prefer-align-cpus-by-uncorecache with SMT over two caches',
      topo: uncoreSingleSocketSMT,
      available: '1-7,9-15',
      n: 10,
      want: '4-7,12-15,1,9',
      uncore: true,
    },
    {
      name: 'prefer-align-cpus-by-uncorecache on dual socket HT',
      topo: dualSocketHT,
      available: '1-5,7-11',
      n: 1,
      want: '1',
      uncore: true,
    },
    {
      name: 'distribute-cpus-across-cores (spread): one thread per core',
      topo: singleSocketHT,
      available: '0-7',
      n: 3,
      want: '0-2',
      spread: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = takeByTopologyNUMAPacked(
        c.topo,
        P(c.available),
        c.n,
        c.spread ? 'spread' : 'packed',
        !!c.uncore,
      );
      expect(got.toString()).to.equal(P(c.want).toString());
    });
  }

  it('refuses more CPUs than are available, saying how many', () => {
    expect(() => takeByTopologyNUMAPacked(singleSocketHT, P('0-3'), 5, 'packed', false)).to.throw(
      'not enough cpus available to satisfy request: requested=5, available=4',
    );
  });
});

describe('cpumanager/cpu_assignment takeByTopologyNUMADistributed', () => {
  const cases: (Case & { group: number })[] = [
    { name: 'one CPU, group 1', topo: dualSocketHT, available: '1-5,7-11', n: 1, group: 1, want: '1' },
    {
      name: 'one CPU, group 2 (falls back to packed)',
      topo: dualSocketHT,
      available: '1-5,7-11',
      n: 1,
      group: 2,
      want: '2',
    },
    {
      name: '13 full cores over the first 2 NUMA nodes',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-79',
      n: 26,
      group: 1,
      want: '0-6,10-16,40-45,50-55',
    },
    {
      name: '13 full cores over the first 2 NUMA nodes, group 2',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-79',
      n: 26,
      group: 2,
      want: '0-6,10-15,40-46,50-55',
    },
    {
      name: '62 CPUs: 15 per NUMA node, one spilling to NUMA 0 and 1',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-79',
      n: 62,
      group: 1,
      want: '0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76',
    },
    {
      name: '62 CPUs, group 2: 14 per NUMA node, 2 spilling to NUMA 0, 1, 2',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-79',
      n: 62,
      group: 2,
      want: '0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76',
    },
    {
      name: '62 CPUs spilling to NUMA 2 and 3 to keep balance',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-8,10-18,20-39,40-48,50-58,60-79',
      n: 62,
      group: 1,
      want: '0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77',
    },
    {
      name: 'the remainder goes to NUMA nodes that can hold it',
      topo: dualSocketMultiNumaPerSocketHT,
      available: '0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76',
      n: 34,
      group: 1,
      want: '0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = takeByTopologyNUMADistributed(c.topo, P(c.available), c.n, c.group, 'packed', false);
      expect(got.toString()).to.equal(P(c.want).toString());
    });
  }
});

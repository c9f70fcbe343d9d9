import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import {
  containerResourceValue,
  convertResourceToString,
  downwardAPIAllocatable,
  findContainerInPod,
  parseContainerResourceName,
} from '../../../src/kubelet/resourcefieldref.js';

describe('resourceFieldRef helpers (pkg/api/v1/resource)', () => {
  it('parses the resources the downward API may name', () => {
    const good = [
      ['limits.cpu', 'limits', 'cpu'],
      ['requests.ephemeral-storage', 'requests', 'ephemeral-storage'],
      ['limits.hugepages-2Mi', 'limits', 'hugepages-2Mi'],
    ] as const;
    for (const [text, kind, name] of good) {
      expect(parseContainerResourceName(text), text).to.deep.equal({ kind, name });
    }
    for (const bad of ['limits.gpu', 'capacity.cpu', 'cpu', 'limitscpu', 'limits.cpu.x', 'limits.']) {
      expect(parseContainerResourceName(bad), bad).to.equal(undefined);
    }
  });

  it('finds regular containers before init containers of the same name', () => {
    const pod: Pod = {
      metadata: {},
      spec: {
        containers: [{ name: 'x', image: 'main' }],
        initContainers: [{ name: 'x', image: 'init' }, { name: 'i' }],
      },
    };
    expect(findContainerInPod(pod, 'x')?.image).to.equal('main');
    expect(findContainerInPod(pod, 'i')?.name).to.equal('i');
    expect(findContainerInPod(pod, 'nope')).to.equal(undefined);
  });

  it('divides rounding up, cpu in thousandths and the rest in units', () => {
    const cases: [string, string | number | undefined, string | number, string][] = [
      ['cpu', '1500m', '1', '2'],
      ['cpu', '1500m', '1m', '1500'],
      ['cpu', '0.1', '1m', '100'],
      ['memory', '64Mi', '1Mi', '64'],
      ['memory', '1Gi', '1G', '2'],
      ['memory', undefined, '1', '0'],
      ['memory', '1Ki', 0, '0'],
      ['ephemeral-storage', 1000, '1k', '1'],
    ];
    for (const [name, q, d, want] of cases)
      expect(convertResourceToString(name, q, d), `${name} ${q}/${d}`).to.equal(want);
  });
});

describe('containerResourceValue', () => {
  const c = {
    name: 'c',
    resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '1250m', memory: '0' } },
  };
  it('treats the zero divisor the API server returns for an unset one as 1, and a zero limit as unset', () => {
    expect(containerResourceValue(c, { kind: 'limits', name: 'cpu' }, '0', undefined)).to.equal('2');
    expect(containerResourceValue(c, { kind: 'requests', name: 'memory' }, 0, undefined)).to.equal(
      '33554432',
    );
    expect(containerResourceValue(c, { kind: 'limits', name: 'memory' }, '1Mi', { memory: '2Gi' })).to.equal(
      '2048',
    );
    expect(containerResourceValue(c, { kind: 'limits', name: 'cpu' }, '1m', { cpu: '4' })).to.equal('1250');
  });
});

describe('downwardAPIAllocatable (kubelet defaultPodLimitsForDownwardAPI)', () => {
  const allocatable = { cpu: '4', memory: '8Gi', 'ephemeral-storage': '10Gi' };
  const podWith = (resources?: Pod['spec']['resources']): Pod => ({
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'c' }], ...(resources ? { resources } : {}) },
  });

  it('pod-level cpu and memory limits stand in for the node allocatable', () => {
    const table: [Pod['spec']['resources'], Record<string, string> | undefined][] = [
      [undefined, allocatable],
      [{ requests: { cpu: '1' } }, allocatable],
      [{ limits: { cpu: '500m' } }, { ...allocatable, cpu: '500m' }],
      [{ limits: { cpu: '500m', memory: '1Gi' } }, { ...allocatable, cpu: '500m', memory: '1Gi' }],
      // A zero pod-level limit is none.
      [{ limits: { cpu: '0', memory: '1Gi' } }, { ...allocatable, memory: '1Gi' }],
    ];
    for (const [resources, want] of table) {
      expect(
        downwardAPIAllocatable(podWith(resources), allocatable),
        JSON.stringify(resources),
      ).to.deep.equal(want);
    }
    // Only where the node reports the resource.
    expect(downwardAPIAllocatable(podWith({ limits: { cpu: '1' } }), { memory: '1Gi' })).to.deep.equal({
      memory: '1Gi',
    });
    expect(downwardAPIAllocatable(podWith({ limits: { cpu: '1' } }), undefined)).to.equal(undefined);
  });

  it('a container without a cpu limit reads the pod-level one through it', () => {
    const p = podWith({ limits: { cpu: '500m' } });
    const value = containerResourceValue(
      p.spec.containers[0]!,
      { kind: 'limits', name: 'cpu' },
      '1m',
      downwardAPIAllocatable(p, allocatable),
    );
    expect(value).to.equal('500');
  });
});

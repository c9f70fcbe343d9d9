import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import type { DownwardAPIVolumeFile } from '../../../../src/api/volumes.js';
import {
  type DownwardAPIInputs,
  makeDownwardAPIPayload,
  resourceFieldValue,
} from '../../../../src/kubelet/volume/downwardapi.js';
import { files, message } from './fixtures.js';

const app: Container = {
  name: 'app',
  resources: {
    requests: { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '1Gi', 'hugepages-2Mi': '4Mi' },
    limits: { cpu: '1500m', memory: '128Mi', 'hugepages-2Mi': '4Mi' },
  },
};
const sidecar: Container = { name: 'sidecar', resources: { limits: { cpu: '0', memory: '0' } } };
const init: Container = { name: 'setup', resources: { requests: { cpu: '2' } } };

const pod: Pod = {
  metadata: {
    name: 'web-0',
    namespace: 'prod',
    uid: 'f00d',
    labels: { app: 'web', zone: 'eu "west"' },
    annotations: { 'kubernetes.io/config.seen': '2026-01-01T00:00:00Z' },
  },
  spec: { nodeName: 'node-a', containers: [app, sidecar], initContainers: [init] },
  status: { podIP: '10.0.0.5', hostIP: '192.168.0.1' },
};

const inputs: DownwardAPIInputs = {
  pod,
  nodeAllocatable: { cpu: '3800m', memory: '7Gi', 'ephemeral-storage': '100Gi' },
};

describe('downwardAPI volume payload (downwardapi.CollectData)', () => {
  it('projects metadata fields, formatting whole maps as sorted key="value" lines', () => {
    const items: DownwardAPIVolumeFile[] = [
      { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
      { path: 'ns', fieldRef: { fieldPath: 'metadata.namespace', apiVersion: 'v1' } },
      { path: 'uid', fieldRef: { fieldPath: 'metadata.uid' } },
      { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
      { path: 'by-key/app', fieldRef: { fieldPath: "metadata.labels['app']" } },
      { path: 'by-key/seen', fieldRef: { fieldPath: "metadata.annotations['kubernetes.io/config.seen']" } },
    ];
    expect(files(makeDownwardAPIPayload({ items }, inputs))).to.deep.equal({
      name: ['web-0', 0o644],
      ns: ['prod', 0o644],
      uid: ['f00d', 0o644],
      labels: ['app="web"\nzone="eu \\"west\\""', 0o644],
      annotations: ['kubernetes.io/config.seen="2026-01-01T00:00:00Z"', 0o644],
      'by-key/app': ['web', 0o644],
      'by-key/seen': ['2026-01-01T00:00:00Z', 0o644],
    });
  });

  it('applies item modes over the defaultMode and cleans item paths', () => {
    const items: DownwardAPIVolumeFile[] = [
      { path: './a//b/', fieldRef: { fieldPath: 'metadata.name' }, mode: 0o400 },
      { path: 'c', fieldRef: { fieldPath: 'metadata.name' } },
    ];
    expect(files(makeDownwardAPIPayload({ items, defaultMode: 0o440 }, inputs))).to.deep.equal({
      'a/b': ['web-0', 0o400],
      c: ['web-0', 0o440],
    });
  });

  it('refuses fields only environment variables may use, naming every failing item', () => {
    const items: DownwardAPIVolumeFile[] = [
      { path: 'node', fieldRef: { fieldPath: 'spec.nodeName' } },
      { path: 'ok', fieldRef: { fieldPath: 'metadata.name' } },
      { path: 'ip', fieldRef: { fieldPath: 'status.podIP' } },
    ];
    const r = makeDownwardAPIPayload({ items }, inputs);
    expect(message(r)).to.equal(
      '[unsupported fieldPath: spec.nodeName, unsupported fieldPath: status.podIP]',
    );
  });

  it('prints one error as is and a repeated error once', () => {
    const one = [{ path: 'x', fieldRef: { fieldPath: 'spec.nodeName' } }];
    expect(message(makeDownwardAPIPayload({ items: one }, inputs))).to.equal(
      'unsupported fieldPath: spec.nodeName',
    );
    const twice = [...one, { path: 'y', fieldRef: { fieldPath: 'spec.nodeName' } }];
    expect(message(makeDownwardAPIPayload({ items: twice }, inputs))).to.equal(
      'unsupported fieldPath: spec.nodeName',
    );
  });
});

describe('downwardAPI volume: resourceFieldRef (ExtractResourceValueByContainerNameAndNodeAllocatable)', () => {
  /** A resourceFieldRef to a container's resource, with an optional divisor. */
  const ref = (containerName: string, resource: string, divisor?: string | number) => ({
    containerName,
    resource,
    ...(divisor !== undefined && { divisor }),
  });
  const cases: [string, ReturnType<typeof ref>, string][] = [
    ['limits.cpu in cores, rounded up', ref('app', 'limits.cpu'), '2'],
    ['limits.cpu in millicores', ref('app', 'limits.cpu', '1m'), '1500'],
    ['requests.cpu rounded up to a core', ref('app', 'requests.cpu'), '1'],
    ['requests.memory in Mi', ref('app', 'requests.memory', '1Mi'), '64'],
    ['limits.memory in bytes', ref('app', 'limits.memory'), '134217728'],
    ['limits.memory in G, rounded up', ref('app', 'limits.memory', '1G'), '1'],
    ['requests.ephemeral-storage in Mi', ref('app', 'requests.ephemeral-storage', '1Mi'), '1024'],
    ['unset limit: node allocatable', ref('app', 'limits.ephemeral-storage', '1Gi'), '100'],
    ['zero limit: node allocatable', ref('sidecar', 'limits.cpu', '1m'), '3800'],
    ['zero memory limit: node allocatable', ref('sidecar', 'limits.memory', '1Gi'), '7'],
    ['unset request stays 0', ref('sidecar', 'requests.memory'), '0'],
    ['zero divisor counts as 1', ref('app', 'limits.cpu', '0'), '2'],
    ['numeric divisor', ref('app', 'requests.memory', 1024), '65536'],
    ['hugepages limit, never defaulted', ref('app', 'limits.hugepages-2Mi', '1Mi'), '4'],
    ['hugepages unset stays 0', ref('sidecar', 'limits.hugepages-1Gi'), '0'],
    ['init containers are found too', ref('setup', 'requests.cpu', '1m'), '2000'],
  ];
  for (const [name, fieldRef, want] of cases) {
    it(name, () =>
      expect(resourceFieldValue(fieldRef, pod, inputs.nodeAllocatable)).to.deep.equal({
        ok: true,
        value: want,
      }),
    );
  }

  it('an unset limit without allocatable for it is 0', () => {
    expect(
      resourceFieldValue({ containerName: 'sidecar', resource: 'limits.cpu' }, pod, undefined),
    ).to.deep.equal({
      ok: true,
      value: '0',
    });
  });

  const failures: [string, { resource: string; containerName?: string }, string][] = [
    ['unknown container', { containerName: 'nope', resource: 'limits.cpu' }, 'container nope not found'],
    ['no container name', { resource: 'limits.cpu' }, 'container  not found'],
    [
      'unsupported resource',
      { containerName: 'app', resource: 'limits.nvidia.com/gpu' },
      'unsupported container resource : limits.nvidia.com/gpu',
    ],
    [
      'not limits or requests',
      { containerName: 'app', resource: 'capacity.cpu' },
      'unsupported container resource : capacity.cpu',
    ],
  ];
  for (const [name, ref, want] of failures) {
    it(`fails: ${name}`, () =>
      expect(resourceFieldValue(ref, pod, inputs.nodeAllocatable)).to.deep.equal({
        ok: false,
        message: want,
      }));
  }

  it('a failing resource item fails the volume with the other items still tried', () => {
    const r = makeDownwardAPIPayload(
      {
        items: [
          { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
          { path: 'bad', resourceFieldRef: { containerName: 'ghost', resource: 'limits.cpu' } },
          { path: 'bad2', fieldRef: { fieldPath: 'status.hostIP' } },
        ],
      },
      inputs,
    );
    expect(message(r)).to.equal('[container ghost not found, unsupported fieldPath: status.hostIP]');
  });

  it('writes resource values as files with modes', () => {
    const r = makeDownwardAPIPayload(
      {
        defaultMode: 0o444,
        items: [
          {
            path: 'cpu_limit',
            resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' },
          },
          {
            path: 'mem_request',
            resourceFieldRef: { containerName: 'app', resource: 'requests.memory', divisor: '1Mi' },
            mode: 0o400,
          },
        ],
      },
      inputs,
    );
    expect(files(r)).to.deep.equal({ cpu_limit: ['1500', 0o444], mem_request: ['64', 0o400] });
  });
});

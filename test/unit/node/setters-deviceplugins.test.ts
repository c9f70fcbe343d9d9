import { expect } from 'chai';
import { machineInfo } from '../../../src/node/setters.js';

const own = { cpu: '4', memory: '16Gi', pods: '110' };
const at = '2026-01-01T00:00:00Z';

describe('node/setters machineInfo with the device manager (kubelet MachineInfo, devicePluginResourceCapacityFunc)', () => {
  const table: [
    string,
    Record<string, string>,
    Parameters<typeof machineInfo>[2],
    Record<string, string>,
    Record<string, string>,
  ][] = [
    [
      'healthy devices in both, unhealthy ones in capacity only',
      {},
      { capacity: { 'example.com/gpu': '3' }, allocatable: { 'example.com/gpu': '2' }, removed: [] },
      { ...own, 'example.com/gpu': '3' },
      { ...own, 'example.com/gpu': '2' },
    ],
    [
      'a removed resource is shown at 0, not dropped',
      { 'example.com/gpu': '3' },
      { capacity: {}, allocatable: {}, removed: ['example.com/gpu'] },
      { ...own, 'example.com/gpu': '0' },
      { ...own, 'example.com/gpu': '0' },
    ],
    [
      'a removed resource that registered again counts again',
      { 'example.com/gpu': '0' },
      {
        capacity: { 'example.com/gpu': '1' },
        allocatable: { 'example.com/gpu': '1' },
        removed: ['example.com/gpu'],
      },
      { ...own, 'example.com/gpu': '1' },
      { ...own, 'example.com/gpu': '1' },
    ],
    [
      "another writer's extended resource stays beside the devices",
      { 'example.com/dongle': '4' },
      { capacity: { 'example.com/gpu': '1' }, allocatable: { 'example.com/gpu': '0' }, removed: [] },
      { ...own, 'example.com/dongle': '4', 'example.com/gpu': '1' },
      { ...own, 'example.com/dongle': '4', 'example.com/gpu': '0' },
    ],
  ];
  for (const [name, onNode, devices, capacity, allocatable] of table)
    it(name, () => {
      const s = machineInfo(own, own, devices)({ capacity: onNode, allocatable: onNode }, at);
      expect(s.capacity).to.deep.equal(capacity);
      expect(s.allocatable).to.deep.equal(allocatable);
    });
});

// NodeSwap (GA in v1.37) as a v1.37 kubelet with `memorySwap.swapBehavior` NoSwap (the default) does it:
// `nodeInfo.swap.capacity` from the host's SwapTotal (cadvisor's MachineInfo.SwapCapacity) when not zero, and
// the container's swap limit where the host has a swap controller (kuberuntime_container_linux.go
// ConfigureNoSwap): memory+swap equal to the memory limit on cgroup v1, `memory.swap.max` 0 on cgroup v2.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import type { Container, Pod } from '../../../src/api/core.js';
import type { NodeStatus } from '../../../src/api/node.js';
import { VirtualNodeSpecSchema } from '../../../src/api/virtualnode.js';
import { configureNoSwap, containerResources } from '../../../src/kubelet/kuberuntime/containerconfig.js';
import { systemInfo, type NodeStatusParams } from '../../../src/node/nodestatus.js';
import { versionInfo } from '../../../src/node/setters.js';
import {
  hostSwapCapacityBytes,
  parseSwapTotal,
  swapControllerOf,
  unifiedCgroupPath,
  type SwapController,
} from '../../../src/node/swap.js';
import type { LinuxContainerResources } from '../../../src/runtime/types.js';
import { resourcesToWire } from '../../../src/runtime/cri/convert.js';
import { NODE_STATUS_PARAMS, nodeStatusOnce } from './fakeapi.js';

const MEMINFO = (swapKB: string) =>
  `MemTotal:        8140224 kB\nMemFree:         1000000 kB\nSwapCached:            0 kB\nSwapTotal:       ${swapKB} kB\nSwapFree:        ${swapKB} kB\n`;

describe('NodeSwap', () => {
  describe('the host swap capacity (cadvisor GetMachineSwapCapacity)', () => {
    const table: [string, string, number | undefined][] = [
      ['no swap', MEMINFO('0'), 0],
      ['2 GiB of swap', MEMINFO('2097152'), 2 * 1024 ** 3],
      ['an odd size, kB to bytes', MEMINFO('1023'), 1023 * 1024],
      ['no SwapTotal line', 'MemTotal: 1 kB\n', undefined],
      ['a SwapTotal not in kB', 'SwapTotal: 12 MB\n', undefined],
      ['an empty file', '', undefined],
    ];
    for (const [what, text, want] of table) it(what, () => expect(parseSwapTotal(text)).to.equal(want));

    it("this host: SwapTotal of its /proc/meminfo, 0 when it has none (this machine's)", () => {
      const want = parseSwapTotal(readFileSync('/proc/meminfo', 'utf8')) ?? 0;
      expect(hostSwapCapacityBytes()).to.equal(want);
    });
  });

  describe('the swap controller (kubelet checkSwapControllerAvailability)', () => {
    it('reads the unified path of /proc/self/cgroup', () => {
      expect(unifiedCgroupPath('0::/system.slice/kubelet.service\n')).to.equal(
        '/system.slice/kubelet.service',
      );
      expect(unifiedCgroupPath('0::/\n')).to.equal('/');
      expect(unifiedCgroupPath('4:memory:/x\n1:name=systemd:/x\n')).to.equal(undefined);
    });

    const table: [string, boolean, string | undefined, string[], SwapController | undefined][] = [
      [
        'v1 with swap accounting',
        false,
        '4:memory:/',
        ['/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'],
        'cgroupv1',
      ],
      ['v1 without (swapaccount=0)', false, '4:memory:/', [], undefined],
      [
        "v2: memory.swap.max in the process's own cgroup",
        true,
        '0::/kubepods/op\n',
        ['/sys/fs/cgroup/kubepods/op/memory.swap.max'],
        'cgroupv2',
      ],
      [
        'v2: the root has no memory.swap.max',
        true,
        '0::/\n',
        ['/sys/fs/cgroup/kubepods/op/memory.swap.max'],
        undefined,
      ],
      ['v2: no swap file in its cgroup', true, '0::/op\n', [], undefined],
      ['v2: /proc/self/cgroup unreadable', true, undefined, ['/sys/fs/cgroup/memory.swap.max'], undefined],
      [
        'v2: a v1 file does not count',
        true,
        '0::/op\n',
        ['/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'],
        undefined,
      ],
    ];
    for (const [what, cgroup2, procSelfCgroup, files, want] of table) {
      it(what, () => {
        const exists = (p: string) => files.includes(p);
        expect(swapControllerOf({ cgroup2, procSelfCgroup, exists })).to.equal(want);
      });
    }
  });

  describe('container config with NoSwap (ConfigureNoSwap)', () => {
    const base = (memoryLimitInBytes?: number): LinuxContainerResources => ({
      cpuShares: 2,
      cpuPeriod: 100000,
      cpuQuota: 0,
      ...(memoryLimitInBytes === undefined ? {} : { memoryLimitInBytes }),
    });
    const table: [
      string,
      SwapController | undefined,
      number | undefined,
      Partial<LinuxContainerResources>,
    ][] = [
      ['no swap controller: nothing set', undefined, 64 << 20, {}],
      ['cgroup v1: memory+swap = memory limit', 'cgroupv1', 64 << 20, { memorySwapLimitInBytes: 64 << 20 }],
      [
        'cgroup v1 without a memory limit: 0 (unlimited, as the limit)',
        'cgroupv1',
        undefined,
        { memorySwapLimitInBytes: 0 },
      ],
      ['cgroup v2: memory.swap.max 0', 'cgroupv2', 64 << 20, { unified: { 'memory.swap.max': '0' } }],
      [
        'cgroup v2 without a memory limit: still no swap',
        'cgroupv2',
        undefined,
        { unified: { 'memory.swap.max': '0' } },
      ],
    ];
    for (const [what, controller, limit, extra] of table) {
      it(what, () => {
        const r = base(limit);
        configureNoSwap(r, controller);
        expect(r).to.deep.equal({ ...base(limit), ...extra });
      });
    }

    it('keeps other cgroup v2 files', () => {
      const r: LinuxContainerResources = { unified: { 'memory.high': '100' } };
      configureNoSwap(r, 'cgroupv2');
      expect(r.unified).to.deep.equal({ 'memory.high': '100', 'memory.swap.max': '0' });
    });

    const pod = (c: Container): Pod => ({
      metadata: { name: 'p', namespace: 'default', uid: 'u1' },
      spec: { containers: [c] },
    });
    const limited: Container = {
      name: 'c',
      resources: { limits: { memory: '128Mi' }, requests: { memory: '64Mi' } },
    };
    it("containerResources applies it with the node's controller (create and resize alike)", () => {
      expect(containerResources(pod(limited), limited, { swapController: 'cgroupv1' })).to.include({
        memoryLimitInBytes: 128 << 20,
        memorySwapLimitInBytes: 128 << 20,
      });
      expect(containerResources(pod(limited), limited, { swapController: 'cgroupv2' }).unified).to.deep.equal(
        {
          'memory.swap.max': '0',
        },
      );
      const none = containerResources(pod(limited), limited, {});
      expect(none).to.not.have.any.keys('memorySwapLimitInBytes', 'unified');
    });

    it('reaches CRI as memory_swap_limit_in_bytes and unified, only when set', () => {
      expect(resourcesToWire({ memoryLimitInBytes: 1024, memorySwapLimitInBytes: 1024 })).to.deep.include({
        memory_limit_in_bytes: '1024',
        memory_swap_limit_in_bytes: '1024',
      });
      expect(resourcesToWire({ unified: { 'memory.swap.max': '0' } }).unified).to.deep.equal({
        'memory.swap.max': '0',
      });
      expect(resourcesToWire({ memoryLimitInBytes: 1024 })).to.not.have.any.keys(
        'memory_swap_limit_in_bytes',
        'unified',
      );
    });
  });

  describe('nodeInfo.swap (the MachineInfo setter)', () => {
    const params: NodeStatusParams = { ...NODE_STATUS_PARAMS };
    const table: [string, number | undefined, { capacity: number } | undefined][] = [
      ['a host with swap: its capacity in bytes', 2 * 1024 ** 3, { capacity: 2 * 1024 ** 3 }],
      ['no swap: left out', 0, undefined],
      ['unknown: left out', undefined, undefined],
    ];
    for (const [what, swapCapacityBytes, want] of table) {
      it(what, () => {
        const info = systemInfo({
          ...params,
          runtimeVersion: undefined,
          ...(swapCapacityBytes === undefined ? {} : { swapCapacityBytes }),
        });
        expect(info.swap).to.deep.equal(want);
      });
    }

    it('is never cleared once written (a host that reports none leaves the earlier value)', () => {
      const info = systemInfo({ ...params, runtimeVersion: undefined, swapCapacityBytes: 0 });
      const before: NodeStatus = { nodeInfo: { ...info, swap: { capacity: 4096 } } };
      expect(versionInfo(info)(before, '').nodeInfo!.swap).to.deep.equal({ capacity: 4096 });
      const now = systemInfo({ ...params, runtimeVersion: undefined, swapCapacityBytes: 8192 });
      expect(versionInfo(now)(before, '').nodeInfo!.swap).to.deep.equal({ capacity: 8192 });
    });

    it('the NodeStatusLoop writes it to the Node', async () => {
      const { node } = await nodeStatusOnce({ ...params, swapCapacityBytes: 1 << 30 });
      expect(node.status!.nodeInfo!.swap).to.deep.equal({ capacity: 1 << 30 });
    });
  });

  describe('VirtualNode spec.runtime.sim.swapCapacity', () => {
    const parse = (swapCapacity: unknown) =>
      VirtualNodeSpecSchema.safeParse({ runtime: { type: 'sim', sim: { swapCapacity } } });
    it('takes a quantity or an integer', () => {
      for (const q of ['2Gi', 1073741824, '0']) expect(parse(q).success, String(q)).to.equal(true);
    });
    it('refuses what is not a non-negative quantity', () => {
      for (const q of ['-1Gi', 'lots', -5]) expect(parse(q).success, String(q)).to.equal(false);
    });
  });
});

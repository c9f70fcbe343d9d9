// Reading a pod cgroup back and writing some of its limits (src/kubelet/cm/shell/podcgroup.ts parsePodCgroupFiles,
// readPodCgroup, setPodCgroupConfig): cgroup v1 and v2 files, "no limit" in each one's words. Fake host.
import { expect } from 'chai';
import {
  cpuSharesToWeight,
  cpuWeightToShares,
  parsePodCgroupFiles,
  readPodCgroup,
  setPodCgroupConfig,
  type CgroupReader,
  type CgroupWriter,
} from '../../../../src/kubelet/cm/shell/podcgroup.js';

const MiB = 1024 * 1024;

describe('pod cgroup: reading back', () => {
  const cases: { name: string; v2: boolean; files: Record<string, string>; want: object }[] = [
    {
      name: 'v1 with limits',
      v2: false,
      files: {
        'cpu.shares': '1024\n',
        'cpu.cfs_period_us': '100000\n',
        'cpu.cfs_quota_us': '150000\n',
        'memory.limit_in_bytes': `${128 * MiB}\n`,
      },
      want: { cpuShares: 1024, cpuPeriod: 100_000, cpuQuota: 150_000, memoryLimitBytes: 128 * MiB },
    },
    {
      name: 'v1 without limits (quota -1, the kernel page-counter maximum)',
      v2: false,
      files: {
        'cpu.shares': '1024',
        'cpu.cfs_period_us': '100000',
        'cpu.cfs_quota_us': '-1',
        'memory.limit_in_bytes': '9223372036854771712',
      },
      want: { cpuShares: 1024, cpuPeriod: 100_000, cpuQuota: 0, memoryLimitBytes: 0 },
    },
    {
      name: 'v2 with limits',
      v2: true,
      files: { 'cpu.weight': '79\n', 'cpu.max': '50000 100000\n', 'memory.max': `${64 * MiB}\n` },
      want: {
        cpuShares: cpuWeightToShares(79),
        cpuPeriod: 100_000,
        cpuQuota: 50_000,
        memoryLimitBytes: 64 * MiB,
      },
    },
    {
      name: 'v2 without limits',
      v2: true,
      files: { 'cpu.weight': '100', 'cpu.max': 'max 100000', 'memory.max': 'max' },
      want: { cpuShares: cpuWeightToShares(100), cpuPeriod: 100_000, cpuQuota: 0, memoryLimitBytes: 0 },
    },
    { name: 'files missing or unreadable', v2: false, files: { 'cpu.shares': 'x' }, want: {} },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(parsePodCgroupFiles(new Map(Object.entries(c.files)), c.v2)).to.deep.equal(c.want);
    });
  }

  it('weights back to shares as the kubelet converts them (cpuWeightToCPUShares)', () => {
    expect([1, 100, 10_000].map(cpuWeightToShares)).to.deep.equal([2, 2597, 262_144]);
    expect(cpuSharesToWeight(1024)).to.equal(39);
  });

  it('reads the cpu and memory hierarchies of cgroup v1 with the memory usage; a missing cgroup is undefined', async () => {
    const files = new Map<string, string>([
      ['/cg/cpu/kubepods/podu', ''],
      ['/cg/cpu/kubepods/podu/cpu.shares', '512'],
      ['/cg/cpu/kubepods/podu/cpu.cfs_period_us', '100000'],
      ['/cg/cpu/kubepods/podu/cpu.cfs_quota_us', '50000'],
      ['/cg/memory/kubepods/podu/memory.limit_in_bytes', String(64 * MiB)],
      ['/cg/memory/kubepods/podu/memory.usage_in_bytes', String(3 * MiB)],
    ]);
    const host: CgroupReader = {
      exists: async (p) => files.has(p),
      read: async (p) => files.get(p),
    };
    expect(await readPodCgroup('kubepods/podu', host, '/cg')).to.deep.equal({
      config: { cpuShares: 512, cpuPeriod: 100_000, cpuQuota: 50_000, memoryLimitBytes: 64 * MiB },
      memoryUsageBytes: 3 * MiB,
    });
    expect(await readPodCgroup('kubepods/podv', host, '/cg')).to.equal(undefined);
  });

  it('writes only the limits given, the period before the quota', async () => {
    const writes: string[] = [];
    const host: CgroupWriter = {
      exists: async () => false,
      mkdir: async () => undefined,
      write: async (p, v) => void writes.push(`${p}=${v}`),
    };
    await setPodCgroupConfig('kubepods/podu', { cpuQuota: 0, cpuPeriod: 100_000 }, host, '/cg');
    await setPodCgroupConfig('kubepods/podu', { memoryLimitBytes: 96 * MiB }, host, '/cg');
    expect(writes).to.deep.equal([
      '/cg/cpu/kubepods/podu/cpu.cfs_period_us=100000',
      '/cg/cpu/kubepods/podu/cpu.cfs_quota_us=-1',
      `/cg/memory/kubepods/podu/memory.limit_in_bytes=${96 * MiB}`,
    ]);
  });
});

import { expect } from 'chai';
import {
  cpuSharesToWeight,
  destroyCgroup,
  ensurePodCgroup,
  podCgroupFiles,
  type CgroupHost,
  type CgroupWriter,
} from '../../../../../src/kubelet/cm/shell/podcgroup.js';

/**
 * An in-memory cgroupfs: directories with their members. A removal of a directory with members or children
 * fails EBUSY; a killed member stays charged for `reapAfter` more removals (the kernel reaps it later).
 */
class FakeCgroups implements CgroupHost {
  readonly dirs = new Map<string, Set<number>>();
  readonly killed: number[] = [];
  readonly slept: number[] = [];
  readonly removed: string[] = [];
  /** pids whose kill fails with this code, each as many times as given. */
  readonly failKill = new Map<number, { code: string; times: number }>();
  private readonly dying = new Map<number, number>();

  constructor(
    paths: Record<string, number[]>,
    private readonly reapAfter = 0,
  ) {
    for (const [p, pids] of Object.entries(paths)) {
      // Every ancestor up to the mount exists too.
      const parts = p.split('/');
      for (let i = 2; i <= parts.length; i++) {
        const a = parts.slice(0, i).join('/');
        if (!this.dirs.has(a)) this.dirs.set(a, new Set());
      }
      for (const pid of pids) this.dirs.get(p)!.add(pid);
    }
  }

  /** Directories whose members cannot be read. */
  readonly unreadable = new Set<string>();

  async members(dir: string): Promise<number[]> {
    if (this.unreadable.has(dir))
      throw Object.assign(new Error(`open ${dir}/cgroup.procs: EACCES`), { code: 'EACCES' });
    return [...(this.dirs.get(dir) ?? [])];
  }

  async children(dir: string): Promise<string[] | undefined> {
    if (!this.dirs.has(dir)) return undefined;
    return [...this.dirs.keys()]
      .filter((d) => d.startsWith(dir + '/') && !d.slice(dir.length + 1).includes('/'))
      .map((d) => d.slice(dir.length + 1));
  }

  async kill(pid: number): Promise<boolean> {
    const fail = this.failKill.get(pid);
    if (fail && fail.times > 0) {
      fail.times--;
      throw Object.assign(new Error(`kill ${pid}: ${fail.code}`), { code: fail.code });
    }
    const alive = [...this.dirs.values()].some((m) => m.has(pid)) && !this.dying.has(pid);
    if (!alive) return false;
    this.killed.push(pid);
    this.dying.set(pid, this.reapAfter);
    if (this.reapAfter === 0) this.reap(pid);
    return true;
  }

  private reap(pid: number): void {
    this.dying.delete(pid);
    for (const m of this.dirs.values()) m.delete(pid);
  }

  async remove(dir: string): Promise<void> {
    for (const [pid, left] of this.dying) {
      if (left <= 0) this.reap(pid);
      else this.dying.set(pid, left - 1);
    }
    if (!this.dirs.has(dir)) return;
    const busy = this.dirs.get(dir)!.size > 0 || ((await this.children(dir)) ?? []).length > 0;
    if (busy) throw Object.assign(new Error(`rmdir ${dir}: EBUSY`), { code: 'EBUSY' });
    this.dirs.delete(dir);
    this.removed.push(dir);
  }

  async sleep(ms: number): Promise<void> {
    this.slept.push(ms);
  }
}

const MOUNT = '/cg';
const REL = 'ko/node-a/pod1234';

describe('destroyCgroup (pod container manager Destroy)', () => {
  it('kills every process left in the tree in every hierarchy, once each, then removes it children first', async () => {
    const host = new FakeCgroups({
      [`${MOUNT}/pids/${REL}`]: [101],
      [`${MOUNT}/pids/${REL}/ctr-a`]: [102, 103],
      [`${MOUNT}/memory/${REL}/ctr-a`]: [102, 103],
      [`${MOUNT}/memory/other`]: [200],
    });
    expect(await destroyCgroup(REL, host, MOUNT)).to.deep.equal([]);
    expect(host.killed.sort()).to.deep.equal([101, 102, 103]);
    expect(host.dirs.has(`${MOUNT}/pids/${REL}`)).to.equal(false);
    expect(host.dirs.has(`${MOUNT}/memory/${REL}`)).to.equal(false);
    expect(host.removed.indexOf(`${MOUNT}/pids/${REL}/ctr-a`)).to.be.lessThan(
      host.removed.indexOf(`${MOUNT}/pids/${REL}`),
    );
    // Nothing outside the pod's cgroup is touched: not its parent, not a sibling's process.
    expect(host.dirs.has(`${MOUNT}/pids/ko/node-a`)).to.equal(true);
    expect(host.dirs.get(`${MOUNT}/memory/other`)).to.deep.equal(new Set([200]));
  });

  it('waits for killed processes to be reaped before it gives the removal up to the next housekeeping', async () => {
    const reaped = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [101] }, 2);
    expect(await destroyCgroup(REL, reaped, MOUNT)).to.deep.equal([]);
    expect(reaped.slept).to.deep.equal([10, 20]);

    const never = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [101] }, 100);
    const failures = await destroyCgroup(REL, never, MOUNT);
    expect(failures).to.have.length(1);
    expect(failures[0]).to.match(/pids\/ko\/node-a\/pod1234: .*EBUSY/);
    expect(never.slept).to.deep.equal([10, 20, 40, 80, 160, 320, 640]);
  });

  it('removes an empty cgroup without killing or waiting, and answers a cgroup that is gone as removed', async () => {
    const host = new FakeCgroups({ [`${MOUNT}/cpu/${REL}`]: [] });
    expect(await destroyCgroup(REL, host, MOUNT)).to.deep.equal([]);
    expect(host.killed).to.deep.equal([]);
    expect(host.slept).to.deep.equal([]);
    expect(host.removed).to.deep.equal([`${MOUNT}/cpu/${REL}`]);
    expect(await destroyCgroup(REL, host, MOUNT)).to.deep.equal([]);
    expect(await destroyCgroup(REL, new FakeCgroups({}), '/nowhere')).to.deep.equal([]);
  });

  it('retries a failed kill over up to five rounds; a kill still failing leaves everything for next time', async () => {
    const flaky = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [101, 102] });
    flaky.failKill.set(102, { code: 'EAGAIN', times: 3 });
    expect(await destroyCgroup(REL, flaky, MOUNT)).to.deep.equal([]);
    expect(flaky.killed).to.deep.equal([101, 102]);

    const stuck = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [101, 102] });
    stuck.failKill.set(102, { code: 'EPERM', times: 99 });
    const failures = await destroyCgroup(REL, stuck, MOUNT);
    expect(failures).to.have.length(1);
    expect(failures[0]).to.match(/pod1234: kill 102: .*EPERM/);
    expect(stuck.failKill.get(102)!.times).to.equal(99 - 5);
    expect(stuck.removed).to.deep.equal([]);
  });

  it('kills nothing in a cgroup that holds pid 1 or this process: it is reported as not a pod one and kept', async () => {
    const host = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [1, process.pid, 101] });
    const failures = await destroyCgroup(REL, host, MOUNT);
    expect(host.killed).to.deep.equal([]);
    expect(failures).to.deep.equal([
      `${REL}: process 1 is not a pod's: nothing killed`,
      `${REL}: process ${process.pid} is not a pod's: nothing killed`,
    ]);
    expect(host.dirs.has(`${MOUNT}/pids/${REL}`)).to.equal(true);
  });

  it('kills nothing when a member is outside its pid namespace (an operator without hostPID), and says so', async () => {
    const host = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [0, 101] });
    const failures = await destroyCgroup(REL, host, MOUNT);
    expect(host.killed).to.deep.equal([]);
    expect(failures).to.deep.equal([
      `${REL}: processes outside this process's pid namespace hold it: they cannot be killed from here`,
    ]);
    expect(host.dirs.has(`${MOUNT}/pids/${REL}`)).to.equal(true);
  });

  it('answers members it cannot read as a failure, not a throw, and removes nothing', async () => {
    const host = new FakeCgroups({ [`${MOUNT}/pids/${REL}`]: [101] });
    host.unreadable.add(`${MOUNT}/pids/${REL}`);
    const failures = await destroyCgroup(REL, host, MOUNT);
    expect(failures).to.have.length(1);
    expect(failures[0]).to.match(/pod1234: reading its members: .*EACCES/);
    expect(host.killed).to.deep.equal([]);
    expect(host.removed).to.deep.equal([]);
  });
});

describe('ensurePodCgroup (the pod container manager EnsureExists)', () => {
  class FakeWriter implements CgroupWriter {
    readonly ops: string[] = [];
    constructor(private readonly v2: boolean) {}
    async exists(path: string): Promise<boolean> {
      return this.v2 && path === '/cg/cgroup.controllers';
    }
    async mkdir(dir: string): Promise<void> {
      this.ops.push(`mkdir ${dir}`);
    }
    async write(path: string, value: string): Promise<void> {
      this.ops.push(`${path} = ${value}`);
    }
  }
  const config = { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitBytes: 134217728 };

  it('cgroup v1: the cpu and memory hierarchies, the period before the quota', async () => {
    const w = new FakeWriter(false);
    await ensurePodCgroup('/ko/podu1', config, w, '/cg');
    expect(w.ops).to.deep.equal([
      'mkdir /cg/cpu/ko/podu1',
      'mkdir /cg/memory/ko/podu1',
      '/cg/cpu/ko/podu1/cpu.shares = 512',
      '/cg/cpu/ko/podu1/cpu.cfs_period_us = 100000',
      '/cg/cpu/ko/podu1/cpu.cfs_quota_us = 50000',
      '/cg/memory/ko/podu1/memory.limit_in_bytes = 134217728',
    ]);
  });

  it('cgroup v2: controllers on in every ancestor, then weight, cpu.max and memory.max', async () => {
    const w = new FakeWriter(true);
    await ensurePodCgroup('/ko/podu1', { cpuShares: 2, cpuQuota: 0, cpuPeriod: 100000 }, w, '/cg');
    expect(w.ops).to.deep.equal([
      'mkdir /cg',
      '/cg/cgroup.subtree_control = +cpu +memory',
      'mkdir /cg/ko',
      '/cg/ko/cgroup.subtree_control = +cpu +memory',
      'mkdir /cg/ko/podu1',
      '/cg/ko/podu1/cpu.weight = 1',
      '/cg/ko/podu1/cpu.max = max 100000',
    ]);
  });

  it('writes only what the config sets, and names the file it could not write', async () => {
    expect(podCgroupFiles({ cpuShares: 2 }, false)).to.deep.equal([
      { controller: 'cpu', file: 'cpu.shares', value: '2' },
    ]);
    expect(podCgroupFiles({ cpuShares: 1024, memoryLimitBytes: 0 }, true)).to.deep.equal([
      { controller: 'cpu', file: 'cpu.weight', value: '39' },
      { controller: 'memory', file: 'memory.max', value: 'max' },
    ]);
    expect([cpuSharesToWeight(2), cpuSharesToWeight(1024), cpuSharesToWeight(262144)]).to.deep.equal([
      1, 39, 10000,
    ]);
    const writer: CgroupWriter = {
      exists: async () => false,
      mkdir: async () => undefined,
      write: async (path) => {
        if (path.endsWith('memory.limit_in_bytes')) throw new Error('EBUSY');
      },
    };
    let err: Error | undefined;
    await ensurePodCgroup('/ko/podu1', config, writer, '/cg').catch((e: Error) => (err = e));
    expect(err?.message).to.equal('write 134217728 to /cg/memory/ko/podu1/memory.limit_in_bytes: EBUSY');
  });
});

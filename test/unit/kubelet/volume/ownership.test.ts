import { expect } from 'chai';
import { AtomicWriter } from '../../../../src/kubelet/volume/atomicwriter.js';
import type { EntryStat, VolumeFS } from '../../../../src/kubelet/volume/fs.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import {
  type OwnershipChange,
  type OwnershipEntry,
  ownershipChange,
  requiresPermissionChange,
  setVolumeOwnership,
} from '../../../../src/kubelet/volume/ownership.js';
import { CAN_CHOWN, FS_KINDS, type FsFixture } from './fixtures.js';

const G = 2000;

describe('ownership: ownershipChange (changeFilePermission as a decision)', () => {
  /** A file, directory or symlink with this mode and group. */
  const entry = (kind: OwnershipEntry['kind'], mode: number, gid: number): OwnershipEntry => ({
    kind,
    mode,
    gid,
  });
  /** The group and mode to set (undefined: leave as is). */
  const change = (gid: number | undefined, mode: number | undefined): OwnershipChange => ({ gid, mode });
  const cases: [string, OwnershipEntry, boolean, OwnershipChange | undefined][] = [
    ['rw file gets group and rw bits', entry('file', 0o644, 0), false, change(G, 0o664)],
    ['ro file 0644 already has 0440', entry('file', 0o644, 0), true, change(G, undefined)],
    ['token 0600 becomes 0640 on a ro volume', entry('file', 0o600, 0), true, change(G, 0o640)],
    ['owner bits are added too (0660 mask)', entry('file', 0o004, G), false, change(undefined, 0o664)],
    ['rw dir gets setgid and group exec', entry('dir', 0o755, 0), false, change(G, 0o2775)],
    ['ro dir gets setgid', entry('dir', 0o755, G), true, change(undefined, 0o2755)],
    ['ro dir 0700 gets r-x for the group', entry('dir', 0o700, G), true, change(undefined, 0o2750)],
    ['symlink: group only, never chmod', entry('symlink', 0o777, 0), false, change(G, undefined)],
    ['symlink already in the group', entry('symlink', 0o777, G), false, undefined],
    ['file already right', entry('file', 0o664, G), false, undefined],
    ['dir already right', entry('dir', 0o2775, G), false, undefined],
    ['bits are only added', entry('file', 0o4777, G), true, undefined],
  ];
  for (const [name, e, ro, want] of cases) {
    it(name, () => expect(ownershipChange(e, G, ro)).to.deep.equal(want));
  }
});

describe('ownership: requiresPermissionChange (OnRootMismatch)', () => {
  const root = (over: Partial<EntryStat>): EntryStat => ({
    kind: 'dir',
    mode: 0o2775,
    uid: 0,
    gid: G,
    size: 0,
    ...over,
  });
  const cases: [string, EntryStat | undefined, boolean, boolean][] = [
    ['matching rw root', root({}), false, false],
    ['matching ro root with more bits than needed', root({ mode: 0o2777 }), true, false],
    ['ro root needs only 0550', root({ mode: 0o2550 }), true, false],
    ['wrong group', root({ gid: 0 }), false, true],
    ['missing setgid', root({ mode: 0o775 }), false, true],
    ['missing group write on rw', root({ mode: 0o2755 }), false, true],
    ['root is a file', root({ kind: 'file' }), false, true],
    ['root cannot be read', undefined, false, true],
  ];
  for (const [name, st, ro, want] of cases) {
    it(name, () => expect(requiresPermissionChange(st, G, ro)).to.equal(want));
  }
});

/** Records the calls that change ownership, in order. */
function recording(
  inner: VolumeFS,
  calls: string[],
  failOn?: (op: string, path: string) => boolean,
): VolumeFS {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        const op = String(prop);
        if (op === 'chown' || op === 'chmod') {
          calls.push(`${op} ${String(args[0])}`);
          if (failOn?.(op, String(args[0]))) throw Object.assign(new Error('EPERM'), { code: 'EPERM' });
        }
        return (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

describe('ownership: setVolumeOwnership over an atomic-writer volume (MemoryVolumeFS)', () => {
  const dir = '/vol';
  let mem: MemoryVolumeFS;
  let ts: string;
  beforeEach(async () => {
    mem = new MemoryVolumeFS();
    await mem.mkdir(dir);
    await new AtomicWriter({ fs: mem, targetDir: dir, now: () => Date.UTC(2026, 0, 1) }).write(
      new Map([
        ['token', { data: Buffer.from('jwt'), mode: 0o600 }],
        ['conf/app.yaml', { data: Buffer.from('a: 1'), mode: 0o644 }],
      ]),
    );
    ts = await mem.readlink(`${dir}/..data`);
  });

  it('does nothing without an fsGroup', async () => {
    const r = await setVolumeOwnership(mem, dir, { fsGroup: undefined, readOnly: true });
    expect(r).to.deep.equal({ skipped: true, visited: 0, changed: 0, failures: [] });
  });

  it('groups every entry, widens files by 0440 and dirs by setgid+0550, never chmods a link', async () => {
    const r = await setVolumeOwnership(mem, dir, { fsGroup: G, readOnly: true });
    expect(r.skipped).to.equal(false);
    expect(r.failures).to.deep.equal([]);
    const at = (p: string) => mem.statSync(`${dir}${p}`, false)!;
    expect(at(`/${ts}/token`)).to.include({ gid: G, mode: 0o640 });
    expect(at(`/${ts}/conf/app.yaml`)).to.include({ gid: G, mode: 0o644 });
    expect(at(`/${ts}/conf`)).to.include({ gid: G, mode: 0o2755 });
    expect(at(`/${ts}`)).to.include({ gid: G, mode: 0o2755 });
    expect(at('')).to.include({ gid: G, mode: 0o2755 });
    for (const link of ['/..data', '/token', '/conf'])
      expect(at(link)).to.include({ kind: 'symlink', gid: G, mode: 0o777 });
    // 2 links into ..data + ..data + ts dir + conf + 2 files + the root
    expect(r.visited).to.equal(8);
  });

  it('walks depth first and visits a directory after its children', async () => {
    const calls: string[] = [];
    await setVolumeOwnership(recording(mem, calls), dir, { fsGroup: G, readOnly: false });
    const chmods = calls.filter((c) => c.startsWith('chmod')).map((c) => c.slice('chmod '.length));
    expect(chmods.at(-1)).to.equal(dir);
    expect(chmods.indexOf(`${dir}/${ts}/conf/app.yaml`)).to.be.lessThan(chmods.indexOf(`${dir}/${ts}/conf`));
    expect(chmods.indexOf(`${dir}/${ts}/conf`)).to.be.lessThan(chmods.indexOf(`${dir}/${ts}`));
    expect(chmods, 'links are not chmodded').to.not.include(`${dir}/..data`);
  });

  it('OnRootMismatch skips the walk once the root matches; Always walks and finds nothing to change', async () => {
    const first = await setVolumeOwnership(mem, dir, {
      fsGroup: G,
      fsGroupChangePolicy: 'OnRootMismatch',
      readOnly: true,
    });
    expect(first.skipped).to.equal(false);
    expect(first.changed).to.be.greaterThan(0);
    const again = await setVolumeOwnership(mem, dir, {
      fsGroup: G,
      fsGroupChangePolicy: 'OnRootMismatch',
      readOnly: true,
    });
    expect(again).to.include({ skipped: true, visited: 0 });
    const always = await setVolumeOwnership(mem, dir, {
      fsGroup: G,
      fsGroupChangePolicy: 'Always',
      readOnly: true,
    });
    expect(always).to.include({ skipped: false, changed: 0 });
    const otherGroup = await setVolumeOwnership(mem, dir, {
      fsGroup: G + 1,
      fsGroupChangePolicy: 'OnRootMismatch',
      readOnly: true,
    });
    expect(otherGroup.skipped).to.equal(false);
  });

  it('records a failing chown or chmod and goes on with the rest', async () => {
    const calls: string[] = [];
    const failing = recording(mem, calls, (op, p) => op === 'chown' && p.endsWith('/token'));
    const r = await setVolumeOwnership(failing, dir, { fsGroup: G, readOnly: true });
    expect(r.failures.map((f) => `${f.op} ${f.path}`)).to.deep.equal([
      `chown ${dir}/${ts}/token`,
      `chown ${dir}/token`,
    ]);
    expect(mem.statSync(`${dir}/${ts}/token`, false)).to.include({ gid: 0, mode: 0o640 });
    expect(mem.statSync(`${dir}/${ts}/conf/app.yaml`, false)).to.include({ gid: G });
  });

  it('rejects a missing volume directory', async () => {
    const err = await setVolumeOwnership(mem, '/missing', { fsGroup: G, readOnly: true }).catch(
      (e: unknown) => e,
    );
    expect((err as { code?: string }).code).to.equal('ENOENT');
  });
});

for (const kind of FS_KINDS.filter((k) => k.name === 'RealVolumeFS')) {
  describe(`ownership: setVolumeOwnership on ${kind.name}`, () => {
    let fx: FsFixture;
    beforeEach(async () => (fx = await kind.make()));
    afterEach(() => fx.cleanup());

    it('applies group and bits on disk', async function () {
      if (!CAN_CHOWN) this.skip();
      const { fs, root } = fx;
      await fs.mkdir(`${root}/d`);
      await fs.writeFile(`${root}/d/f`, Buffer.from('x'));
      await fs.chmod(`${root}/d/f`, 0o600);
      await fs.symlink('d/f', `${root}/l`);
      const r = await setVolumeOwnership(fs, root, { fsGroup: G, readOnly: false });
      expect(r.failures).to.deep.equal([]);
      expect(await fs.lstat(`${root}/d/f`)).to.include({ gid: G, mode: 0o660 });
      expect((await fs.lstat(`${root}/d`))?.mode).to.equal(0o2775);
      expect(await fs.lstat(`${root}/l`)).to.include({ kind: 'symlink', gid: G });
    });
  });
}

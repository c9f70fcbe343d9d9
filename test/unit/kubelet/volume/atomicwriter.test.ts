import { expect } from 'chai';
import {
  AtomicWriter,
  DATA_DIR_NAME,
  NEW_DATA_DIR_NAME,
  timestampDirName,
  validatePath,
  validatePayload,
} from '../../../../src/kubelet/volume/atomicwriter.js';
import type { VolumeFS } from '../../../../src/kubelet/volume/fs.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import type { FileProjection } from '../../../../src/kubelet/volume/payload.js';
import { isInvalidArgument, isNotFound } from '../../../../src/util/errors.js';
import { CAN_CHOWN, FS_KINDS, type FsFixture } from './fixtures.js';

const TS = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d{9}$/;
const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

function payload(files: Record<string, string | [string, number]>): Map<string, FileProjection> {
  return new Map(
    Object.entries(files).map(([k, v]) => {
      const [data, mode] = typeof v === 'string' ? [v, 0o644] : v;
      return [k, { data: Buffer.from(data), mode }];
    }),
  );
}

/** A clock that moves one second per call, so every version gets a distinct name. */
function ticking(start = T0): () => number {
  let t = start;
  return () => (t += 1000);
}

type Op = keyof VolumeFS;
interface Hooks {
  before?(op: Op, args: unknown[]): void | Promise<void>;
  after?(op: Op, args: unknown[]): void | Promise<void>;
}

/** Wraps a VolumeFS so a test can observe (or fail) each call. */
function instrument(inner: VolumeFS, hooks: Hooks): VolumeFS {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        await hooks.before?.(prop as Op, args);
        const r: unknown = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await hooks.after?.(prop as Op, args);
        return r;
      };
    },
  });
}

describe('atomic writer: validatePath', () => {
  const long = (n: number) => 'x'.repeat(n);
  const cases: [string, string | undefined][] = [
    ['a', undefined],
    ['a/b/c', undefined],
    ['./a', undefined],
    ['.a', undefined],
    ['a/..b', undefined],
    [long(255), undefined],
    ['', 'invalid path: must not be empty: ""'],
    ['/etc/passwd', 'invalid path: must be relative path: /etc/passwd'],
    ['a/../b', "invalid path: must not contain '..': a/../b"],
    ['..', "invalid path: must not contain '..': .."],
    ['..data', "invalid path: must not start with '..': ..data"],
    ['...', "invalid path: must not start with '..': ..."],
    [long(256), 'invalid path: filenames must be less than or equal to 255 characters'],
    ['é'.repeat(128), 'invalid path: filenames must be less than or equal to 255 characters'],
    [`${'a/'.repeat(2048)}b`, 'invalid path: must be less than or equal to 4096 characters'],
  ];
  for (const [p, want] of cases) {
    it(`${JSON.stringify(p.length > 40 ? `${p.slice(0, 20)}...(${p.length})` : p)} -> ${want ?? 'valid'}`, () => {
      expect(validatePath(p)).to.equal(want);
    });
  }

  it('validatePayload cleans paths and reports the first refused one', () => {
    const r = validatePayload(payload({ './a//b/': 'x', c: 'y' }));
    expect(r.ok && [...r.payload.keys()]).to.deep.equal(['a/b', 'c']);
    expect(validatePayload(payload({ ok: 'x', '/abs': 'y' }))).to.deep.equal({
      ok: false,
      message: 'invalid path: must be relative path: /abs',
    });
  });

  it('names timestamped directories after the UTC time with nine fractional digits', () => {
    expect(timestampDirName(T0)).to.equal('..2026_01_02_03_04_05.678000000');
    expect(timestampDirName(T0, 7)).to.equal('..2026_01_02_03_04_05.678000007');
    expect(timestampDirName(T0)).to.match(TS);
  });
});

for (const kind of FS_KINDS) {
  describe(`atomic writer on ${kind.name}`, () => {
    let fx: FsFixture;
    let fs: VolumeFS;
    let dir: string;
    const writer = (now = ticking(), f: VolumeFS = fs) => new AtomicWriter({ fs: f, targetDir: dir, now });
    const read = async (p: string) => (await fs.readFile(`${dir}/${p}`)).toString();
    const dataTarget = () => fs.readlink(`${dir}/${DATA_DIR_NAME}`);
    const entries = () => fs.readdir(dir);

    beforeEach(async () => {
      fx = await kind.make();
      fs = fx.fs;
      dir = fx.root;
    });
    afterEach(() => fx.cleanup());

    it('first write: timestamped dir (0755), ..data link, top-level links, exact file modes', async () => {
      const changed = await writer().write(
        payload({ 'app.conf': ['a=1', 0o777], secret: ['s', 0o400], 'nested/deep/file': ['n', 0o640] }),
      );
      expect(changed).to.equal(true);
      const ts = await dataTarget();
      expect(ts).to.match(TS);
      expect(await entries()).to.deep.equal([ts, DATA_DIR_NAME, 'app.conf', 'nested', 'secret'].sort());
      expect(await fs.readlink(`${dir}/app.conf`)).to.equal('..data/app.conf');
      expect(await fs.readlink(`${dir}/nested`)).to.equal('..data/nested');
      expect(await read('app.conf')).to.equal('a=1');
      expect(await read('nested/deep/file')).to.equal('n');
      expect((await fs.lstat(`${dir}/${ts}`))?.mode).to.equal(0o755);
      // chmod after write: the umask (0022 here) must not take the group/other write bits of 0777.
      expect((await fs.stat(`${dir}/app.conf`))?.mode).to.equal(0o777);
      expect((await fs.stat(`${dir}/secret`))?.mode).to.equal(0o400);
      expect((await fs.stat(`${dir}/nested/deep/file`))?.mode).to.equal(0o640);
    });

    it('an unchanged payload returns false and leaves the timestamped dir alone', async () => {
      const p = payload({ a: 'one', 'b/c': 'two' });
      await writer().write(p);
      const ts = await dataTarget();
      const before = await entries();
      expect(await writer(ticking(T0 + 3_600_000)).write(p)).to.equal(false);
      expect(await dataTarget()).to.equal(ts);
      expect(await entries()).to.deep.equal(before);
    });

    it('compares bytes only: a mode change alone is not a new version (as upstream)', async () => {
      await writer().write(payload({ a: ['x', 0o644] }));
      expect(await writer().write(payload({ a: ['x', 0o600] }))).to.equal(false);
    });

    it('an update publishes a new dir, removes the old one and the links of removed keys', async () => {
      const w = writer();
      await w.write(payload({ keep: 'k1', gone: 'g1', 'dir/x': 'x1' }));
      const first = await dataTarget();
      expect(await w.write(payload({ keep: 'k2', added: 'a2', 'dir/y': 'y2' }))).to.equal(true);
      const second = await dataTarget();
      expect(second).to.not.equal(first);
      expect(await entries()).to.deep.equal([second, DATA_DIR_NAME, 'added', 'dir', 'keep'].sort());
      expect(await read('keep')).to.equal('k2');
      expect(await read('added')).to.equal('a2');
      expect(await fs.readdir(`${dir}/dir`)).to.deep.equal(['y']);
      expect(await fs.lstat(`${dir}/${first}`)).to.equal(undefined);
    });

    it('nested paths share one top-level link, which survives while any file under it remains', async () => {
      const w = writer();
      await w.write(payload({ 'a/b/c': '1', 'a/d': '2' }));
      expect(await read('a/b/c')).to.equal('1');
      await w.write(payload({ 'a/d': '3' }));
      expect(await fs.readlink(`${dir}/a`)).to.equal('..data/a');
      expect(await fs.readdir(`${dir}/a`)).to.deep.equal(['d']);
      await w.write(payload({ e: '4' }));
      expect(await fs.lstat(`${dir}/a`)).to.equal(undefined);
    });

    it('a file that becomes a directory (and back) is a new version, not an error', async () => {
      const w = writer();
      await w.write(payload({ a: 'file' }));
      expect(await w.write(payload({ 'a/b': 'nested' }))).to.equal(true);
      expect(await read('a/b')).to.equal('nested');
      expect(await w.write(payload({ a: 'file again' }))).to.equal(true);
      expect(await read('a')).to.equal('file again');
    });

    it('rejects invalid paths before touching the directory', async () => {
      for (const bad of ['/abs', '..data', 'a/../b', '']) {
        const err = await writer()
          .write(payload({ good: 'x', [bad]: 'y' }))
          .then(
            () => expect.fail('expected a rejection'),
            (e: unknown) => e,
          );
        expect(isInvalidArgument(err), bad).to.equal(true);
      }
      expect(await entries()).to.deep.equal([]);
    });

    it('rejects a missing target directory as NotFound', async () => {
      const w = new AtomicWriter({ fs, targetDir: `${dir}/missing`, now: ticking() });
      const err = await w.write(payload({ a: 'x' })).catch((e: unknown) => e);
      expect(isNotFound(err)).to.equal(true);
    });

    it('gives two versions written in the same millisecond distinct names', async () => {
      const frozen = () => T0;
      await writer(frozen).write(payload({ a: '1' }));
      const first = await dataTarget();
      await writer(frozen).write(payload({ a: '2' }));
      expect(await dataTarget()).to.not.equal(first);
      expect(await read('a')).to.equal('2');
    });

    it('runs setPerms on the new dir before it is published', async () => {
      const w = writer();
      await w.write(payload({ a: '1' }));
      const old = await dataTarget();
      const seen: string[] = [];
      await w.write(payload({ a: '2' }), async (sub) => {
        seen.push(sub);
        expect(await dataTarget(), 'not yet published').to.equal(old);
        expect((await fs.readFile(`${dir}/${sub}/a`)).toString()).to.equal('2');
      });
      expect(seen).to.deep.equal([await dataTarget()]);
    });

    it('a failing setPerms leaves the old version visible and nothing behind', async () => {
      const w = writer();
      await w.write(payload({ a: '1' }));
      const before = await entries();
      const err = await w
        .write(payload({ a: '2' }), () => Promise.reject(new Error('chown denied')))
        .catch((e: unknown) => e);
      expect((err as Error).message).to.equal('chown denied');
      expect(await entries()).to.deep.equal(before);
      expect(await read('a')).to.equal('1');
    });

    it('owns files by fsUser when the projection names one', async function () {
      if (kind.name === 'RealVolumeFS' && !CAN_CHOWN) this.skip();
      await writer().write(new Map([['token', { data: Buffer.from('jwt'), mode: 0o600, fsUser: 1000 }]]));
      expect(await fs.stat(`${dir}/token`)).to.include({ uid: 1000, mode: 0o600 });
    });

    it('repairs a deleted user-visible link without publishing a new version', async () => {
      const w = writer();
      await w.write(payload({ a: '1', b: '2' }));
      const ts = await dataTarget();
      await fs.rm(`${dir}/a`);
      expect(await w.write(payload({ a: '1', b: '2' }))).to.equal(false);
      expect(await dataTarget()).to.equal(ts);
      expect(await read('a')).to.equal('1');
    });

    it('cleans up after a crash before the swap: stale ..data_tmp and orphaned timestamped dirs', async () => {
      const w = writer();
      await w.write(payload({ a: '1' }));
      const current = await dataTarget();
      const orphan = timestampDirName(T0 - 86_400_000);
      await fs.mkdir(`${dir}/${orphan}`);
      await fs.writeFile(`${dir}/${orphan}/a`, Buffer.from('half-written'));
      await fs.symlink(orphan, `${dir}/${NEW_DATA_DIR_NAME}`);
      expect(await w.write(payload({ a: '1' }))).to.equal(false);
      expect(await entries()).to.deep.equal([current, DATA_DIR_NAME, 'a'].sort());
      expect(await read('a')).to.equal('1');
    });

    it('cleans up after a crash after the swap: old dir and links of removed keys', async () => {
      const w = writer();
      await w.write(payload({ a: '1', gone: 'g' }));
      const old = await dataTarget();
      // What the crashed run got done: the new version published, nothing removed yet.
      const fresh = timestampDirName(T0 + 3_600_000);
      await fs.mkdir(`${dir}/${fresh}`);
      await fs.writeFile(`${dir}/${fresh}/a`, Buffer.from('2'));
      await fs.symlink(fresh, `${dir}/${NEW_DATA_DIR_NAME}`);
      await fs.rename(`${dir}/${NEW_DATA_DIR_NAME}`, `${dir}/${DATA_DIR_NAME}`);
      expect(await w.write(payload({ a: '2' }))).to.equal(false);
      expect(await entries()).to.deep.equal([fresh, DATA_DIR_NAME, 'a'].sort());
      expect(await fs.lstat(`${dir}/${old}`)).to.equal(undefined);
    });

    it('a crash at any step leaves the old or the new content readable, and the next write converges', async () => {
      const oldP = payload({ a: 'old-a', 'n/b': 'old-b', gone: 'old-g' });
      const newP = payload({ a: 'new-a', 'n/b': 'new-b', added: 'new-c' });
      let step = 0;
      for (let crashAt = 1; ; crashAt++) {
        await fs.rm(dir);
        await fs.mkdir(dir);
        await writer().write(oldP);
        step = 0;
        const faulty = instrument(fs, {
          before() {
            if (++step === crashAt) throw new Error('crash');
          },
        });
        const crashed = await writer(ticking(T0 + 3_600_000), faulty)
          .write(newP)
          .then(
            () => false,
            () => true,
          );
        const a = await read('a');
        const b = await read('n/b');
        expect(
          [
            ['old-a', 'old-b'],
            ['new-a', 'new-b'],
          ],
          `crash at step ${crashAt}`,
        ).to.deep.include([a, b]);
        await writer(ticking(T0 + 7_200_000)).write(newP);
        const ts = await dataTarget();
        expect(await entries(), `converged after crash at ${crashAt}`).to.deep.equal(
          [ts, DATA_DIR_NAME, 'a', 'added', 'n'].sort(),
        );
        expect(await read('added')).to.equal('new-c');
        if (!crashed) break;
      }
      expect(step, 'the loop reached a run with no crash').to.be.greaterThan(5);
    });
  });
}

describe('atomic writer: readers never see a mix (MemoryVolumeFS, checked after every call)', () => {
  it('..data flips in a single rename and every file read is from one version', async () => {
    const mem = new MemoryVolumeFS();
    const dir = '/vol';
    await mem.mkdir(dir);
    const oldP = payload({ a: 'old-a', 'n/b': 'old-b', 'n/m/c': 'old-c', gone: 'old-g' });
    const newP = payload({ a: 'new-a', 'n/b': 'new-b', 'n/m/c': 'new-c', added: 'new-d' });
    await new AtomicWriter({ fs: mem, targetDir: dir, now: () => T0 }).write(oldP);
    const initialTarget = mem.statSync(`${dir}/..data`, false) && (await mem.readlink(`${dir}/..data`));

    const dataOps: string[] = [];
    const versionsSeen = new Set<string>();
    const observed = instrument(mem, {
      before(op, args) {
        if (args.some((a) => typeof a === 'string' && a === `${dir}/${DATA_DIR_NAME}`) && op !== 'readlink') {
          dataOps.push(`${op} ${args.map(String).join(' ')}`);
        }
      },
      after() {
        const seen = new Set<string>();
        for (const key of ['a', 'n/b', 'n/m/c']) {
          const v = mem.readFileSync(`${dir}/${key}`)?.toString();
          expect(v, `${key} readable at every step`).to.not.equal(undefined);
          seen.add(v!.split('-')[0]!);
        }
        expect([...seen], 'one version at a time').to.have.length(1);
        versionsSeen.add([...seen][0]!);
      },
    });
    expect(
      await new AtomicWriter({ fs: observed, targetDir: dir, now: () => T0 + 1000 }).write(newP),
    ).to.equal(true);
    expect(dataOps).to.deep.equal([`rename ${dir}/${NEW_DATA_DIR_NAME} ${dir}/${DATA_DIR_NAME}`]);
    expect([...versionsSeen]).to.deep.equal(['old', 'new']);
    expect(await mem.readlink(`${dir}/..data`)).to.not.equal(initialTarget);
    expect(mem.existsSync(`${dir}/gone`)).to.equal(false);
    expect(mem.readFileSync(`${dir}/added`)?.toString()).to.equal('new-d');
  });
});

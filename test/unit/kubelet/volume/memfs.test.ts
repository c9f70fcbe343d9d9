import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fsErrorCode, type VolumeFS } from '../../../../src/kubelet/volume/fs.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import { managedHostsFileContent } from '../../../../src/kubelet/podfiles/etchosts.js';
import { RealVolumeFS } from '../../../../src/kubelet/volume/shell/realfs.js';
import { heapUsedAfterGC } from '../../memory/perpod-fixture.js';
import { UMASK } from './fixtures.js';
import { rejection } from '../../../support/throws.js';

/** The file-system error code `p` rejects with. */
const code = async (p: Promise<unknown>): Promise<string | undefined> => fsErrorCode(await rejection(p));

describe('MemoryVolumeFS', () => {
  it('serves the atomic writer layout to synchronous readers (what the simulated runtime cats)', async () => {
    const fs = new MemoryVolumeFS();
    const vol = '/var/lib/kubelet/pods/u/volumes/kubernetes.io~configmap/cfg';
    await fs.mkdir(`${vol}/..2026_03_04_05_06_07.000000001/conf`);
    await fs.writeFile(`${vol}/..2026_03_04_05_06_07.000000001/conf/app.yaml`, Buffer.from('a: 1\n'));
    await fs.symlink('..2026_03_04_05_06_07.000000001', `${vol}/..data`);
    await fs.symlink('..data/conf', `${vol}/conf`);
    expect(fs.readFileSync(`${vol}/conf/app.yaml`)?.toString()).to.equal('a: 1\n');
    expect(fs.listSync(`${vol}/conf`)).to.deep.equal(['app.yaml']);
    expect(fs.listSync(vol)).to.deep.equal(['..2026_03_04_05_06_07.000000001', '..data', 'conf']);
    expect(fs.existsSync(`${vol}/conf/app.yaml`)).to.equal(true);
    expect(fs.existsSync(`${vol}/conf/missing`)).to.equal(false);
    expect(fs.readFileSync(`${vol}/conf`), 'a directory is not a file').to.equal(undefined);
    expect(fs.readFileSync('/nowhere/at/all')).to.equal(undefined);
    expect(fs.listSync(`${vol}/conf/app.yaml`)).to.equal(undefined);
  });

  it('hands out copies: mutating a written or read buffer does not change the file', async () => {
    const fs = new MemoryVolumeFS();
    const data = Buffer.from('abc');
    await fs.writeFile('/f', data);
    data[0] = 0x78;
    const read = await fs.readFile('/f');
    read[1] = 0x78;
    expect(fs.readFileSync('/f')?.toString()).to.equal('abc');
  });

  it('lists a large directory sorted after every change, and hands out a copy of its names', async () => {
    const fs = new MemoryVolumeFS();
    await fs.mkdir('/pods');
    const names = ['k', 'c', 'a', 'j', 'e', 'i', 'b', 'h', 'd', 'g', 'f'];
    for (const n of names) await fs.mkdir(`/pods/${n}`);
    const listed = await fs.readdir('/pods');
    expect(listed).to.deep.equal([...names].sort());
    listed.length = 0;
    expect(await fs.readdir('/pods')).to.have.length(
      names.length,
      'a caller changing its copy changes nothing',
    );
    await fs.rm('/pods/c');
    await fs.mkdir('/pods/0');
    await fs.writeFile('/pods/z', Buffer.from('x'));
    expect(await fs.readdir('/pods')).to.deep.equal([
      '0',
      'a',
      'b',
      'd',
      'e',
      'f',
      'g',
      'h',
      'i',
      'j',
      'k',
      'z',
    ]);
    await fs.rename('/pods/z', '/pods/y');
    expect(fs.listSync('/pods')).to.deep.equal(['0', 'a', 'b', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'y']);
  });

  it('stops a symlink loop with ELOOP and treats a dangling link as missing', async () => {
    const fs = new MemoryVolumeFS();
    await fs.symlink('b', '/a');
    await fs.symlink('a', '/b');
    expect(await code(fs.readFile('/a'))).to.equal('ELOOP');
    expect(fs.existsSync('/a')).to.equal(false);
    expect(fs.statSync('/a', false)?.kind).to.equal('symlink');
    await fs.symlink('/missing/target', '/c');
    expect(await fs.stat('/c')).to.equal(undefined);
    expect(await code(fs.realpath('/c'))).to.equal('ENOENT');
  });

  it('refuses relative paths, renaming a directory into itself and removing the root', async () => {
    const fs = new MemoryVolumeFS();
    expect(await code(fs.mkdir('relative/dir'))).to.equal('EINVAL');
    await fs.mkdir('/d/e');
    expect(await code(fs.rename('/d', '/d/e/f'))).to.equal('EINVAL');
    expect(await code(fs.rm('/'))).to.equal('EBUSY');
    await fs.rename('/d/e', '/e');
    expect(fs.listSync('/')).to.deep.equal(['d', 'e']);
  });

  it('applies its umask and owner to created entries; chmod on a link changes the target', async () => {
    const fs = new MemoryVolumeFS({ umask: 0o077, uid: 1000, gid: 2000 });
    await fs.mkdir('/d');
    await fs.writeFile('/d/f', Buffer.from(''), 0o666);
    await fs.symlink('f', '/d/l');
    expect(await fs.lstat('/d')).to.include({ mode: 0o700, uid: 1000, gid: 2000 });
    expect(await fs.lstat('/d/f')).to.include({ mode: 0o600 });
    expect(await fs.lstat('/d/l')).to.include({ mode: 0o777 });
    await fs.chmod('/d/l', 0o640);
    expect(await fs.lstat('/d/f')).to.include({ mode: 0o640 });
    expect(await fs.lstat('/d/l')).to.include({ mode: 0o777 });
  });

  it('resolves ".." through a link physically in the path given to it', async () => {
    const fs = new MemoryVolumeFS();
    await fs.mkdir('/x/y/z');
    await fs.writeFile('/x/y/file', Buffer.from('physical'));
    await fs.writeFile('/file', Buffer.from('lexical'));
    await fs.symlink('/x/y/z', '/link');
    expect(fs.readFileSync('/link/../file')?.toString()).to.equal('physical');
    expect(await fs.realpath('/link/..')).to.equal('/x/y');
  });
  it('keeps a directory of many entries: lists, replaces, renames and removes them', async () => {
    const fs = new MemoryVolumeFS();
    await fs.mkdir('/d');
    const names = Array.from({ length: 20 }, (_, i) => `f${String(i).padStart(2, '0')}`);
    for (const n of names) await fs.writeFile(`/d/${n}`, Buffer.from(n));
    expect(await fs.readdir('/d')).to.deep.equal(names);
    await fs.rename('/d/f00', '/d/f19');
    await fs.rename('/d/f01', '/f01');
    for (const n of names.slice(2, 10)) await fs.rm(`/d/${n}`);
    await fs.writeFile('/d/f18', Buffer.from('again'));
    expect(fs.listSync('/d')).to.deep.equal(names.slice(10));
    expect(fs.readFileSync('/d/f19')?.toString()).to.equal('f00');
    expect(fs.readFileSync('/d/f18')?.toString()).to.equal('again');
    expect(fs.listSync('/')).to.deep.equal(['d', 'f01']);
    for (const n of names.slice(10)) await fs.rm(`/d/${n}`);
    expect(fs.listSync('/d')).to.deep.equal([]);
    await fs.rename('/f01', '/d/only');
    expect(fs.listSync('/d')).to.deep.equal(['only']);
  });

  it('stores any bytes exactly and reports their count as the size', async () => {
    const fs = new MemoryVolumeFS();
    const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from('é✓\n')]);
    await fs.writeFile('/bin', bytes);
    await fs.writeFile('/u8', new Uint8Array([1, 2, 3]) as Buffer);
    expect((await fs.readFile('/bin')).equals(bytes)).to.equal(true);
    expect(fs.readFileSync('/u8')).to.deep.equal(Buffer.from([1, 2, 3]));
    expect((await fs.stat('/bin'))?.size).to.equal(bytes.length);
    await fs.writeFile('/empty', Buffer.alloc(0));
    expect(await fs.lstat('/empty')).to.deep.equal({ kind: 'file', mode: 0o644, uid: 0, gid: 0, size: 0 });
  });

  it('changes the mode and owner of the entry named only, and keeps long names whole', async () => {
    const fs = new MemoryVolumeFS();
    const uid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    await fs.mkdir(`/pods/${uid}/volumes`);
    await fs.writeFile(`/pods/${uid}/a`, Buffer.from('a'));
    await fs.writeFile(`/pods/${uid}/b`, Buffer.from('b'));
    await fs.chmod(`/pods/${uid}/a`, 0o600);
    await fs.chown(`/pods/${uid}/b`, { gid: 7 });
    expect(await fs.lstat(`/pods/${uid}/a`)).to.include({ mode: 0o600, uid: 0, gid: 0 });
    expect(await fs.lstat(`/pods/${uid}/b`)).to.include({ mode: 0o644, uid: 0, gid: 7 });
    expect(await fs.lstat(`/pods/${uid}/volumes`)).to.include({ mode: 0o755, gid: 0 });
    expect(fs.listSync('/pods')).to.deep.equal([uid]);
  });
});

describe('MemoryVolumeFS against the real file system', () => {
  // Random trees of directories, files and symlinks (relative and absolute, dangling and looping), built the
  // same in memory and in a temporary directory, then random paths with `.`, `..` and repeated slashes read
  // through both: the in-memory walk must land where the kernel's does, or fail with the same code.
  const outcome = async (p: Promise<unknown>): Promise<unknown> => {
    try {
      const v = await p;
      return Buffer.isBuffer(v) ? `bytes:${v.toString()}` : v;
    } catch (err) {
      return `error:${fsErrorCode(err)}`;
    }
  };

  it('resolves random paths to the same entries, or the same errors', async function () {
    this.timeout(20_000);
    const tmp = await mkdtemp(path.join(tmpdir(), 'kubelet-operator-memfs-'));
    try {
      for (let seed = 1; seed <= 12; seed++) {
        const rnd = mulberry32(seed);
        const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
        // Two levels below the temporary directory, so that up to two `..` stay inside it.
        const root = path.join(tmp, `s${seed}`, 'x', 'root');
        const mem = new MemoryVolumeFS({ umask: UMASK });
        const real = new RealVolumeFS();
        const names = ['a', 'b', 'c', 'dd', 'long-name-of-thirteen-or-more'];
        const dirs = [root];
        for (const fs of [mem, real]) await fs.mkdir(root);
        for (let i = 0; i < 25; i++) {
          const at = `${pick(dirs)}/${pick(names)}`;
          const kind = rnd();
          const link = pick(['a', 'b/c', '../a', `${root}/b`, `${root}/dd/a`, './c', 'missing']);
          const results: unknown[] = [];
          for (const fs of [mem, real]) {
            if (kind < 0.45) results.push(await outcome(fs.mkdir(at)));
            else if (kind < 0.75) results.push(await outcome(fs.writeFile(at, Buffer.from(at))));
            else results.push(await outcome(fs.symlink(link, at)));
          }
          expect(
            results[0],
            `building ${at} (${kind < 0.45 ? 'mkdir' : kind < 0.75 ? 'write' : `symlink ${link}`})`,
          ).to.deep.equal(results[1]);
          if (kind < 0.45 && results[0] === undefined) dirs.push(at);
        }
        for (let i = 0; i < 150; i++) {
          let rel = '';
          let ups = 0;
          for (let n = 1 + Math.floor(rnd() * 4); n > 0; n--) {
            const r = rnd();
            const part = r < 0.1 && ups < 2 ? (ups++, '..') : r < 0.2 ? '.' : pick(names);
            rel += (rnd() < 0.1 ? '//' : '/') + part;
          }
          const p = root + rel;
          for (const read of [
            (fs: VolumeFS) => fs.realpath(p),
            (fs: VolumeFS) => fs.readFile(p),
            (fs: VolumeFS) => fs.stat(p).then((s) => s?.kind),
            (fs: VolumeFS) => fs.lstat(p).then((s) => s?.kind),
          ]) {
            expect(await outcome(read(mem)), `${p} (seed ${seed})`).to.deep.equal(await outcome(read(real)));
          }
        }
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});

/** A small seeded generator, so that a failure names its seed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('MemoryVolumeFS: files that begin alike', () => {
  const header = '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n';
  const hosts = (i: number): string =>
    `${header}fe00::0\tip6-localnet\n10.88.${i >> 8}.${i & 255}\tpod-${i}\n`;
  /** A pod's hosts file as the kubelet writes it. */
  const podHosts = (i: number): string =>
    managedHostsFileContent([`10.88.${i >> 8}.${i & 255}`], `pod-${i}`, '', undefined);

  it('reads back every byte as written, whatever the lines', async () => {
    const fs = new MemoryVolumeFS();
    await fs.mkdir('/d');
    const rnd = mulberry32(3);
    const cases = [
      hosts(1),
      hosts(2).slice(0, -1), // no final newline
      `${header}\n`, // the last line empty
      'x'.repeat(64) + '\n' + 'y', // the head exactly as long as the shortest shared one
      'x'.repeat(63) + '\n' + 'y',
      '\n'.repeat(100),
      header.repeat(3),
    ];
    for (let k = 0; k < 40; k++) {
      // Any bytes, newlines among them.
      const bytes = Buffer.from(
        Array.from({ length: Math.floor(rnd() * 300) }, () => (rnd() < 0.1 ? 10 : Math.floor(rnd() * 256))),
      );
      cases.push(bytes.toString('latin1'));
    }
    for (const [i, text] of cases.entries()) {
      const bytes = Buffer.from(text, 'latin1');
      await fs.writeFile(`/d/f${i}`, bytes);
      expect((await fs.readFile(`/d/f${i}`)).equals(bytes), `case ${i}`).to.equal(true);
      expect(fs.readFileSync(`/d/f${i}`)?.equals(bytes), `case ${i}`).to.equal(true);
      expect((await fs.stat(`/d/f${i}`))?.size, `case ${i}`).to.equal(bytes.length);
    }
    // Rewritten with another head: the new bytes, nothing of the old.
    await fs.writeFile('/d/f0', Buffer.from(`${'z'.repeat(80)}\n${hosts(9)}`));
    expect((await fs.readFile('/d/f0')).toString()).to.equal(`${'z'.repeat(80)}\n${hosts(9)}`);
  });

  it('keeps one copy of the part before the last line', async () => {
    const files = 20_000;
    const fs = new MemoryVolumeFS();
    for (let d = 0; d < 40; d++) await fs.mkdir(`/pods/d${d}`);
    const dirsOnly = heapUsedAfterGC();
    for (let i = 0; i < files; i++)
      await fs.writeFile(`/pods/d${i % 40}/etc-hosts-${i}`, Buffer.from(podHosts(i)));
    const perFile = (heapUsedAfterGC() - dirsOnly) / files;
    expect((await fs.readFile('/pods/d7/etc-hosts-7')).toString()).to.equal(podHosts(7)); // fs alive to here
    // All a file keeps of its own (its entry, name and node, its last line and the pair holding it) takes less
    // than a whole copy of its bytes would: measured 2026-11-30, 181 bytes per file of 199; 332 with a copy.
    expect(perFile, `${perFile.toFixed(0)} bytes per file`).to.be.below(podHosts(0).length);
  });
});

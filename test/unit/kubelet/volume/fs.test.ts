import { expect } from 'chai';
import { type VolumeFS, VolumeFSError, fsErrorCode, isNotExist } from '../../../../src/kubelet/volume/fs.js';
import { CAN_CHOWN, FS_KINDS, type FsFixture, UMASK } from './fixtures.js';
import { rejection } from '../../../support/throws.js';

/** The file-system error code `p` rejects with. */
const code = async (p: Promise<unknown>): Promise<string | undefined> => fsErrorCode(await rejection(p));

describe('VolumeFS errors', () => {
  it('carry a Node-style code that fsErrorCode and isNotExist read', () => {
    const e = new VolumeFSError('ENOENT', 'open', '/x');
    expect(e.message).to.equal("ENOENT: no such file or directory, open '/x'");
    expect(fsErrorCode(e)).to.equal('ENOENT');
    expect(isNotExist(e)).to.equal(true);
    expect(fsErrorCode(new Error('plain'))).to.equal(undefined);
    expect(fsErrorCode('nope')).to.equal(undefined);
  });
});

for (const kind of FS_KINDS) {
  describe(`VolumeFS contract: ${kind.name}`, () => {
    let fx: FsFixture;
    let fs: VolumeFS;
    let root: string;
    beforeEach(async () => {
      fx = await kind.make();
      fs = fx.fs;
      root = fx.root;
    });
    afterEach(() => fx.cleanup());

    it('mkdir is recursive, accepts an existing directory and refuses a file in the way', async () => {
      await fs.mkdir(`${root}/a/b/c`, 0o750);
      await fs.mkdir(`${root}/a/b/c`);
      expect((await fs.lstat(`${root}/a/b/c`))?.kind).to.equal('dir');
      expect((await fs.lstat(`${root}/a/b/c`))?.mode).to.equal(0o750 & ~UMASK);
      await fs.writeFile(`${root}/f`, Buffer.from('x'));
      expect(await code(fs.mkdir(`${root}/f`))).to.equal('EEXIST');
      expect(await code(fs.mkdir(`${root}/f/g`))).to.be.oneOf(['ENOTDIR', 'EEXIST']);
    });

    it('writeFile creates with the mode minus umask, truncates on rewrite, chmod sets exact bits', async () => {
      await fs.writeFile(`${root}/f`, Buffer.from('hello'), 0o666);
      expect((await fs.lstat(`${root}/f`))?.mode).to.equal(0o666 & ~UMASK);
      await fs.writeFile(`${root}/f`, Buffer.from('hi'), 0o600);
      expect((await fs.readFile(`${root}/f`)).toString()).to.equal('hi');
      expect((await fs.lstat(`${root}/f`))?.mode, 'mode only applies on create').to.equal(0o666 & ~UMASK);
      await fs.chmod(`${root}/f`, 0o2751);
      expect((await fs.lstat(`${root}/f`))?.mode).to.equal(0o2751);
      expect(await code(fs.writeFile(`${root}/missing/f`, Buffer.from('')))).to.equal('ENOENT');
      expect(await code(fs.readFile(`${root}/missing`))).to.equal('ENOENT');
      expect(await code(fs.readFile(root))).to.equal('EISDIR');
    });

    it('resolves relative symlinks against the link directory, through chains and ..', async () => {
      await fs.mkdir(`${root}/..2026_01_02_03_04_05.000000000/sub`);
      await fs.writeFile(`${root}/..2026_01_02_03_04_05.000000000/sub/key`, Buffer.from('v1'));
      await fs.symlink('..2026_01_02_03_04_05.000000000', `${root}/..data`);
      await fs.symlink('..data/sub', `${root}/sub`);
      expect((await fs.readFile(`${root}/sub/key`)).toString()).to.equal('v1');
      expect(await fs.readdir(`${root}/sub`)).to.deep.equal(['key']);
      // ".." after a link is physical: it leaves the link's target, not the link's directory.
      await fs.symlink('../sub/key', `${root}/..2026_01_02_03_04_05.000000000/sub/again`);
      expect((await fs.readFile(`${root}/sub/again`)).toString()).to.equal('v1');
      expect(await fs.realpath(`${root}/sub/key`)).to.equal(
        `${await fs.realpath(root)}/..2026_01_02_03_04_05.000000000/sub/key`,
      );
      expect(await fs.readlink(`${root}/..data`)).to.equal('..2026_01_02_03_04_05.000000000');
      expect(await code(fs.readlink(`${root}/sub/key`))).to.equal('EINVAL');
    });

    it('follows absolute symlink targets', async () => {
      await fs.mkdir(`${root}/etc`);
      await fs.writeFile(`${root}/etc/hosts`, Buffer.from('127.0.0.1 localhost\n'));
      await fs.symlink(`${root}/etc/hosts`, `${root}/hosts`);
      expect((await fs.readFile(`${root}/hosts`)).toString()).to.equal('127.0.0.1 localhost\n');
    });

    it('lstat does not follow a symlink, stat does, and both are undefined for a missing path', async () => {
      await fs.writeFile(`${root}/f`, Buffer.from('abc'));
      await fs.symlink('f', `${root}/l`);
      await fs.symlink('nowhere', `${root}/dangling`);
      expect(await fs.lstat(`${root}/l`)).to.include({ kind: 'symlink', size: 1 });
      expect(await fs.stat(`${root}/l`)).to.include({ kind: 'file', size: 3 });
      expect(await fs.lstat(`${root}/dangling`)).to.include({ kind: 'symlink' });
      expect(await fs.stat(`${root}/dangling`)).to.equal(undefined);
      expect(await fs.lstat(`${root}/missing`)).to.equal(undefined);
      expect(await fs.lstat(`${root}/missing/deeper`)).to.equal(undefined);
      expect(await fs.lstat(`${root}/f/under-a-file`), 'ENOTDIR is missing too').to.equal(undefined);
      expect(await fs.stat(`${root}/l/under-a-file`)).to.equal(undefined);
      expect(await code(fs.symlink('x', `${root}/f`))).to.equal('EEXIST');
    });

    it('rename replaces a symlink atomically and refuses to put a file over a directory', async () => {
      await fs.mkdir(`${root}/v1`);
      await fs.mkdir(`${root}/v2`);
      await fs.symlink('v1', `${root}/..data`);
      await fs.symlink('v2', `${root}/..data_tmp`);
      await fs.rename(`${root}/..data_tmp`, `${root}/..data`);
      expect(await fs.readlink(`${root}/..data`)).to.equal('v2');
      expect(await fs.lstat(`${root}/..data_tmp`)).to.equal(undefined);
      await fs.writeFile(`${root}/f`, Buffer.from(''));
      expect(await code(fs.rename(`${root}/f`, `${root}/v1`))).to.equal('EISDIR');
      await fs.writeFile(`${root}/v2/x`, Buffer.from(''));
      expect(await code(fs.rename(`${root}/v1`, `${root}/v2`))).to.be.oneOf(['ENOTEMPTY', 'EEXIST']);
      expect(await code(fs.rename(`${root}/missing`, `${root}/y`))).to.equal('ENOENT');
    });

    it('rm removes trees and links (never their targets) and ignores a missing path', async () => {
      await fs.mkdir(`${root}/d/e`);
      await fs.writeFile(`${root}/d/e/f`, Buffer.from(''));
      await fs.symlink('d', `${root}/l`);
      await fs.rm(`${root}/l`);
      expect(await fs.lstat(`${root}/d/e/f`)).to.not.equal(undefined);
      await fs.rm(`${root}/d`);
      expect(await fs.lstat(`${root}/d`)).to.equal(undefined);
      await fs.rm(`${root}/d`);
      expect(await fs.readdir(root)).to.deep.equal([]);
    });

    it('chown changes the entry itself, a symlink included', async function () {
      if (!CAN_CHOWN) this.skip();
      await fs.writeFile(`${root}/f`, Buffer.from(''));
      await fs.symlink('f', `${root}/l`);
      await fs.chown(`${root}/l`, { gid: 1234 });
      expect((await fs.lstat(`${root}/l`))?.gid).to.equal(1234);
      expect((await fs.lstat(`${root}/f`))?.gid).to.not.equal(1234);
      await fs.chown(`${root}/f`, { uid: 4321 });
      expect(await fs.lstat(`${root}/f`)).to.include({ uid: 4321 });
    });

    it('readdir lists sorted names and refuses a file', async () => {
      for (const n of ['b', 'a', '..data']) await fs.writeFile(`${root}/${n}`, Buffer.from(''));
      expect(await fs.readdir(root)).to.deep.equal(['..data', 'a', 'b']);
      expect(await code(fs.readdir(`${root}/a`))).to.equal('ENOTDIR');
    });
  });
}

import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import type { EmptyDirVolumeSource } from '../../../../src/api/volumes.js';
import {
  EmptyDirPerm,
  emptyDirMemorySize,
  setUpEmptyDir,
  tearDownVolumeDir,
} from '../../../../src/kubelet/volume/emptydir.js';
import { PluginDirs } from '../../../../src/kubelet/volume/podpaths.js';
import { ctxOf, dirs, harness, modeOf, podWith, UID } from '../volumemanager/fixtures.js';

const Ki = 1024;
const Mi = 1024 * Ki;
const Gi = 1024 * Mi;

function podWithLimits(limits: (string | undefined)[], init: (string | undefined)[] = []): Pod {
  const c = (name: string, l: string | undefined): Container => ({
    name,
    image: 'busybox',
    ...(l !== undefined ? { resources: { limits: { memory: l } } } : {}),
  });
  const p = podWith([{ name: 'cache', emptyDir: { medium: 'Memory' } }]);
  p.spec.containers = limits.map((l, i) => c(`c${i}`, l));
  if (init.length > 0) p.spec.initContainers = init.map((l, i) => c(`i${i}`, l));
  return p;
}

describe('volumemanager/emptydir', () => {
  describe('emptyDirMemorySize (kubelet calculateEmptyDirMemorySize)', () => {
    const table: [string, Pod, EmptyDirVolumeSource, Record<string, string | number>, number | undefined][] =
      [
        ['node allocatable when nothing is lower', podWithLimits([undefined]), {}, { memory: '8Gi' }, 8 * Gi],
        ['node allocatable given as a number', podWithLimits([undefined]), {}, { memory: 2 * Gi }, 2 * Gi],
        [
          'the pod limit: the sum of every container limit',
          podWithLimits(['1Gi', '512Mi']),
          {},
          { memory: '8Gi' },
          1.5 * Gi,
        ],
        [
          'no pod limit when one container has none',
          podWithLimits(['1Gi', undefined]),
          {},
          { memory: '8Gi' },
          8 * Gi,
        ],
        [
          'an init container with a bigger limit raises the pod limit',
          podWithLimits(['1Gi'], ['4Gi']),
          {},
          { memory: '8Gi' },
          4 * Gi,
        ],
        [
          'a smaller init container limit changes nothing',
          podWithLimits(['1Gi'], ['128Mi']),
          {},
          { memory: '8Gi' },
          1 * Gi,
        ],
        [
          'a pod limit above the node is capped by the node',
          podWithLimits(['16Gi']),
          {},
          { memory: '8Gi' },
          8 * Gi,
        ],
        [
          'the sizeLimit when below the pod limit',
          podWithLimits(['1Gi']),
          { sizeLimit: '256Mi' },
          { memory: '8Gi' },
          256 * Mi,
        ],
        [
          'the sizeLimit is ignored above the pod limit',
          podWithLimits(['1Gi']),
          { sizeLimit: '2Gi' },
          { memory: '8Gi' },
          1 * Gi,
        ],
        [
          'the sizeLimit is ignored above the node',
          podWithLimits([undefined]),
          { sizeLimit: '16Gi' },
          { memory: '8Gi' },
          8 * Gi,
        ],
        [
          'a zero sizeLimit is ignored',
          podWithLimits([undefined]),
          { sizeLimit: '0' },
          { memory: '8Gi' },
          8 * Gi,
        ],
        ['a numeric sizeLimit', podWithLimits([undefined]), { sizeLimit: 1000 }, { memory: '8Gi' }, 1000],
        ['nothing known: no size (the kernel default)', podWithLimits([undefined]), {}, {}, undefined],
        ['no node memory: the pod limit', podWithLimits(['64Mi']), {}, {}, 64 * Mi],
        [
          'no node memory: the sizeLimit',
          podWithLimits([undefined]),
          { sizeLimit: '1Gi' },
          { cpu: '4' },
          1 * Gi,
        ],
      ];
    for (const [what, pod, source, alloc, want] of table) {
      it(what, () => expect(emptyDirMemorySize(pod, source, alloc)).to.equal(want));
    }
  });

  describe('setUpEmptyDir', () => {
    it('creates the directory 0777 whatever the umask, with a ready marker, on the node disk', async () => {
      const h = harness({ umask: 0o077 });
      const r = await setUpEmptyDir(ctxOf(h), podWith([]), 'cache', {});
      expect(r).to.deep.equal({
        ok: true,
        volume: { hostPath: dirs.emptyDir('cache'), readOnly: false, selinuxRelabel: true },
      });
      expect(await modeOf(h.fs, dirs.emptyDir('cache'))).to.equal(EmptyDirPerm);
      expect(EmptyDirPerm).to.equal(0o777);
      const ready = await h.fs.lstat(`${dirs.emptyDirMeta('cache')}/ready`);
      expect(ready?.kind).to.equal('file');
      expect(h.mounter.mountCalls).to.deep.equal([]);
    });

    it('medium Memory mounts a tmpfs of the computed size and chmods its root 0777', async () => {
      const h = harness({ allocatable: { memory: '8Gi' } });
      const pod = podWithLimits(['1Gi']);
      const r = await setUpEmptyDir(ctxOf(h), pod, 'cache', { medium: 'Memory', sizeLimit: '100Mi' });
      expect(r.ok).to.equal(true);
      expect(h.mounter.mountCalls).to.deep.equal([{ dir: dirs.emptyDir('cache'), sizeBytes: 100 * Mi }]);
      expect(h.mounter.mounts.get(dirs.emptyDir('cache'))).to.deep.equal({
        fstype: 'tmpfs',
        sizeBytes: 100 * Mi,
      });
      expect(await modeOf(h.fs, dirs.emptyDir('cache'))).to.equal(0o777);
    });

    const refusedMedia: [string, string][] = [
      ['HugePages', 'medium HugePages: hugePages storage is not supported by this node'],
      ['HugePages-2Mi', 'medium HugePages-2Mi: hugePages storage is not supported by this node'],
      ['Disk', 'unknown storage medium "Disk"'],
    ];
    for (const [medium, message] of refusedMedia) {
      it(`refuses medium ${medium}: ${message}`, async () => {
        const h = harness();
        const r = await setUpEmptyDir(ctxOf(h), podWith([]), 'cache', { medium });
        expect(r).to.deep.equal({ ok: false, stage: 'mount', message });
        expect(await h.fs.lstat(dirs.emptyDir('cache'))).to.equal(undefined);
      });
    }

    it('fails a Memory emptyDir on a node that may not mount tmpfs (its size could not be honoured)', async () => {
      const h = harness({ tmpfsAllowed: false });
      const r = await setUpEmptyDir(ctxOf(h), podWith([]), 'cache', { medium: 'Memory' });
      expect(r).to.deep.equal({
        ok: false,
        stage: 'mount',
        message: `memory storage requested, but this operator cannot mount tmpfs at ${dirs.emptyDir('cache')}`,
      });
      expect(h.mounter.mountCalls).to.deep.equal([]);
    });

    it('fails a Memory emptyDir when the mount is refused, with the mounter error', async () => {
      const h = harness();
      h.mounter.refuse = new Error('mount: permission denied');
      const r = await setUpEmptyDir(ctxOf(h), podWith([]), 'cache', { medium: 'Memory' });
      expect(r).to.deep.equal({
        ok: false,
        stage: 'mount',
        message: `failed to mount tmpfs at ${dirs.emptyDir('cache')}: mount: permission denied`,
      });
      // Not ready: the next attempt tries again.
      expect(await h.fs.lstat(`${dirs.emptyDirMeta('cache')}/ready`)).to.equal(undefined);
    });

    const ownership: [string, 'Always' | 'OnRootMismatch' | undefined][] = [
      ['no policy', undefined],
      ['Always', 'Always'],
      ['OnRootMismatch', 'OnRootMismatch'],
    ];
    for (const [what, policy] of ownership) {
      it(`gives the fsGroup the directory, with setgid (${what})`, async () => {
        const h = harness();
        const pod = podWith([], { fsGroup: 2000 });
        if (policy) pod.spec.securityContext!.fsGroupChangePolicy = policy;
        await setUpEmptyDir(ctxOf(h), pod, 'cache', {});
        const st = await h.fs.stat(dirs.emptyDir('cache'));
        expect(st?.gid).to.equal(2000);
        expect(st?.mode).to.equal(0o2777);
      });
    }

    it('leaves the owner alone without an fsGroup', async () => {
      const h = harness();
      await setUpEmptyDir(ctxOf(h), podWith([]), 'cache', {});
      const st = await h.fs.stat(dirs.emptyDir('cache'));
      expect(st?.gid).to.equal(0);
      expect(st?.mode).to.equal(0o777);
    });

    it('keeps a ready volume as it is (contents, mode), without setting it up again', async () => {
      const h = harness();
      const ctx = ctxOf(h);
      await setUpEmptyDir(ctx, podWith([]), 'cache', {});
      await h.fs.writeFile(`${dirs.emptyDir('cache')}/data`, Buffer.from('kept'));
      await h.fs.chmod(dirs.emptyDir('cache'), 0o700);
      const r = await setUpEmptyDir(ctx, podWith([]), 'cache', {});
      expect(r.ok).to.equal(true);
      expect((await h.fs.readFile(`${dirs.emptyDir('cache')}/data`)).toString()).to.equal('kept');
      expect(await modeOf(h.fs, dirs.emptyDir('cache'))).to.equal(0o700);
    });

    it('sets up again a ready volume whose directory is gone', async () => {
      const h = harness();
      const ctx = ctxOf(h);
      await setUpEmptyDir(ctx, podWith([]), 'cache', {});
      await h.fs.rm(dirs.emptyDir('cache'));
      expect((await setUpEmptyDir(ctx, podWith([]), 'cache', {})).ok).to.equal(true);
      expect((await h.fs.stat(dirs.emptyDir('cache')))?.kind).to.equal('dir');
    });

    it('mounts again a ready Memory volume whose tmpfs is gone, and only then', async () => {
      const h = harness();
      const ctx = ctxOf(h);
      await setUpEmptyDir(ctx, podWith([]), 'cache', { medium: 'Memory' });
      await setUpEmptyDir(ctx, podWith([]), 'cache', { medium: 'Memory' });
      expect(h.mounter.mountCalls).to.have.length(1);
      await h.mounter.unmount(dirs.emptyDir('cache'));
      await setUpEmptyDir(ctx, podWith([]), 'cache', { medium: 'Memory' });
      expect(h.mounter.mountCalls).to.have.length(2);
      expect(await h.mounter.mountPoint(dirs.emptyDir('cache'))).to.deep.equal({ fstype: 'tmpfs' });
    });
  });

  describe('tearDownVolumeDir', () => {
    it('unmounts nested mounts and the tmpfs, then removes the directory and its metadata', async () => {
      const h = harness();
      const ctx = ctxOf(h);
      await setUpEmptyDir(ctx, podWith([]), 'cache', { medium: 'Memory' });
      const nested = `${dirs.emptyDir('cache')}/inner`;
      await h.fs.mkdir(nested);
      await h.mounter.mountTmpfs(nested);
      await tearDownVolumeDir(ctx, UID, PluginDirs.emptyDir, 'cache');
      expect(h.mounter.unmountCalls).to.deep.equal([nested, dirs.emptyDir('cache')]);
      expect(h.mounter.mounts.size).to.equal(0);
      expect(await h.fs.lstat(dirs.emptyDir('cache'))).to.equal(undefined);
      expect(await h.fs.lstat(dirs.emptyDirMeta('cache'))).to.equal(undefined);
    });

    it('is idempotent', async () => {
      const h = harness();
      await tearDownVolumeDir(ctxOf(h), UID, PluginDirs.emptyDir, 'never-set-up');
      await tearDownVolumeDir(ctxOf(h), UID, PluginDirs.emptyDir, 'never-set-up');
    });
  });
});

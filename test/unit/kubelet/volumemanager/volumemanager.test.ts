import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import type { Volume } from '../../../../src/api/volumes.js';
import {
  MountBackOffInitialMs,
  MountBackOffMaxMs,
  MountConcurrency,
  PodAttachAndMountTimeoutMs,
  podVolumeNames,
  type MountPodResult,
} from '../../../../src/kubelet/volumemanager/volumemanager.js';
import { b64, dirs, harness, modeOf, NS, PODS, podWith, text, UID, type Harness } from './fixtures.js';

const SUPPORTED =
  'emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, csi, image';
const cm = (name: string, configMap = 'app-config'): Volume => ({ name, configMap: { name: configMap } });

function failed(r: MountPodResult): { message: string; report: boolean } {
  if (r.ok) return expect.fail('expected mountPod to fail');
  return { message: r.message, report: r.report };
}

function failedMounts(h: Harness): string[] {
  return h.events.filter((e) => e.reason === 'FailedMount').map((e) => e.message);
}

describe('volumemanager/volumemanager', () => {
  it('PodAttachAndMountTimeoutMs is the kubelet podAttachAndMountTimeout (2 min 3 s)', () => {
    expect(PodAttachAndMountTimeoutMs).to.equal(123_000);
  });

  describe('podVolumeNames', () => {
    it('collects the volumes mounted by init, regular and ephemeral containers', () => {
      const pod: Pod = {
        metadata: { name: 'p' },
        spec: {
          initContainers: [{ name: 'i', image: 'b', volumeMounts: [{ name: 'seed', mountPath: '/s' }] }],
          containers: [
            {
              name: 'a',
              image: 'b',
              volumeMounts: [
                { name: 'data', mountPath: '/d' },
                { name: 'seed', mountPath: '/s' },
              ],
            },
            { name: 'b', image: 'b' },
          ],
          ephemeralContainers: [
            { name: 'debug', image: 'b', volumeMounts: [{ name: 'logs', mountPath: '/l' }] },
          ],
        },
      };
      expect([...podVolumeNames(pod)].sort()).to.deep.equal(['data', 'logs', 'seed']);
    });

    it('is empty for a pod without mounts', () => {
      expect(
        podVolumeNames({ metadata: {}, spec: { containers: [{ name: 'a', image: 'b' }] } }).size,
      ).to.equal(0);
    });
  });

  describe('mountPod', () => {
    it('sets up every used volume, creates the pod directory 0750, and reports the mounted volumes', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { k: 'v' } });
      h.sources.secrets.set(`${NS}/db`, { data: { pw: b64('x') } });
      await h.fs.mkdir('/srv/shared');
      const volumes: Volume[] = [
        { name: 'cache', emptyDir: {} },
        cm('config'),
        { name: 'creds', secret: { secretName: 'db' } },
        { name: 'shared', hostPath: { path: '/srv/shared', type: 'Directory' } },
      ];
      const r = await h.vm.mountPod(podWith(volumes));
      if (!r.ok) return expect.fail(r.message);
      expect(Object.fromEntries(r.volumes)).to.deep.equal({
        cache: { hostPath: dirs.emptyDir('cache'), readOnly: false, selinuxRelabel: true, kind: 'emptyDir' },
        config: {
          hostPath: dirs.configMap('config'),
          readOnly: true,
          selinuxRelabel: true,
          kind: 'configMap',
        },
        creds: { hostPath: dirs.secret('creds'), readOnly: true, selinuxRelabel: true, kind: 'secret' },
        shared: { hostPath: '/srv/shared', readOnly: false, selinuxRelabel: false, kind: 'hostPath' },
      });
      expect(h.vm.mountedVolumes(UID)).to.equal(r.volumes);
      expect(await modeOf(h.fs, `${PODS}/${UID}`)).to.equal(0o750);
      expect(h.events).to.deep.equal([]);
      expect(h.vm.podsDir).to.equal(PODS);
    });

    it('ignores volumes no container mounts, even broken or unsupported ones', async () => {
      const h = harness();
      const volumes: Volume[] = [
        { name: 'used', emptyDir: {} },
        cm('unused-missing'),
        { name: 'unused-nfs', nfs: { server: 's', path: '/' } },
        { name: 'unused-pvc', persistentVolumeClaim: { claimName: 'nope' } },
      ];
      const r = await h.vm.mountPod(podWith(volumes, { mounts: ['used'] }));
      if (!r.ok) return expect.fail(r.message);
      expect([...r.volumes.keys()]).to.deep.equal(['used']);
      expect(h.sources.calls).to.deep.equal([]);
      expect(h.events).to.deep.equal([]);
      expect(await h.fs.lstat(dirs.configMap('unused-missing'))).to.equal(undefined);
    });

    it('a pod without volumes is mounted at once', async () => {
      const h = harness();
      const r = await h.vm.mountPod(podWith([]));
      expect(r.ok).to.equal(true);
    });

    describe('SetUp failures: the FailedMount event of each attempt', () => {
      const table: [string, Volume, (h: Harness) => void | Promise<void>, string][] = [
        [
          'configMap not found',
          cm('x', 'y'),
          () => undefined,
          'MountVolume.SetUp failed for volume "x" : configmap "y" not found',
        ],
        [
          'secret not found',
          { name: 'creds', secret: { secretName: 'db' } },
          () => undefined,
          'MountVolume.SetUp failed for volume "creds" : secret "db" not found',
        ],
        [
          'configMap key missing',
          { name: 'x', configMap: { name: 'y', items: [{ key: 'nokey', path: 'p' }] } },
          (h) => void h.sources.configMaps.set(`${NS}/y`, { data: {} }),
          'MountVolume.SetUp failed for volume "x" : configmap references non-existent config key: nokey',
        ],
        [
          'hostPath of the wrong type',
          { name: 'host', hostPath: { path: '/srv/file', type: 'Directory' } },
          async (h) => {
            await h.fs.mkdir('/srv');
            await h.fs.writeFile('/srv/file', Buffer.alloc(0));
          },
          'MountVolume.SetUp failed for volume "host" : hostPath type check failed: /srv/file is not a directory, it\'s a File',
        ],
        [
          'hostPath missing',
          { name: 'host', hostPath: { path: '/srv/none', type: 'File' } },
          () => undefined,
          'MountVolume.SetUp failed for volume "host" : hostPath /srv/none doesn\'t exist',
        ],
        [
          'emptyDir with HugePages',
          { name: 'huge', emptyDir: { medium: 'HugePages' } },
          () => undefined,
          'MountVolume.SetUp failed for volume "huge" : medium HugePages: hugePages storage is not supported by this node',
        ],
        [
          'projected token refused',
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
          (h) => {
            h.token.value = new Error('serviceaccounts "builder" not found');
          },
          'MountVolume.SetUp failed for volume "tok" : serviceaccounts "builder" not found',
        ],
      ];
      for (const [what, vol, arrange, message] of table) {
        it(`${what}: ${message}`, async () => {
          const h = harness();
          await arrange(h);
          const r = failed(await h.vm.mountPod(podWith([vol])));
          expect(r).to.deep.equal({
            report: false,
            message: `unmounted volumes=[${vol.name}], unattached volumes=[], failed to process volumes=[]`,
          });
          expect(h.events).to.deep.equal([{ pod: 'web-0', type: 'Warning', reason: 'FailedMount', message }]);
        });
      }

      it('a plugin that throws is a SetUp failure with the error message', async () => {
        const h = harness();
        await h.fs.mkdir(`${PODS}/${UID}/volumes/kubernetes.io~empty-dir`);
        await h.fs.writeFile(dirs.emptyDir('cache'), Buffer.from('in the way'));
        failed(await h.vm.mountPod(podWith([{ name: 'cache', emptyDir: {} }])));
        expect(failedMounts(h)).to.have.length(1);
        expect(failedMounts(h)[0]).to.match(/^MountVolume\.SetUp failed for volume "cache" : EEXIST: /);
      });

      it('records one event per failing volume per attempt', async () => {
        const h = harness();
        const pod = podWith([cm('a', 'cm-a'), cm('b', 'cm-b')]);
        await h.vm.mountPod(pod);
        h.clock.advance(MountBackOffInitialMs);
        await h.vm.mountPod(pod);
        expect(failedMounts(h).sort()).to.deep.equal([
          'MountVolume.SetUp failed for volume "a" : configmap "cm-a" not found',
          'MountVolume.SetUp failed for volume "a" : configmap "cm-a" not found',
          'MountVolume.SetUp failed for volume "b" : configmap "cm-b" not found',
          'MountVolume.SetUp failed for volume "b" : configmap "cm-b" not found',
        ]);
      });

      it('tries a failed volume again only after its exponential back-off (500 ms doubling to 2 min 2 s)', async () => {
        const h = harness();
        const pod = podWith([cm('a', 'cm-a'), { name: 'ok', emptyDir: {} }]);
        const gets = () => h.sources.calls.filter((c) => c === `configmaps/${NS}/cm-a`).length;
        const attemptsAt: number[] = [];
        const start = h.clock.now();
        // The pod syncs every 100 ms for five minutes; the volume is tried at 0, 0.5, 1.5, 3.5, ... s.
        for (let t = 0; t <= 300_000; t += 100) {
          const before = gets();
          const r = failed(await h.vm.mountPod(pod));
          expect(r.message).to.match(/^unmounted volumes=\[a\]/);
          if (gets() > before) attemptsAt.push(h.clock.now() - start);
          h.clock.advance(100);
        }
        const gaps = attemptsAt.slice(1).map((t, i) => t - attemptsAt[i]!);
        expect(gaps.slice(0, 8)).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 32000, 64000]);
        expect(Math.max(...gaps)).to.be.at.most(MountBackOffMaxMs + 100);
        expect(gaps.at(-1)).to.be.at.least(MountBackOffMaxMs);
        expect(failedMounts(h)).to.have.length(attemptsAt.length);

        // Once the ConfigMap exists, the next attempt after the back-off mounts it, and the back-off is gone.
        h.sources.configMaps.set(`${NS}/cm-a`, { data: { k: 'v' } });
        h.clock.advance(MountBackOffMaxMs);
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      });

      it('sets up at most MountConcurrency volumes of one pod at once', async () => {
        const h = harness();
        let inFlight = 0;
        let most = 0;
        const get = h.sources.getConfigMap.bind(h.sources);
        h.sources.getConfigMap = async (ns, name) => {
          most = Math.max(most, ++inFlight);
          await new Promise((r) => setImmediate(r));
          inFlight--;
          return get(ns, name);
        };
        const pod = podWith(Array.from({ length: 20 }, (_, i) => cm(`v${i}`, `cm-${i}`)));
        const r = failed(await h.vm.mountPod(pod));
        expect(r.message).to.include('unmounted volumes=[v0 v1 v10');
        expect(h.sources.calls).to.have.length(20);
        expect(most).to.equal(MountConcurrency);
      });

      it('an event recorder that throws is logged, never fatal', async () => {
        const h = harness();
        h.deps.record = () => {
          throw new Error('queue full');
        };
        const r = failed(await h.vm.mountPod(podWith([cm('x')])));
        expect(r.report).to.equal(false);
        expect(h.warnings).to.deep.equal([
          { msg: 'event recorder failed', meta: { reason: 'FailedMount', err: 'queue full' } },
        ]);
      });
    });

    describe('the `Unable to attach or mount volumes` report', () => {
      it('mount failures are reported only after PodAttachAndMountTimeoutMs of waiting, then the clock starts again', async () => {
        const h = harness();
        const pod = podWith([cm('b', 'cm-b'), cm('a', 'cm-a'), { name: 'ok', emptyDir: {} }]);
        const lists = 'unmounted volumes=[a b], unattached volumes=[], failed to process volumes=[]';
        expect(failed(await h.vm.mountPod(pod))).to.deep.equal({ report: false, message: lists });
        h.clock.advance(PodAttachAndMountTimeoutMs - 1);
        expect(failed(await h.vm.mountPod(pod))).to.deep.equal({ report: false, message: lists });
        h.clock.advance(1);
        expect(failed(await h.vm.mountPod(pod))).to.deep.equal({
          report: true,
          message: `${lists}: context deadline exceeded`,
        });
        expect(failed(await h.vm.mountPod(pod)).report).to.equal(false);
        h.clock.advance(PodAttachAndMountTimeoutMs - 1);
        expect(failed(await h.vm.mountPod(pod)).report).to.equal(false);
        h.clock.advance(1);
        expect(failed(await h.vm.mountPod(pod))).to.deep.equal({
          report: true,
          message: `${lists}: context deadline exceeded`,
        });
      });

      it('measures the wait per pod', async () => {
        const h = harness();
        const first = podWith([cm('x')], { name: 'first', uid: 'u-first' });
        const second = podWith([cm('x')], { name: 'second', uid: 'u-second' });
        await h.vm.mountPod(first);
        h.clock.advance(60_000);
        await h.vm.mountPod(second);
        h.clock.advance(PodAttachAndMountTimeoutMs - 60_000);
        expect(failed(await h.vm.mountPod(first)).report).to.equal(true);
        expect(failed(await h.vm.mountPod(second)).report).to.equal(false);
      });

      it('the wait ends once every volume is mounted', async () => {
        const h = harness();
        const pod = podWith([cm('x')]);
        await h.vm.mountPod(pod);
        h.clock.advance(PodAttachAndMountTimeoutMs);
        h.sources.configMaps.set(`${NS}/app-config`, { data: {} });
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
      });

      const processErrors: [string, Volume, (h: Harness) => void, string][] = [
        [
          'nfs',
          { name: 'data', nfs: { server: 'nfs.local', path: '/exports' } },
          () => undefined,
          `failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched: kubelet-operator does not support nfs volumes (supported: ${SUPPORTED})`,
        ],
        [
          'csi on a node without real volumes',
          { name: 'data', csi: { driver: 'ebs.csi.aws.com' } },
          () => undefined,
          `failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched: kubelet-operator does not support csi volumes on nodes without real volumes`,
        ],
        [
          'an unbound claim',
          { name: 'data', persistentVolumeClaim: { claimName: 'claim' } },
          (h) =>
            h.sources.claims.set(`${NS}/claim`, {
              metadata: { name: 'claim' },
              spec: {},
              status: { phase: 'Pending' },
            }),
          `error processing PVC ${NS}/claim: PVC is not bound`,
        ],
        [
          'a missing claim',
          { name: 'data', persistentVolumeClaim: { claimName: 'claim' } },
          () => undefined,
          `error processing PVC ${NS}/claim: failed to fetch PVC from API server: persistentvolumeclaims "claim" not found`,
        ],
        [
          'a claim bound to an nfs PV',
          { name: 'data', persistentVolumeClaim: { claimName: 'claim' } },
          (h) => {
            h.sources.claims.set(`${NS}/claim`, {
              metadata: { name: 'claim', uid: 'claim-uid' },
              spec: { volumeName: 'pv-nfs' },
              status: { phase: 'Bound' },
            });
            h.sources.volumes.set('pv-nfs', {
              metadata: { name: 'pv-nfs' },
              spec: {
                nfs: { server: 's', path: '/' },
                claimRef: { namespace: NS, name: 'claim', uid: 'claim-uid' },
              },
            });
          },
          'failed to get Plugin from volumeSpec for volume "data" err=no volume plugin matched: PersistentVolume pv-nfs is nfs; kubelet-operator mounts only hostPath and local PersistentVolumes',
        ],
      ];
      for (const [what, vol, arrange, why] of processErrors) {
        it(`process errors are reported at once: ${what}`, async () => {
          const h = harness();
          arrange(h);
          expect(failed(await h.vm.mountPod(podWith([vol])))).to.deep.equal({
            report: true,
            message: `unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: ${why}`,
          });
          // Not a SetUp failure: no MountVolume.SetUp event.
          expect(h.events).to.deep.equal([]);
        });
      }

      it('with both kinds, lists every unmounted volume and reports the process errors at once', async () => {
        const h = harness();
        const pod = podWith([
          cm('config'),
          { name: 'zeta', nfs: { server: 's', path: '/' } },
          { name: 'alpha', iscsi: { targetPortal: 'p' } },
        ]);
        const r = failed(await h.vm.mountPod(pod));
        expect(r.report).to.equal(true);
        expect(r.message).to.equal(
          'unmounted volumes=[alpha config zeta], unattached volumes=[], failed to process volumes=[alpha zeta]: ' +
            `failed to get Plugin from volumeSpec for volume "alpha" err=no volume plugin matched: kubelet-operator does not support iscsi volumes (supported: ${SUPPORTED}); ` +
            `failed to get Plugin from volumeSpec for volume "zeta" err=no volume plugin matched: kubelet-operator does not support nfs volumes (supported: ${SUPPORTED})`,
        );
        expect(failedMounts(h)).to.deep.equal([
          'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found',
        ]);
      });

      it('a mount of an undeclared volume never mounts, and is reported after the timeout', async () => {
        const h = harness();
        const pod = podWith([{ name: 'cache', emptyDir: {} }], { mounts: ['cache', 'ghost'] });
        expect(failed(await h.vm.mountPod(pod))).to.deep.equal({
          report: false,
          message: 'unmounted volumes=[ghost], unattached volumes=[], failed to process volumes=[]',
        });
        h.clock.advance(PodAttachAndMountTimeoutMs);
        expect(failed(await h.vm.mountPod(pod)).report).to.equal(true);
        expect(h.vm.mountedVolumes(UID)?.has('cache')).to.equal(true);
      });
    });

    describe('remounts', () => {
      it('a configMap remount picks up new data', async () => {
        const h = harness();
        h.sources.configMaps.set(`${NS}/app-config`, { data: { level: 'info' } });
        const pod = podWith([cm('config')]);
        await h.vm.mountPod(pod);
        h.sources.configMaps.set(`${NS}/app-config`, { data: { level: 'debug', extra: 'yes' } });
        h.clock.advance(1000);
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
        expect(await text(h.fs, `${dirs.configMap('config')}/level`)).to.equal('debug');
        expect(await text(h.fs, `${dirs.configMap('config')}/extra`)).to.equal('yes');
      });

      it('a failed remount keeps the old contents and the pod running, and records the event', async () => {
        const h = harness();
        h.sources.configMaps.set(`${NS}/app-config`, { data: { level: 'info' } });
        const pod = podWith([cm('config')]);
        await h.vm.mountPod(pod);
        h.sources.configMaps.delete(`${NS}/app-config`);
        h.clock.advance(PodAttachAndMountTimeoutMs * 2);
        const r = await h.vm.mountPod(pod);
        expect(r.ok).to.equal(true);
        expect(await text(h.fs, `${dirs.configMap('config')}/level`)).to.equal('info');
        expect(failedMounts(h)).to.deep.equal([
          'MountVolume.SetUp failed for volume "config" : configmap "app-config" not found',
        ]);
      });

      it('secret, downwardAPI and projected volumes are set up again at every sync', async () => {
        const h = harness();
        h.sources.secrets.set(`${NS}/db`, { data: { pw: b64('one') } });
        const volumes: Volume[] = [
          { name: 'creds', secret: { secretName: 'db' } },
          {
            name: 'info',
            downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
          },
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
        ];
        await h.vm.mountPod(podWith(volumes, { labels: { v: '1' } }));
        h.sources.secrets.set(`${NS}/db`, { data: { pw: b64('two') } });
        h.token.value = 'token-2';
        h.clock.advance(1000);
        await h.vm.mountPod(podWith(volumes, { labels: { v: '2' } }));
        expect(await text(h.fs, `${dirs.secret('creds')}/pw`)).to.equal('two');
        expect(await text(h.fs, `${dirs.downwardAPI('info')}/labels`)).to.equal('v="2"');
        expect(await text(h.fs, `${dirs.projected('tok')}/token`)).to.equal('token-2');
        expect(h.tokenCalls).to.have.length(2);
      });

      it('emptyDir, hostPath and claims are set up once per pod', async () => {
        const h = harness();
        await h.fs.mkdir('/srv/shared');
        const pod = podWith([
          { name: 'cache', emptyDir: {} },
          { name: 'shared', hostPath: { path: '/srv/shared', type: 'Directory' } },
        ]);
        await h.vm.mountPod(pod);
        await h.fs.rm('/srv/shared');
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
        expect(h.events).to.deep.equal([]);
      });
    });

    describe('medium Memory and tmpfs', () => {
      it('a Memory emptyDir is a tmpfs sized from the node allocatable and the pod limit', async () => {
        const h = harness({ allocatable: { memory: '4Gi' } });
        const pod = podWith([{ name: 'shm', emptyDir: { medium: 'Memory' } }]);
        pod.spec.containers[0]!.resources = { limits: { memory: '256Mi' } };
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
        expect(h.mounter.mounts.get(dirs.emptyDir('shm'))).to.deep.equal({
          fstype: 'tmpfs',
          sizeBytes: 256 * 1024 * 1024,
        });
      });

      it('secret and projected volumes live on tmpfs; configMap and downwardAPI do not', async () => {
        const h = harness();
        h.sources.secrets.set(`${NS}/db`, { data: {} });
        h.sources.configMaps.set(`${NS}/app-config`, { data: {} });
        await h.vm.mountPod(
          podWith([
            { name: 'creds', secret: { secretName: 'db' } },
            { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
            cm('config'),
            { name: 'info', downwardAPI: { items: [] } },
          ]),
        );
        expect([...h.mounter.mounts.keys()].sort()).to.deep.equal([
          dirs.projected('tok'),
          dirs.secret('creds'),
        ]);
      });
    });

    it('applies the fsGroup: emptyDir and configMap owned by the group, setgid on directories', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { k: 'v' } });
      await h.vm.mountPod(podWith([{ name: 'cache', emptyDir: {} }, cm('config')], { fsGroup: 4000 }));
      const cache = await h.fs.stat(dirs.emptyDir('cache'));
      expect({ gid: cache?.gid, mode: cache?.mode }).to.deep.equal({ gid: 4000, mode: 0o2777 });
      const file = await h.fs.stat(`${dirs.configMap('config')}/k`);
      expect({ gid: file?.gid, mode: file?.mode }).to.deep.equal({ gid: 4000, mode: 0o644 });
    });

    describe('restart safety (a new VolumeManager over the same node)', () => {
      it('keeps emptyDir contents (disk and Memory), remounts nothing, rewrites no data volume', async () => {
        const h = harness();
        h.sources.configMaps.set(`${NS}/app-config`, { data: { k: 'v' } });
        const pod = podWith([
          { name: 'cache', emptyDir: {} },
          { name: 'shm', emptyDir: { medium: 'Memory' } },
          cm('config'),
        ]);
        expect((await h.vm.mountPod(pod)).ok).to.equal(true);
        await h.fs.writeFile(`${dirs.emptyDir('cache')}/state.db`, Buffer.from('disk data'));
        await h.fs.writeFile(`${dirs.emptyDir('shm')}/lock`, Buffer.from('memory data'));
        const dataBefore = await h.fs.readlink(`${dirs.configMap('config')}/..data`);
        const mountsBefore = h.mounter.mountCalls.length;

        h.clock.advance(5_000);
        const restarted = h.restart();
        expect(restarted.mountedVolumes(UID)).to.equal(undefined);
        const r = await restarted.mountPod(pod);
        if (!r.ok) return expect.fail(r.message);
        expect([...r.volumes.keys()].sort()).to.deep.equal(['cache', 'config', 'shm']);
        expect(await text(h.fs, `${dirs.emptyDir('cache')}/state.db`)).to.equal('disk data');
        expect(await text(h.fs, `${dirs.emptyDir('shm')}/lock`)).to.equal('memory data');
        expect(h.mounter.mountCalls.length).to.equal(mountsBefore);
        expect(await h.fs.readlink(`${dirs.configMap('config')}/..data`)).to.equal(dataBefore);
      });

      it('a pod mounted by an earlier process is torn down by unmountPod', async () => {
        const h = harness();
        const pod = podWith([{ name: 'shm', emptyDir: { medium: 'Memory' } }]);
        await h.vm.mountPod(pod);
        await h.restart().unmountPod(UID);
        expect(h.mounter.mounts.size).to.equal(0);
        expect(await h.fs.lstat(dirs.emptyDir('shm'))).to.equal(undefined);
      });
    });
  });

  describe('unmountPod', () => {
    async function mounted(h: Harness): Promise<void> {
      h.sources.configMaps.set(`${NS}/app-config`, { data: { k: 'v' } });
      h.sources.secrets.set(`${NS}/db`, { data: { pw: b64('x') } });
      await h.fs.mkdir('/srv/shared');
      await h.fs.writeFile('/srv/shared/keep', Buffer.from('node data'));
      const r = await h.vm.mountPod(
        podWith([
          { name: 'cache', emptyDir: {} },
          { name: 'shm', emptyDir: { medium: 'Memory' } },
          cm('config'),
          { name: 'creds', secret: { secretName: 'db' } },
          { name: 'info', downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } },
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
          { name: 'shared', hostPath: { path: '/srv/shared' } },
        ]),
      );
      expect(r.ok).to.equal(true);
      await h.fs.writeFile(`${PODS}/${UID}/etc-hosts`, Buffer.from('hosts'));
      await h.fs.mkdir(`${PODS}/${UID}/containers/app`);
    }

    it('removes every volume directory and unmounts every tmpfs, keeping the pod directory and node data', async () => {
      const h = harness();
      await mounted(h);
      expect(h.mounter.mounts.size).to.equal(3);
      await h.vm.unmountPod(UID);
      expect(h.mounter.mounts.size).to.equal(0);
      for (const d of [
        dirs.emptyDir('cache'),
        dirs.emptyDir('shm'),
        dirs.configMap('config'),
        dirs.secret('creds'),
        dirs.downwardAPI('info'),
        dirs.projected('tok'),
        dirs.emptyDirMeta('cache'),
      ]) {
        expect(await h.fs.lstat(d), d).to.equal(undefined);
      }
      expect(await text(h.fs, `${PODS}/${UID}/etc-hosts`)).to.equal('hosts');
      expect((await h.fs.lstat(`${PODS}/${UID}/containers/app`))?.kind).to.equal('dir');
      expect(await text(h.fs, '/srv/shared/keep')).to.equal('node data');
      expect(h.vm.mountedVolumes(UID)).to.equal(undefined);
    });

    it('is idempotent, and fine for a pod never mounted', async () => {
      const h = harness();
      await mounted(h);
      await h.vm.unmountPod(UID);
      await h.vm.unmountPod(UID);
      await h.vm.unmountPod('never-seen');
    });

    it('a pod mounted again after unmountPod starts from empty volumes', async () => {
      const h = harness();
      const pod = podWith([{ name: 'cache', emptyDir: {} }]);
      await h.vm.mountPod(pod);
      await h.fs.writeFile(`${dirs.emptyDir('cache')}/old`, Buffer.from('x'));
      await h.vm.unmountPod(UID);
      await h.vm.mountPod(pod);
      expect(await h.fs.readdir(dirs.emptyDir('cache'))).to.deep.equal([]);
    });
  });

  describe('cleanupOrphanedPodDirs', () => {
    async function node(h: Harness): Promise<void> {
      h.sources.secrets.set(`${NS}/db`, { data: { pw: b64('x') } });
      for (const uid of ['u-keep', 'u-orphan-1', 'u-orphan-2']) {
        await h.vm.mountPod(
          podWith(
            [
              { name: 'creds', secret: { secretName: 'db' } },
              { name: 'cache', emptyDir: {} },
            ],
            { uid, name: uid },
          ),
        );
      }
      // A mount the volume plugins do not know (a subPath bind mount, say) under an orphan.
      await h.fs.mkdir(`${PODS}/u-orphan-2/volume-subpaths/x`);
      await h.mounter.mountTmpfs(`${PODS}/u-orphan-2/volume-subpaths/x`);
    }

    it('removes only the directories of pods not kept, unmounting everything under them', async () => {
      const h = harness();
      await node(h);
      const removed = await h.vm.cleanupOrphanedPodDirs((uid) => uid === 'u-keep');
      expect(removed).to.deep.equal(['u-orphan-1', 'u-orphan-2']);
      expect(await h.fs.readdir(PODS)).to.deep.equal(['u-keep']);
      expect([...h.mounter.mounts.keys()]).to.deep.equal([dirs.secret('creds', 'u-keep')]);
      expect(h.vm.mountedVolumes('u-keep')?.size).to.equal(2);
      expect(h.vm.mountedVolumes('u-orphan-1')).to.equal(undefined);
    });

    it('keeps everything when every pod is kept, and is fine without a pods directory', async () => {
      const h = harness();
      expect(await h.vm.cleanupOrphanedPodDirs(() => false)).to.deep.equal([]);
      await node(h);
      expect(await h.vm.cleanupOrphanedPodDirs(() => true)).to.deep.equal([]);
      expect(await h.fs.readdir(PODS)).to.deep.equal(['u-keep', 'u-orphan-1', 'u-orphan-2']);
    });

    it('logs a directory it cannot remove and tries again next time', async () => {
      const h = harness();
      await node(h);
      h.fs.failRm.add(`${PODS}/u-orphan-1`);
      expect(await h.vm.cleanupOrphanedPodDirs((uid) => uid === 'u-keep')).to.deep.equal(['u-orphan-2']);
      expect(h.warnings).to.have.length(1);
      expect(h.warnings[0]!.msg).to.equal('could not remove orphaned pod directory');
      expect(h.warnings[0]!.meta).to.include({ podUID: 'u-orphan-1', dir: `${PODS}/u-orphan-1` });
      h.fs.failRm.clear();
      expect(await h.vm.cleanupOrphanedPodDirs((uid) => uid === 'u-keep')).to.deep.equal(['u-orphan-1']);
    });
  });

  it('retain() forgets the state of pods no longer known', async () => {
    const h = harness();
    await h.vm.mountPod(podWith([{ name: 'cache', emptyDir: {} }], { uid: 'a' }));
    await h.vm.mountPod(podWith([{ name: 'cache', emptyDir: {} }], { uid: 'b' }));
    h.vm.retain(new Set(['b']));
    expect(h.vm.mountedVolumes('a')).to.equal(undefined);
    expect(h.vm.mountedVolumes('b')?.size).to.equal(1);
  });
});

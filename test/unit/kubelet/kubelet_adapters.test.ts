// The kubelet's shell adapters: the status client over KubeClient, the pod manager, pod event references
// and the environment source.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import type { RequestOptions } from '../../../src/kube/client.js';
import {
  guardSyncer,
  podEventRecorder,
  podRef,
  restEnvSource,
  volumeEnvSource,
} from '../../../src/kubelet/shell/kubelet_adapters.js';
import {
  DefaultObjectTTLMs,
  restVolumeSources,
  type ConfigMapObject,
  type SecretObject,
  type VolumeSources,
} from '../../../src/kubelet/volume/sources.js';
import { FakeClock } from '../../../src/util/clock.js';
import type { PodSyncer, SyncContext } from '../../../src/kubelet/podworkers.js';
import type { RuntimePodStatus } from '../../../src/kubelet/container/types.js';
import { KubeletPodManager, podNodeNameIndexFunc } from '../../../src/kubelet/shell/podmanager.js';
import { restPodStatusClient } from '../../../src/kubelet/shell/statusclient.js';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { KindError } from '../../../src/util/errors.js';

class FakeClient {
  requests: RequestOptions[] = [];
  reply: (req: RequestOptions) => unknown = () => ({});
  async request<T>(req: RequestOptions): Promise<T> {
    this.requests.push(req);
    return this.reply(req) as T;
  }
}

const pod = (uid: string, name = `p-${uid}`, extra: Partial<Pod['metadata']> = {}): Pod => ({
  metadata: { uid, name, namespace: 'ns', ...extra },
  spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
});

describe('kubelet shell adapters', () => {
  describe('restPodStatusClient', () => {
    it('GETs the pod, PATCHes pods/status strategically with the UID in the body (metadata answer, managedFields cut), DELETEs with grace 0 and a UID precondition', async () => {
      const c = new FakeClient();
      const sc = restPodStatusClient(c);
      await sc.getPod('ns', 'web-1');
      const patch = { metadata: { uid: 'u1' }, status: { phase: 'Running' } };
      await sc.patchPodStatus('ns', 'web-1', 'u1', patch);
      await sc.deletePod('ns', 'web-1', 'u1', 0);
      expect(c.requests).to.deep.equal([
        { method: 'GET', path: '/api/v1/namespaces/ns/pods/web-1' },
        {
          method: 'PATCH',
          path: '/api/v1/namespaces/ns/pods/web-1/status',
          body: patch,
          contentType: 'application/strategic-merge-patch+json',
          accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
          dropManagedFields: true,
        },
        {
          method: 'DELETE',
          path: '/api/v1/namespaces/ns/pods/web-1',
          body: {
            apiVersion: 'v1',
            kind: 'DeleteOptions',
            gracePeriodSeconds: 0,
            preconditions: { uid: 'u1' },
          },
        },
      ]);
    });
  });

  describe('KubeletPodManager', () => {
    it('keeps pods by UID and by name, replaces on setPods, ignores mirror pods', () => {
      const pm = new KubeletPodManager();
      pm.upsert(pod('a'));
      pm.upsert(pod('m', 'mirror', { annotations: { 'kubernetes.io/config.mirror': 'x' } }));
      expect(pm.getPodByUID(asPodUID('a'))?.metadata.name).to.equal('p-a');
      expect(pm.getPodByUID(asPodUID('m'))).to.equal(undefined);
      // A recreated pod (new UID, same name) takes the name; removing the old UID leaves it.
      pm.upsert(pod('b', 'p-a'));
      pm.remove(pod('a'));
      expect(pm.getPodByFullName('ns', 'p-a')?.metadata.uid).to.equal('b');
      pm.setPods([pod('c')]);
      expect(pm.getPods().map((p) => p.metadata.uid)).to.deep.equal(['c']);
    });

    it('setPods with the objects it holds changes nothing; any other set replaces, the last of a name winning', () => {
      const pm = new KubeletPodManager();
      const [a, b] = [pod('a'), pod('b')];
      pm.setPods([a, b]);
      pm.setPods([b, a]);
      expect(pm.getPods()).to.have.members([a, b]);
      // The same UID as a new object (the informer's newer version) replaces the held one.
      const a2 = pod('a');
      pm.setPods([a2, b]);
      expect(pm.getPodByUID(asPodUID('a'))).to.equal(a2);
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(a2);
      // Two UIDs under one name: the later in the set holds the name, whatever was held before.
      const c = pod('c', 'p-a');
      pm.setPods([c, a2]);
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(a2);
      pm.setPods([a2, c]);
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(c);
      pm.setPods([a2, c]);
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(c);
      pm.setPods([a2]);
      expect(pm.getPods()).to.deep.equal([a2]);
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(a2);
    });

    it('setPods with the array it was last given applies it again after an upsert or a remove in between', () => {
      const pm = new KubeletPodManager();
      const [a, b] = [pod('a'), pod('b')];
      const set = [a, b];
      pm.setPods(set);
      pm.setPods(set);
      expect(pm.getPods()).to.have.members([a, b]);
      pm.upsert(pod('c'));
      pm.setPods(set);
      expect(pm.getPods()).to.have.members([a, b], 'the pod upserted since is gone');
      pm.remove(a);
      pm.setPods(set);
      expect(pm.getPodByUID(asPodUID('a'))).to.equal(a, 'the pod removed since is back');
      const a2 = pod('a');
      pm.upsert(a2);
      pm.setPods(set);
      expect(pm.getPodByUID(asPodUID('a'))).to.equal(a, 'the set version again');
      expect(pm.getPodByFullName('ns', 'p-a')).to.equal(a);
    });

    it('has no static pods: identity translation and empty maps', () => {
      const pm = new KubeletPodManager();
      expect(pm.translatePodUID('x')).to.equal('x');
      expect(pm.getMirrorPodByPod()).to.equal(undefined);
      expect(pm.getUIDTranslations().podToMirror.size).to.equal(0);
      expect(pm.getUIDTranslations().mirrorToPod.size).to.equal(0);
    });

    it('indexes pods by spec.nodeName', () => {
      expect(podNodeNameIndexFunc(pod('a'))).to.deep.equal(['n1']);
      expect(podNodeNameIndexFunc({ metadata: { name: 'x' } })).to.deep.equal([]);
    });
  });

  describe('pod events', () => {
    it('refer to the pod (and the container by field path)', () => {
      const got: unknown[] = [];
      const record = podEventRecorder({
        event: (ref, type, reason, message) => got.push({ ref, type, reason, message }),
      });
      record(pod('a'), 'Warning', 'Unhealthy', 'Liveness probe failed: x', 'spec.containers{c}');
      expect(got).to.deep.equal([
        {
          ref: {
            kind: 'Pod',
            apiVersion: 'v1',
            namespace: 'ns',
            name: 'p-a',
            uid: 'a',
            fieldPath: 'spec.containers{c}',
          },
          type: 'Warning',
          reason: 'Unhealthy',
          message: 'Liveness probe failed: x',
        },
      ]);
      expect(podRef(pod('a'))).to.not.have.property('fieldPath');
    });
  });

  describe('restEnvSource', () => {
    it('reads ConfigMaps (binaryData decoded) and Secrets (base64 decoded); a missing object is undefined', async () => {
      const c = new FakeClient();
      c.reply = (req) => {
        if (req.path.endsWith('/configmaps/cm'))
          return { data: { a: '1' }, binaryData: { b: Buffer.from('2').toString('base64') } };
        if (req.path.endsWith('/secrets/s')) return { data: { k: Buffer.from('v').toString('base64') } };
        throw new KindError('NotFound', 'not found');
      };
      const env = restEnvSource(c);
      expect(await env.getConfigMap('ns', 'cm')).to.deep.equal({ a: '1', b: '2' });
      expect(await env.getSecret('ns', 's')).to.deep.equal({ k: 'v' });
      expect(await env.getConfigMap('ns', 'missing')).to.equal(undefined);
      c.reply = () => {
        throw new KindError('Unavailable', 'down');
      };
      let err: unknown;
      try {
        await env.getSecret('ns', 's');
      } catch (e) {
        err = e;
      }
      expect((err as KindError).kind).to.equal('Unavailable');
    });
  });

  describe('volumeEnvSource', () => {
    const b64 = (v: string) => Buffer.from(v).toString('base64');

    it('decodes what VolumeSources returns as restEnvSource does; missing is undefined, other errors reject', async () => {
      const configMaps = new Map<string, ConfigMapObject>([
        ['ns/cm', { data: { a: '1' }, binaryData: { b: b64('2') } }],
        ['ns/empty', {}],
      ]);
      const secrets = new Map<string, SecretObject>([['ns/s', { data: { k: b64('v'), u: b64('ü') } }]]);
      let down = false;
      const sources: VolumeSources = {
        getConfigMap: async (ns, n) => {
          if (down) throw new KindError('Unavailable', 'down');
          return configMaps.get(`${ns}/${n}`);
        },
        getSecret: async (ns, n) => secrets.get(`${ns}/${n}`),
        getPersistentVolumeClaim: async () => undefined,
        getPersistentVolume: async () => undefined,
      };
      const env = volumeEnvSource(sources);
      expect(await env.getConfigMap('ns', 'cm')).to.deep.equal({ a: '1', b: '2' });
      expect(await env.getConfigMap('ns', 'empty')).to.deep.equal({});
      expect(await env.getSecret('ns', 's')).to.deep.equal({ k: 'v', u: 'ü' });
      expect(await env.getConfigMap('ns', 'missing')).to.equal(undefined);
      expect(await env.getSecret('other', 's')).to.equal(undefined);
      // Each call a fresh record: a caller changing it does not change the cached object.
      const first = (await env.getConfigMap('ns', 'cm'))!;
      first.a = 'changed';
      expect(configMaps.get('ns/cm')!.data).to.deep.equal({ a: '1' });
      expect((await env.getConfigMap('ns', 'cm'))!.a).to.equal('1');
      down = true;
      let err: unknown;
      try {
        await env.getConfigMap('ns', 'cm');
      } catch (e) {
        err = e;
      }
      expect((err as KindError).kind).to.equal('Unavailable');
    });

    it('over restVolumeSources, lookups within the TTL cost one GET per object, found or missing', async () => {
      const clock = new FakeClock();
      const c = new FakeClient();
      c.reply = (req) => {
        if (req.path === '/api/v1/namespaces/ns/configmaps/cm') return { data: { a: '1' } };
        if (req.path === '/api/v1/namespaces/ns/secrets/s') return { data: { k: b64('v') } };
        throw new KindError('NotFound', 'not found');
      };
      const sources = restVolumeSources(c, clock);
      const env = volumeEnvSource(sources);
      const gets = (suffix: string) => c.requests.filter((r) => r.path.endsWith(suffix)).length;

      expect(await env.getConfigMap('ns', 'cm')).to.deep.equal({ a: '1' });
      expect(await env.getConfigMap('ns', 'cm')).to.deep.equal({ a: '1' });
      expect(gets('/configmaps/cm'), 'two lookups, one GET').to.equal(1);
      // Concurrent lookups share one GET; a missing object is cached like a found one.
      await Promise.all([env.getSecret('ns', 's'), env.getSecret('ns', 's'), env.getSecret('ns', 's')]);
      expect(gets('/secrets/s')).to.equal(1);
      for (let i = 0; i < 5; i++) expect(await env.getConfigMap('ns', 'missing')).to.equal(undefined);
      expect(gets('/configmaps/missing')).to.equal(1);
      // The volume manager reading the same object meanwhile costs nothing more.
      expect(await sources.getConfigMap('ns', 'cm')).to.deep.equal({ data: { a: '1' } });
      expect(gets('/configmaps/cm')).to.equal(1);

      clock.advance(DefaultObjectTTLMs + 1);
      await env.getConfigMap('ns', 'cm');
      await env.getConfigMap('ns', 'missing');
      expect(
        [gets('/configmaps/cm'), gets('/configmaps/missing')],
        'after the TTL: asked again',
      ).to.deep.equal([2, 2]);
    });
  });
});

describe('guardSyncer', () => {
  const calls: string[] = [];
  const syncer: PodSyncer = {
    syncPod: async () => {
      calls.push('syncPod');
      return { isTerminal: false };
    },
    syncTerminatingPod: async () => void calls.push('syncTerminatingPod'),
    syncTerminatingRuntimePod: async () => void calls.push('syncTerminatingRuntimePod'),
    syncTerminatedPod: async () => void calls.push('syncTerminatedPod'),
  };
  const ctx = {} as SyncContext;
  const pod = { metadata: { uid: 'u' }, spec: { containers: [] } } as unknown as Pod;
  const status = {} as RuntimePodStatus;

  it('waits for yieldToLoop before each sync, and parks a sync whose Kubelet stopped meanwhile', async () => {
    calls.length = 0;
    let stopped = false;
    let release!: () => void;
    const yieldToLoop = () => new Promise<void>((r) => (release = r));
    const g = guardSyncer(
      syncer,
      () => stopped,
      (p) => p,
      yieldToLoop,
    );
    const first = g.syncPod(ctx, 'update', pod, status);
    await Promise.resolve();
    expect(calls, 'nothing runs before the yield').to.deep.equal([]);
    release();
    expect(await first).to.deep.equal({ isTerminal: false });
    expect(calls).to.deep.equal(['syncPod']);

    let parked = true;
    void g.syncTerminatedPod(ctx, pod, status).then(() => (parked = false));
    stopped = true;
    release();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(parked).to.equal(true);
    expect(calls).to.deep.equal(['syncPod']);
  });

  it('without yieldToLoop, calls at once', async () => {
    calls.length = 0;
    const g = guardSyncer(
      syncer,
      () => false,
      (p) => p,
    );
    const p = g.syncTerminatingRuntimePod(ctx, { uid: 'u' } as never);
    expect(calls).to.deep.equal(['syncTerminatingRuntimePod']);
    await p;
  });
});

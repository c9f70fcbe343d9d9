import { expect } from 'chai';
import { PodUIDLabel } from '../../../src/runtime/labels.js';
import { fewAdd, fewDelete, fewList, type Few } from '../../../src/runtime/sim/few.js';
import { compileProfile } from '../../../src/runtime/sim/index.js';
import { CompactCopies, flatString, plainKey } from '../../../src/runtime/sim/intern.js';
import { SharedValues } from '../../../src/util/sharedvalues.js';
import { logDirectoryOf, RecordMaker } from '../../../src/runtime/sim/records.js';
import type { ContainerConfig, Image, Mount, PodSandboxConfig } from '../../../src/runtime/types.js';
import { IMAGE, newSim, ROOT } from './sim-fixtures.js';

const image: Image = { id: 'sha256:1', repoTags: ['img:1'], repoDigests: ['img@sha256:1'], size: 1 };

/** A kubelet-like container config for pod `uid`. */
function replica(uid: string, img = IMAGE): { sandbox: PodSandboxConfig; container: ContainerConfig } {
  const labels = { 'io.kubernetes.pod.name': `p-${uid}`, 'io.kubernetes.pod.namespace': 'ns' };
  return {
    sandbox: {
      metadata: { name: `p-${uid}`, namespace: 'ns', uid, attempt: 0 },
      logDirectory: `/var/log/pods/ns_p-${uid}_${uid}`,
      labels: { ...labels, [PodUIDLabel]: uid, 'kubelet-operator.dev/node': 'n1' },
      annotations: { 'sim.kubelet-operator.dev/behaviour': '{"ports":{"8080":{}}}' },
    },
    container: {
      metadata: { name: 'app', attempt: 0 },
      image: img,
      command: ['sleep', 'infinity'],
      labels: { ...labels, [PodUIDLabel]: uid, 'io.kubernetes.container.name': 'app', 'x/y': 'z' },
      annotations: {
        'io.kubernetes.container.hash': '2468bb4a',
        'io.kubernetes.container.restartCount': '0',
      },
      logPath: 'app/0.log',
      envs: [
        { key: 'A', value: '1' },
        { key: 'B', value: '2' },
      ],
      mounts: [
        {
          containerPath: '/etc/hosts',
          hostPath: `/pods/${uid}/etc-hosts`,
          readonly: false,
          propagation: 'PRIVATE',
        },
        { containerPath: '/dev/termination-log', hostPath: `/pods/${uid}/containers/app/1`, readonly: false },
      ],
      linux: { resources: { cpuShares: 2, cpuPeriod: 100_000, cpuQuota: 0 } },
    },
  };
}

describe('SimRuntime records shared between replicas', () => {
  it('share one spec and annotations, and hand out the same data as each config says (their own maps)', async () => {
    const { sim } = newSim();
    const made: { id: string; config: ContainerConfig; sandbox: PodSandboxConfig }[] = [];
    for (const uid of ['u1', 'u2']) {
      const { sandbox, container } = replica(uid);
      const sid = await sim.runPodSandbox(sandbox);
      const id = await sim.createContainer(sid, container, sandbox);
      await sim.startContainer(id);
      made.push({ id, config: container, sandbox });
    }
    for (const { id, config, sandbox } of made) {
      const s = await sim.containerStatus(id);
      expect(s.metadata).to.deep.equal(config.metadata);
      expect(s.labels).to.deep.equal(config.labels);
      expect(Object.keys(s.labels)).to.deep.equal(Object.keys(config.labels));
      expect(s.annotations).to.deep.equal(config.annotations);
      expect(s.mounts).to.deep.equal(config.mounts);
      expect(s.resources).to.deep.equal(config.linux?.resources);
      expect(s.logPath).to.equal(`${sandbox.logDirectory}/app/0.log`);
      expect(s.image).to.equal(IMAGE);
      // The label, annotation and metadata maps handed out are the records' own, not copies per answer: the
      // Runtime's types make them read-only, and the annotation and metadata maps (shared between pods) are
      // frozen too. The rest of an answer, and the caller's config, are the caller's.
      expect((await sim.containerStatus(id)).labels).to.equal(s.labels);
      expect(
        () => ((s.annotations as Record<string, string>)['io.kubernetes.container.hash'] = 'changed'),
      ).to.throw(TypeError);
      expect(() => ((s.metadata as { attempt: number }).attempt = 7)).to.throw(TypeError);
      s.mounts![0]!.hostPath = 'changed';
      config.mounts![1]!.hostPath = 'changed';
      config.annotations['io.kubernetes.container.restartCount'] = 'changed';
    }
    const [a, b] = await Promise.all(made.map(({ id }) => sim.containerStatus(id)));
    expect(a!.labels['x/y']).to.equal('z');
    expect(a!.annotations).to.deep.equal(b!.annotations);
    expect(a!.annotations['io.kubernetes.container.restartCount']).to.equal('0');
    expect(a!.mounts!.map((m) => m.hostPath)).to.deep.equal([
      '/pods/u1/etc-hosts',
      '/pods/u1/containers/app/1',
    ]);
    expect((await sim.execSync(made[1]!.id, ['printenv', 'B'], 1)).stdout.toString()).to.equal('2\n');
    expect((await sim.listPodSandbox()).map((s) => s.annotations)).to.deep.equal([
      { 'sim.kubelet-operator.dev/behaviour': '{"ports":{"8080":{}}}' },
      { 'sim.kubelet-operator.dev/behaviour': '{"ports":{"8080":{}}}' },
    ]);
  });

  it('are one object per distinct spec, with host paths kept per container', () => {
    const maker = new RecordMaker();
    const behaviour = compileProfile({});
    const records = ['u1', 'u2', 'u3'].map((uid, i) => {
      const { sandbox, container } = replica(uid);
      if (i === 2) container.annotations['extra'] = 'x';
      const s = maker.sandbox(sandbox, { id: `s-${uid}`, ip: 1, createdAt: 1n });
      return {
        s,
        c: maker.container(container, s, image, { id: `c-${uid}`, behaviour, createdAt: 2n, user: ROOT }),
      };
    });
    expect(records[0]!.c.spec).to.equal(records[1]!.c.spec);
    expect(records[2]!.c.spec).not.to.equal(records[0]!.c.spec);
    expect(records[0]!.s.annotations).to.equal(records[2]!.s.annotations);
    expect(records[0]!.c.hostPaths).to.not.equal(records[1]!.c.hostPaths);
    expect(maker.specs.size).to.equal(2);
  });

  it('keeps mounts exactly as given: a host path with a NUL, none, or undefined', async () => {
    const { sim, pod } = newSim();
    const p = await pod();
    const mounts = [
      { containerPath: '/a', hostPath: 'odd\0path' },
      { containerPath: '/b' } as Mount,
      { containerPath: '/c', hostPath: undefined as unknown as string, readonly: true },
      { containerPath: '/d', hostPath: '' },
    ];
    const id = await sim.createContainer(
      p.id,
      { metadata: { name: 'm', attempt: 0 }, image: IMAGE, labels: {}, annotations: {}, mounts },
      p.config,
    );
    const got = (await sim.containerStatus(id)).mounts!;
    expect(got).to.deep.equal(mounts);
    expect(got.map((m) => Object.keys(m))).to.deep.equal(mounts.map((m) => Object.keys(m)));
  });
});

describe('sim interning helpers', () => {
  it('plainKey tells apart what JSON would blur, by refusing it', () => {
    expect(plainKey({ a: '1', b: [1, true, null] })).to.equal('{"a":"1","b":[1,true,null]}');
    expect(plainKey({ b: '1', a: '2' })).not.to.equal(plainKey({ a: '2', b: '1' }));
    for (const blurred of [
      { a: undefined },
      [undefined],
      -0,
      NaN,
      Infinity,
      { [Symbol('s')]: 1 },
      new Date(0),
      [[[[['deep']]]]],
    ]) {
      expect(plainKey(blurred), String(blurred)).to.equal(undefined);
    }
  });

  it('SharedValues shares by key, makes a value of its own without one, and starts over when full', () => {
    const table = new SharedValues<{ n: number }>(2);
    let n = 0;
    const make = () => ({ n: n++ });
    const a = table.get('a', make);
    expect(table.get('a', make)).to.equal(a);
    expect(table.get(undefined, make)).not.to.equal(table.get(undefined, make));
    table.get('b', make);
    table.get('c', make);
    expect(table.size).to.equal(1);
    expect(table.get('a', make)).not.to.equal(a);
    expect(a).to.deep.equal({ n: 0 });
  });

  it('CompactCopies copies as a spread does: keys, order and values; one object per copy', () => {
    const copies = new CompactCopies(4);
    const cases: Record<string, unknown>[] = [
      { e: '5', d: '4', c: '3', b: '2', a: '1' },
      { '2': 'two', x: 'x', '1': 'one', y: 'y', z: 'z' },
      JSON.parse('{"__proto__":"p","a":"1","b":"2","c":"3","d":"4"}') as Record<string, unknown>,
      { a: '1', b: 2, c: '3', d: '4', e: '5' },
      { a: '1', b: '2', [Symbol.for('s')]: 's', c: '3', d: '4', e: '5' },
      { a: '1' },
    ];
    for (const o of cases) {
      const first = copies.copy(o as Record<string, string>);
      const copy = copies.copy(o as Record<string, string>);
      expect(copy).to.not.equal(first);
      const spread = { ...o };
      expect(Reflect.ownKeys(copy)).to.deep.equal(Reflect.ownKeys(spread));
      for (const k of Reflect.ownKeys(spread)) expect(copy[k as string]).to.equal(spread[k as string]);
      expect(Object.getPrototypeOf(copy)).to.equal(Object.prototype);
    }
    expect(copies.copy(undefined)).to.deep.equal({});
  });

  it('flatString returns an equal string', () => {
    const s = ['/var/log/pods', 'ns_name_', '0123456789abcdef', '\ud800'].join('/');
    expect(flatString(s)).to.equal(s);
    expect(flatString('short')).to.equal('short');
  });

  it('Few holds nothing, one member itself, or an array, in insertion order', () => {
    const items = Array.from({ length: 20 }, (_, i) => ({ i }));
    let few: Few<{ i: number }> = undefined;
    expect(fewList(few)).to.deep.equal([]);
    few = fewAdd(few, items[0]!);
    expect(few).to.equal(items[0]);
    for (const it of items.slice(1)) few = fewAdd(few, it);
    expect(fewList(few)).to.deep.equal(items);
    expect(fewDelete(few, { i: 99 })).to.equal(few);
    for (const it of items.filter((x) => x.i % 2 === 1)) few = fewDelete(few, it);
    expect(fewList(few)).to.deep.equal(items.filter((x) => x.i % 2 === 0));
    for (const it of items.filter((x) => x.i % 2 === 0 && x.i !== 6)) few = fewDelete(few, it);
    expect(few).to.equal(items[6]);
    expect(fewDelete(few, items[6]!)).to.equal(undefined);
  });
});

describe('SimRuntime sandbox log directories', () => {
  it("keep the kubelet's <root>/<namespace>_<name>_<uid> as one shared root, anything else whole", () => {
    const maker = new RecordMaker();
    const fixed = (id: string) => ({ id, ip: 1, createdAt: 1n });
    const a = maker.sandbox(replica('u1').sandbox, fixed('a'));
    const b = maker.sandbox(replica('u2').sandbox, fixed('b'));
    expect(logDirectoryOf(a)).to.equal('/var/log/pods/ns_p-u1_u1');
    expect(logDirectoryOf(b)).to.equal('/var/log/pods/ns_p-u2_u2');
    expect([a.logDirOfPod, b.logDirOfPod]).to.deep.equal([true, true]);
    expect(a.logRoot).to.equal('/var/log/pods/');
    const others = ['/var/log/pods/ns_p-u3_other', '/ns_p-u3_u3', '', 'ns_p-u3_u3', '/x/ns_p-u3_u3/'];
    for (const dir of others) {
      const s = maker.sandbox({ ...replica('u3').sandbox, logDirectory: dir }, fixed(dir));
      expect(logDirectoryOf(s), dir).to.equal(dir);
      expect(s.logDirOfPod, dir).to.equal(false);
    }
  });
});

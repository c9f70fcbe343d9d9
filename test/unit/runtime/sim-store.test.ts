import { expect } from 'chai';
import { PodUIDLabel } from '../../../src/runtime/labels.js';
import { containerKey, sandboxNameKey } from '../../../src/runtime/sim/names.js';
import { compileProfile } from '../../../src/runtime/sim/index.js';
import { RecordMaker, type ContainerRecord, type SandboxRecord } from '../../../src/runtime/sim/records.js';
import { SimStore } from '../../../src/runtime/sim/store.js';
import type { ContainerConfig, Image, PodSandboxConfig } from '../../../src/runtime/types.js';
import { errorKind } from '../../../src/util/errors.js';
import { IMAGE, newSim, ns, ROOT } from './sim-fixtures.js';
import { rejection } from '../../support/throws.js';

const image: Image = { id: 'sha256:1', repoTags: ['img:1'], repoDigests: ['img@sha256:1'], size: 1 };
const behaviour = compileProfile({});

/** A store and record maker with one-call sandboxes and containers (IDs and timestamps from a counter). */
function newStore() {
  const store = new SimStore();
  const maker = new RecordMaker();
  let seq = 0;
  const sandbox = (name: string, uid: string, o: { attempt?: number; label?: string | null } = {}) => {
    const config: PodSandboxConfig = {
      metadata: { name, namespace: 'ns', uid, attempt: o.attempt ?? 0 },
      labels: o.label === null ? {} : { [PodUIDLabel]: o.label ?? uid },
      annotations: {},
    };
    const s = maker.sandbox(config, { id: `s${seq}`, ip: seq, createdAt: BigInt(++seq) });
    store.addSandbox(s);
    return s;
  };
  const container = (s: SandboxRecord, name: string, label?: string | null) => {
    const config: ContainerConfig = {
      metadata: { name, attempt: 0 },
      image: 'img:1',
      labels: label === null ? {} : { [PodUIDLabel]: label ?? s.uid },
      annotations: {},
    };
    const c = maker.container(config, s, image, {
      id: `c${seq}`,
      behaviour,
      createdAt: BigInt(++seq),
      user: ROOT,
    });
    store.addContainer(c);
    return c;
  };
  return { store, sandbox, container };
}

const ids = (rs: readonly (SandboxRecord | ContainerRecord)[]): string[] => rs.map((r) => r.id);

describe('SimStore', () => {
  it('lists by pod UID label exactly the labelled records, oldest first, whatever their metadata says', () => {
    const { store, sandbox, container } = newStore();
    const first = sandbox('p', 'u');
    const second = sandbox('p', 'u', { attempt: 1 });
    const relabelled = sandbox('q', 'other', { label: 'u' });
    const unlabelled = sandbox('r', 'u', { label: null });
    const a = container(first, 'a');
    const b = container(second, 'b');
    const c = container(first, 'c');
    const stray = container(relabelled, 'd', 'u');
    const elsewhere = container(first, 'e', 'other');
    container(unlabelled, 'f', null);
    expect(ids(store.listSandboxes({ labelSelector: { [PodUIDLabel]: 'u' } }))).to.deep.equal(
      ids([first, second, relabelled]),
    );
    expect(ids(store.listContainers({ labelSelector: { [PodUIDLabel]: 'u' } }))).to.deep.equal(
      ids([a, b, c, stray]),
    );
    expect(ids(store.listContainers({ labelSelector: { [PodUIDLabel]: 'other' } }))).to.deep.equal(
      ids([elsewhere]),
    );
    expect(ids(store.listContainers({ podSandboxId: first.id }))).to.deep.equal(ids([a, c, elsewhere]));
    expect(store.listContainers({ labelSelector: { [PodUIDLabel]: 'none' } })).to.deep.equal([]);
  });

  it('finds the holder of a name through its pod UID, and of a name with "_" through its own table', () => {
    const { store, sandbox, container } = newStore();
    const s = sandbox('p', 'u');
    const c = container(s, 'c');
    const odd = sandbox('x_y', 'u2');
    expect(store.reservedBy(sandboxNameKey(s))).to.equal(s.id);
    expect(store.reservedBy(containerKey('c', 0, s))).to.equal(c.id);
    expect(store.reservedBy(sandboxNameKey(odd))).to.equal(odd.id);
    expect(store.reservedBy(containerKey('c', 1, s))).to.equal(undefined);
    expect(store.reservedBy('not_a_key')).to.equal(undefined);
    expect(store.indexSizes().oddNames).to.equal(1);
  });

  it('leaves no index entry behind once every record is removed', () => {
    const { store, sandbox, container } = newStore();
    const all: [SandboxRecord, ContainerRecord[]][] = [];
    for (let i = 0; i < 20; i++) {
      const s = sandbox(i % 3 === 0 ? `p_${i}` : `p${i}`, `u${i % 7}`, {
        attempt: i,
        label: i % 5 === 0 ? 'x' : undefined,
      });
      const cs = [];
      for (let j = 0; j < (i % 12) + 1; j++) cs.push(container(s, `c${j}`, j % 4 === 0 ? 'y' : undefined));
      all.push([s, cs]);
    }
    expect(Object.values(store.indexSizes()).every((n) => n > 0)).to.equal(true);
    for (const [s, cs] of all.reverse()) {
      for (const c of cs) store.deleteContainer(c);
      expect(s.containers).to.equal(undefined);
      store.deleteSandbox(s);
    }
    expect(store.indexSizes()).to.deep.equal({
      byUID: 0,
      straySandboxes: 0,
      strayContainers: 0,
      oddNames: 0,
    });
    expect([store.sandboxes.size, store.containers.size]).to.deep.equal([0, 0]);
  });
});

describe('SimRuntime names and timestamps', () => {
  it('reserves names as containerd does, names with "_" included, and frees them with the record', async () => {
    const { sim, pod } = newSim();
    const p = await pod();
    const md = p.config.metadata;
    const config = (name: string, namespace: string, uid: string): PodSandboxConfig => ({
      metadata: { name, namespace, uid, attempt: 0 },
      labels: {},
      annotations: {},
    });
    // `c_<pod>` in namespace `default` with the pod's UID has the key of container `c` in the pod.
    const c = await sim.createContainer(
      p.id,
      { metadata: { name: 'c', attempt: 0 }, image: IMAGE, labels: {}, annotations: {} },
      p.config,
    );
    const clash = config(`c_${md.name}`, md.namespace, md.uid);
    expect(errorKind(await rejection(sim.runPodSandbox(clash)))).to.equal('AlreadyExists');
    // Two UIDs, one key: `a_b_c_d_0`.
    await sim.runPodSandbox(config('a', 'b', 'c_d'));
    expect(errorKind(await rejection(sim.runPodSandbox(config('a', 'b_c', 'd'))))).to.equal('AlreadyExists');
    await sim.removeContainer(c);
    expect(await sim.runPodSandbox(clash)).to.be.a('string');
  });

  it('stamps records made in one millisecond a nanosecond apart, as before', async () => {
    const { sim, pod, run, clock, at } = newSim();
    const p = await pod();
    const a = await run(p, 'a', { argv: ['sleep', '1'] });
    const b = await run(p, 'b', { argv: ['sleep', '1'] });
    const [sa, sb] = await Promise.all([sim.containerStatus(a), sim.containerStatus(b)]);
    // sandbox, create a, start a, create b, start b
    expect([sa.createdAt, sa.startedAt, sb.createdAt, sb.startedAt]).to.deep.equal(
      [1n, 2n, 3n, 4n].map((n) => ns(0) + n),
    );
    at(1000);
    expect((await sim.containerStatus(a)).finishedAt).to.equal(ns(1000));
    expect((await sim.containerStatus(b)).finishedAt).to.equal(ns(1000) + 1n);
    clock.advance(0.5);
    const late = await run(p, 'late', { argv: ['sleep', '1'] });
    expect((await sim.containerStatus(late)).startedAt).to.equal(ns(1000) + 3n);
  });
});

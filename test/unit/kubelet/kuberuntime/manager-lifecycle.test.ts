// KubeGenericRuntimeManager beyond starting: killing (grace, preStop, sidecar order), state rebuilt from labels
// by a new manager, garbage collection, removal, and construction checks.
import { expect } from 'chai';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../../src/api/core.js';
import { PodCache } from '../../../../src/kubelet/container/cache.js';
import { KubeGenericRuntimeManager } from '../../../../src/kubelet/kuberuntime/shell/manager.js';
import { RecheckAfterMs } from '../../../../src/kubelet/kuberuntime/podleftovers.js';
import { GenericPLEG } from '../../../../src/kubelet/pleg/generic.js';
import { ManagedByLabel, PodUIDLabel } from '../../../../src/runtime/labels.js';
import { KindError } from '../../../../src/util/errors.js';
import { container, drive, Harness, makePod, NODE } from './manager-fixtures.js';

const forever = ['sleep', 'infinity']; // busybox sleep as PID 1 ignores SIGTERM
const server = ['server']; // exits on SIGTERM

describe('KubeGenericRuntimeManager.killPod', function () {
  this.timeout(10_000);

  it('runs the preStop hook, subtracts its time from the grace period, then stops', async () => {
    const h = new Harness();
    const pod = makePod({
      grace: 30,
      containers: [container('app', forever, { lifecycle: { preStop: { sleep: { seconds: 5 } } } })],
    });
    await h.sync(pod);
    h.takeEvents();
    const t0 = h.clock.now();
    const r = await h.kill(pod, await h.status(pod));
    expect(r.error).to.equal(undefined);
    expect(r.results.map((x) => `${x.action} ${x.target}`)).to.deep.equal([
      'KillContainer app',
      `KillPodSandbox ${pod.metadata.uid}`,
    ]);
    expect(h.takeEvents()).to.deep.equal(['Killing: Stopping container app']);
    const st = await h.status(pod);
    // 5 s of hook, then the remaining 25 s of SIGTERM the process ignores, then SIGKILL.
    expect(st.containers[0]).to.include({ state: 'exited', exitCode: 137, finishedAt: t0 + 30_000 });
    expect(st.sandboxes[0]!.state).to.equal('notready');
    // Idempotent.
    expect((await h.kill(pod, st)).error).to.equal(undefined);
  });

  it('records FailedPreStopHook without the hook output, and still stops the container', async () => {
    const h = new Harness();
    const pod = makePod({
      grace: 10,
      containers: [
        container('app', server, {
          lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo secret; exit 3'] } } },
        }),
      ],
    });
    await h.sync(pod);
    h.takeEvents();
    await h.kill(pod, await h.status(pod));
    expect(h.takeEvents()).to.deep.equal([
      'Killing: Stopping container app',
      'FailedPreStopHook: PreStopHook failed',
    ]);
    expect((await h.status(pod)).containers[0]).to.include({ state: 'exited', exitCode: 143 });
  });

  it('gives at least 2 s even when the override is 0', async () => {
    const h = new Harness();
    const pod = makePod({ containers: [container('app', forever)] });
    await h.sync(pod);
    const t0 = h.clock.now();
    await h.kill(pod, await h.status(pod), 0);
    expect((await h.status(pod)).containers[0]).to.include({ exitCode: 137, finishedAt: t0 + 2000 });
  });

  it('uses the deletion grace period of a deleted pod', async () => {
    const h = new Harness();
    const pod = makePod({ grace: 30, containers: [container('app', forever)] });
    await h.sync(pod);
    const t0 = h.clock.now();
    const deleted = {
      ...pod,
      metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 7 },
    };
    await h.kill(deleted, await h.status(pod));
    expect((await h.status(pod)).containers[0]).to.include({ finishedAt: t0 + 7000 });
  });

  it('stops sidecars after the regular containers', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('proxy', server, { restartPolicy: 'Always' })],
      containers: [container('app', server, { lifecycle: { preStop: { sleep: { seconds: 3 } } } })],
    });
    await h.sync(pod);
    await h.sync(pod);
    const t0 = h.clock.now();
    await h.kill(pod, await h.status(pod));
    const st = await h.status(pod);
    const finished = Object.fromEntries(st.containers.map((c) => [c.name, c.finishedAt! - t0]));
    // The proxy would stop at once; it waited for the app's 3 s preStop hook and stop.
    expect(finished).to.deep.equal({ app: 3000, proxy: 3000 });
  });
});

describe('KubeGenericRuntimeManager: state rebuilt from the runtime', function () {
  this.timeout(10_000);

  it('a new manager over the same runtime sees the same pods and does nothing new', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('init', ['sh', '-c', 'exit 0'])],
      containers: [container('app', forever, { lifecycle: { preStop: { sleep: { seconds: 2 } } } })],
    });
    await h.sync(pod);
    await h.sync(pod);
    const before = await h.status(pod);
    const pods = await h.manager.getPods();

    h.restart();
    expect(await h.status(pod)).to.deep.equal(before);
    expect(await h.manager.getPods()).to.deep.equal(pods);
    expect(pods).to.have.length(1);
    expect(pods[0]).to.deep.include({ uid: pod.metadata.uid, name: pod.metadata.name, namespace: 'default' });
    expect(pods[0]!.sandboxes).to.deep.equal([{ id: before.sandboxes[0]!.id, state: 'running' }]);
    expect(pods[0]!.containers.map((c) => c.state)).to.deep.equal(['running', 'exited']);

    h.takeEvents();
    const r = await h.sync(pod);
    expect(r.results.filter((x) => x.action !== 'ConfigPodSandbox')).to.deep.equal([]);
    expect(h.takeEvents()).to.deep.equal([]);
  });

  it('kills a pod whose API object is gone, with the grace period and preStop hook from the labels', async () => {
    const h = new Harness();
    const pod = makePod({
      grace: 20,
      containers: [container('app', forever, { lifecycle: { preStop: { sleep: { seconds: 4 } } } })],
    });
    await h.sync(pod);
    h.restart();
    h.takeEvents();
    const t0 = h.clock.now();
    const r = await h.kill(undefined, await h.status(pod));
    expect(r.error).to.equal(undefined);
    expect(h.events).to.deep.equal([
      {
        type: 'Normal',
        reason: 'Killing',
        message: 'Stopping container app',
        fieldPath: 'spec.containers{app}',
      },
    ]);
    expect((await h.status(pod)).containers[0]).to.include({ exitCode: 137, finishedAt: t0 + 20_000 });
  });

  it('serves as the PLEG pod lister', async () => {
    const h = new Harness();
    const cache = new PodCache();
    const pleg = new GenericPLEG({ lister: h.manager, cache, clock: h.clock });
    const pod = makePod({ containers: [container('app', forever)] });
    await h.sync(pod);
    const result = await pleg.relist();
    expect(result).to.include({ listed: true });
    const events = pleg.events.drain().map((e) => e.type);
    expect(events).to.deep.equal(['ContainerStarted', 'ContainerStarted']);
    expect(cache.get(pod.metadata.uid!).status).to.deep.equal(await h.status(pod));
  });
});

describe('KubeGenericRuntimeManager: garbage collection and removal', function () {
  this.timeout(10_000);

  async function crashLoop(h: Harness, runs: number) {
    const pod = makePod({ containers: [container('app', ['sh', '-c', 'exit 1'])] });
    for (let i = 0; i < runs; i++) {
      await h.sync(pod);
      h.clock.advance(300_000);
    }
    return pod;
  }

  it('keeps one dead instance per container of a live pod', async () => {
    const h = new Harness();
    const pod = await crashLoop(h, 4);
    expect((await h.status(pod)).containers.map((c) => c.restartCount)).to.deep.equal([3, 2, 1, 0]);
    const gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => false });
    expect(gc.errors).to.deep.equal([]);
    expect(gc.removedContainers).to.have.length(3);
    expect(gc.removedSandboxes).to.deep.equal([]);
    const st = await h.status(pod);
    expect(st.containers.map((c) => c.restartCount)).to.deep.equal([3]);
    // The restart count survives: the next attempt is 4.
    await h.sync(pod);
    expect((await h.status(pod)).containers[0]!.restartCount).to.equal(4);
  });

  it('never counts a created, not yet started container as dead (it would evict the one it replaces)', async () => {
    const h = new Harness();
    const pod = await crashLoop(h, 1);
    const [old] = (await h.status(pod)).containers;
    const prev = await h.runtime.containerStatus(old!.id);
    const sb = await h.runtime.podSandboxStatus(prev.podSandboxId);
    // What a sync leaves between creating the replacement and starting it.
    const created = await h.runtime.createContainer(
      sb.id,
      {
        metadata: { name: 'app', attempt: 1 },
        image: prev.image,
        command: ['sleep', '3600'],
        labels: prev.labels,
        annotations: { ...prev.annotations, 'io.kubernetes.container.restartCount': '1' },
      },
      { metadata: sb.metadata, labels: sb.labels, annotations: sb.annotations },
    );
    const gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => false });
    expect(gc.removedContainers).to.deep.equal([]);
    const ids = (await h.status(pod)).containers.map((c) => c.id);
    expect(ids).to.include(created).and.to.include(old!.id);
    // Once the pod's content may go, the created one goes too.
    const all = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => true });
    expect(all.removedContainers).to.include(created);
  });

  it('respects minAge, then removes everything of a deleted pod but never another node’s objects', async () => {
    const h = new Harness();
    const pod = await crashLoop(h, 2);
    const foreign = await h.runtime.runPodSandbox({
      metadata: { name: 'other', namespace: 'default', uid: 'uid-other', attempt: 0 },
      labels: { [PodUIDLabel]: 'uid-other', [ManagedByLabel]: 'node-b' },
      annotations: {},
    });
    await h.runtime.stopPodSandbox(foreign);
    await h.kill(pod, await h.status(pod));

    let gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => true, minAgeMs: 3_600_000 });
    expect(gc.removedContainers.length + gc.removedSandboxes.length).to.equal(0);
    // Until all sources are ready the pod may just be unknown yet: only the per-container limit applies.
    gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => true, allSourcesReady: false });
    expect(gc.removedContainers).to.have.length(1);
    expect(gc.removedSandboxes).to.deep.equal([]);

    gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => true });
    expect(gc.errors).to.deep.equal([]);
    expect(gc.removedContainers).to.have.length(1);
    expect(gc.removedSandboxes).to.have.length(1);
    expect(await h.manager.getPods()).to.deep.equal([]);
    expect((await h.runtime.listPodSandbox()).map((s) => s.id)).to.deep.equal([foreign]);
  });

  it("getPods answers with its last listing while the runtime's listing revision stands, and lists when it moves or is unknown", async () => {
    const h = new Harness();
    const pod = makePod({ containers: [container('app', server)] });
    await h.sync(pod);
    const a = await h.manager.getPods();
    expect(await h.manager.getPods()).to.equal(a);
    await h.kill(pod, await h.status(pod));
    const b = await h.manager.getPods();
    expect(b).to.not.equal(a);
    expect(b[0]!.containers.map((c) => c.state)).to.deep.equal(['exited']);
    // An armed fault makes the revision unknown: the listing is asked, and fails as it should.
    h.runtime.injectFault({ op: 'listPodSandbox', kind: 'Unavailable', message: 'runtime is busy' });
    const failed = await h.manager.getPods().then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failed).to.equal('runtime is busy');
    expect(await h.manager.getPods(), 'the fault used up, the revision stands where it stood').to.equal(b);
  });

  it('removePod leaves nothing of the pod, and is idempotent', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('init', ['sh', '-c', 'exit 0'])],
      containers: [container('app', server)],
    });
    await h.sync(pod);
    await h.sync(pod);
    const st = await h.status(pod);
    await h.kill(pod, st);
    const r = await drive(h.clock, h.manager.removePod(st));
    expect(r.error).to.equal(undefined);
    expect(r.results.map((x) => x.action)).to.deep.equal([
      'RemoveContainer',
      'RemoveContainer',
      'RemovePodSandbox',
    ]);
    expect(await h.manager.getPods()).to.deep.equal([]);
    const empty = await h.status(pod);
    expect(empty).to.deep.include({ sandboxes: [], containers: [], ips: [] });
    expect((await drive(h.clock, h.manager.removePod(st))).error).to.equal(undefined);
  });
});

describe('KubeGenericRuntimeManager pod leftovers (log directories on a real filesystem)', function () {
  this.timeout(10_000);
  let root = '';
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'ko-leftovers-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });
  const dirOf = (pod: Pod): string => `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`;
  /** Housekeeping's pass with every pod free to go and nothing of them in the runtime. */
  const housekeeping = (h: Harness): Promise<string[]> =>
    h.manager.removeOrphanedPodLeftovers(
      () => true,
      () => false,
    );

  it("removePod takes the pod log directory; a removal that failed leaves it to housekeeping, which never touches another node's pods", async () => {
    const h = new Harness({ logRoot: root });
    const a = makePod({ containers: [container('app', server)] });
    const b = makePod({ containers: [container('app', server)] });
    await h.sync(a);
    await h.sync(b);
    // Another VirtualNode on this host, with the same log root.
    await mkdir(join(root, 'default_theirs_uid-theirs', 'app'), { recursive: true });
    expect((await readdir(root)).sort()).to.deep.equal(
      ['default_theirs_uid-theirs', dirOf(a), dirOf(b)].sort(),
    );
    expect(await readdir(join(root, dirOf(a)))).to.deep.equal(['app']);

    const stA = await h.status(a);
    await h.kill(a, stA);
    expect((await drive(h.clock, h.manager.removePod(stA))).error).to.equal(undefined);
    expect(await readdir(root)).to.not.include(dirOf(a));

    const stB = await h.status(b);
    await h.kill(b, stB);
    h.runtime.injectFault({ op: 'removeContainer', kind: 'Unavailable', message: 'runtime is busy' });
    const failed = await drive(h.clock, h.manager.removePod(stB));
    expect(failed.error?.message).to.include('runtime is busy');
    // The sandbox went (and its container with it), the directory stayed.
    expect(await h.manager.getPods()).to.deep.equal([]);
    expect(await readdir(root)).to.include(dirOf(b));

    const inRuntime = async (): Promise<(uid: string) => boolean> => {
      const uids = new Set((await h.manager.getPods()).map((p) => p.uid as string));
      return (uid) => uids.has(uid);
    };
    // Not yet the pod workers' to remove: stays.
    expect(await h.manager.removeOrphanedPodLeftovers(() => false, await inRuntime())).to.deep.equal([]);
    expect(await readdir(root)).to.include(dirOf(b));
    // Everything may go, as an unknown pod may: only what this node made goes.
    expect(await h.manager.removeOrphanedPodLeftovers(() => true, await inRuntime())).to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal(['default_theirs_uid-theirs']);
  });

  it('housekeeping keeps the directory of a pod the runtime still holds, and takes one made again after the removal', async () => {
    const h = new Harness({ logRoot: root });
    const pod = makePod({ containers: [container('app', server)] });
    await h.sync(pod);
    const st = await h.status(pod);
    await h.kill(pod, st);
    const held = (uid: string): boolean => uid === pod.metadata.uid;
    expect(await h.manager.removeOrphanedPodLeftovers(() => true, held)).to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal([dirOf(pod)]);

    expect((await drive(h.clock, h.manager.removePod(st))).error).to.equal(undefined);
    expect(await readdir(root)).to.deep.equal([]);
    // A start still on its way when the pod was removed makes the directory again; its sandbox goes by
    // another hand (here: straight from the runtime), so no removal of the pod comes to take it.
    await h.sync(pod);
    for (const sb of await h.runtime.listPodSandbox()) await h.runtime.removePodSandbox(sb.id);
    expect(await readdir(root)).to.deep.equal([dirOf(pod)]);
    const gc = await h.manager.garbageCollect({ shouldPodContentBeRemoved: () => true });
    expect(gc.removedSandboxes, 'the GC finds no sandbox to go with it').to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal([dirOf(pod)]);
    expect(await housekeeping(h)).to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal([]);
  });

  it('housekeeping looks once more after a removal and takes a directory made again by a hand that recorded nothing', async () => {
    const h = new Harness({ logRoot: root });
    const pod = makePod({ containers: [container('app', server)] });
    await h.sync(pod);
    const st = await h.status(pod);
    await h.kill(pod, st);
    expect((await drive(h.clock, h.manager.removePod(st))).error).to.equal(undefined);
    expect(await readdir(root)).to.deep.equal([]);
    // The runtime opening the container's log file once more after the removal (containerd makes the
    // directory for it), or a start whose record came before the removal: nothing new is recorded.
    await mkdir(join(root, dirOf(pod), 'app'), { recursive: true });
    expect(await housekeeping(h)).to.deep.equal([]);
    expect(await readdir(root), 'not yet due').to.deep.equal([dirOf(pod)]);
    h.clock.advance(RecheckAfterMs);
    expect(await housekeeping(h)).to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal([]);
    // Then the pod is forgotten: a directory of that name made later is not this node's to take.
    await mkdir(join(root, dirOf(pod)));
    h.clock.advance(RecheckAfterMs);
    expect(await housekeeping(h)).to.deep.equal([]);
    expect(await readdir(root)).to.deep.equal([dirOf(pod)]);
  });
});

describe('KubeGenericRuntimeManager construction', () => {
  it('rejects missing or malformed dependencies with InvalidArgument', () => {
    const h = new Harness();
    const cases: [string, Record<string, unknown>][] = [
      ['recorder', { recorder: undefined }],
      ['envSource', { envSource: { getConfigMap: () => undefined } }],
      ['nodeSettings.podNetwork', { nodeSettings: { ...h.deps.nodeSettings, podNetwork: 'bridge' } }],
      ['nodeSettings.nodeIP', { nodeSettings: { ...h.deps.nodeSettings, nodeIP: '' } }],
      ['clock', { clock: {} }],
      ['httpGet', { httpGet: 'nope' }],
    ];
    for (const [field, patch] of cases) {
      let err: unknown;
      try {
        new KubeGenericRuntimeManager({ ...h.deps, ...patch } as never);
      } catch (e) {
        err = e;
      }
      expect(err, field).to.be.instanceOf(KindError);
      expect((err as KindError).kind).to.equal('InvalidArgument');
      expect((err as KindError).context.field).to.equal(field);
    }
    expect(NODE).to.equal(h.deps.nodeSettings.nodeName);
  });
});

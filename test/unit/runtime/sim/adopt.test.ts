// SimRuntime adoption (capabilities.adopt, src/runtime/sim/adopt.ts): a fresh runtime rebuilds the records an
// earlier one held from what the API recorded, so that everything the kubelet reads back is the same.
import { expect } from 'chai';
import { ContainerNameLabel, PodUIDLabel } from '../../../../src/runtime/labels.js';
import { SimRuntime } from '../../../../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig, RuntimeAdopter } from '../../../../src/runtime/types.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { KindError } from '../../../../src/util/errors.js';

const IMAGE = 'docker.io/library/busybox:latest';
const T0 = Date.UTC(2026, 0, 1);

function sandboxConfig(uid: string, hostNetwork = false): PodSandboxConfig {
  return {
    metadata: { name: `pod-${uid}`, uid, namespace: 'default', attempt: 0 },
    hostname: `pod-${uid}`,
    logDirectory: `/var/log/pods/default_pod-${uid}_${uid}`,
    labels: { [PodUIDLabel]: uid },
    annotations: { note: 'kept' },
    linux: { securityContext: { namespaceOptions: { network: hostNetwork ? 'NODE' : 'POD' } } },
  };
}

function containerConfig(uid: string, name: string, argv: string[], attempt = 0): ContainerConfig {
  return {
    metadata: { name, attempt },
    image: IMAGE,
    command: argv,
    labels: { [PodUIDLabel]: uid, [ContainerNameLabel]: name },
    annotations: { 'io.kubernetes.container.restartCount': String(attempt) },
    logPath: `${name}/${attempt}.log`,
    envs: [{ key: 'A', value: '1' }],
    mounts: [{ containerPath: '/data', hostPath: `/pods/${uid}/data`, readonly: true }],
  };
}

const fresh = (clock: FakeClock, images: string[] = []) =>
  new SimRuntime({ clock, idSeed: 'node-a', podCIDR: '10.88.0.0/16', nodeIP: '10.0.0.9', images });

function adopterOf(sim: SimRuntime): RuntimeAdopter {
  const a = sim.capabilities.adopt;
  if (!a) throw new Error('the sim runtime must offer adopt');
  return a;
}

const msOf = (ns: bigint): bigint => ns / 1_000_000n;

/**
 * What the kubelet reads, without what adoption may not keep: the sandbox ID, creation times, and start and
 * finish times below the millisecond (the sim spreads readings of one millisecond apart by nanoseconds).
 */
async function view(sim: SimRuntime, uid: string) {
  const sandboxes = await sim.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } });
  const sandbox = await sim.podSandboxStatus(sandboxes[0]!.id);
  const listed = await sim.listContainers({ labelSelector: { [PodUIDLabel]: uid } });
  const containers = await Promise.all(listed.map((c) => sim.containerStatus(c.id)));
  return {
    sandbox: { ...sandbox, id: '' },
    listed: listed.map((c) => ({ ...c, podSandboxId: '', createdAt: 0n })),
    containers: containers.map((c) => ({
      ...c,
      podSandboxId: '',
      createdAt: 0n,
      startedAt: msOf(c.startedAt),
      finishedAt: msOf(c.finishedAt),
    })),
  };
}

const kindOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return err instanceof KindError ? err.kind : `not a KindError: ${String(err)}`;
  }
  return 'no error';
};

describe('SimRuntime adoption (capabilities.adopt)', () => {
  it('rebuilds a pod so that lists and statuses read as on the runtime that ran it', async () => {
    const clock = new FakeClock(T0);
    const a = new SimRuntime({ clock, idSeed: 'node-a', images: [IMAGE], nodeIP: '10.0.0.9' });
    const sb = sandboxConfig('u1');
    const sandboxId = await a.runPodSandbox(sb);
    clock.advance(1_000);
    const done = await a.createContainer(sandboxId, containerConfig('u1', 'init', ['sleep', '2']), sb);
    await a.startContainer(done);
    clock.advance(3_000); // init exited 0 at T0+3s
    const crashed = await a.createContainer(sandboxId, containerConfig('u1', 'app', ['false']), sb);
    await a.startContainer(crashed); // exits 1 at once
    clock.advance(2_000);
    const app = await a.createContainer(
      sandboxId,
      containerConfig('u1', 'app', ['sleep', 'infinity'], 1),
      sb,
    );
    await a.startContainer(app);
    clock.advance(10_000);
    const before = await view(a, 'u1');
    const ip = before.sandbox.network!.ip;

    const b = fresh(clock);
    const adopter = adopterOf(b);
    const statusOf = (id: string) => a.containerStatus(id);
    const ms = (ns: bigint) => Number(ns / 1_000_000n);
    const newSandbox = adopter.adoptSandbox(sb, { ip, createdAtMs: T0 });
    for (const [id, config] of [
      [done, containerConfig('u1', 'init', ['sleep', '2'])],
      [crashed, containerConfig('u1', 'app', ['false'])],
      [app, containerConfig('u1', 'app', ['sleep', 'infinity'], 1)],
    ] as const) {
      const st = await statusOf(id);
      adopter.adoptContainer(newSandbox, config, sb, {
        id,
        state: st.state === 'running' ? 'running' : 'exited',
        startedAtMs: ms(st.startedAt),
        ...(st.state === 'exited'
          ? { finishedAtMs: ms(st.finishedAt), exitCode: st.exitCode, reason: st.reason, message: st.message }
          : {}),
      });
    }
    const after = await view(b, 'u1');
    expect(after).to.deep.equal(before);
    expect(after.containers.map((c) => [c.id, c.state, c.exitCode, c.reason])).to.deep.equal([
      [done, 'exited', 0, 'Completed'],
      [crashed, 'exited', 1, 'Error'],
      [app, 'running', 0, ''],
    ]);
    // The image is there without a pull, as the kubelet's image checks expect.
    expect((await b.imageStatus(IMAGE))?.id).to.equal((await a.imageStatus(IMAGE))?.id);
    expect(b.allocatedIPs).to.equal(1);
    await a.close();
    await b.close();
  });

  it('reserves the sandbox IP exactly: later pods get other addresses; outside or taken IPs are refused', async () => {
    const clock = new FakeClock(T0);
    const b = fresh(clock);
    const adopter = adopterOf(b);
    adopter.adoptSandbox(sandboxConfig('u1'), { ip: '10.88.0.3', createdAtMs: T0 });
    const ips: string[] = [];
    for (const uid of ['n1', 'n2', 'n3']) {
      const id = await b.runPodSandbox(sandboxConfig(uid));
      ips.push((await b.podSandboxStatus(id)).network!.ip);
    }
    expect(ips).to.deep.equal(['10.88.0.2', '10.88.0.4', '10.88.0.5']);

    const err = (ip: string | undefined, uid = 'x') =>
      kindOf(() => adopter.adoptSandbox(sandboxConfig(uid), { ...(ip ? { ip } : {}), createdAtMs: T0 }));
    expect(err('10.89.0.7')).to.equal('InvalidArgument'); // outside the CIDR
    expect(err('10.88.0.1')).to.equal('InvalidArgument'); // the gateway
    expect(err('10.88.255.255')).to.equal('InvalidArgument'); // broadcast
    expect(err('not-an-ip')).to.equal('InvalidArgument');
    expect(err(undefined)).to.equal('InvalidArgument');
    expect(err('10.88.0.4')).to.equal('AlreadyExists'); // allocated meanwhile
    expect(err('10.88.0.9', 'u1')).to.equal('AlreadyExists'); // the sandbox name is taken
    expect(b.allocatedIPs).to.equal(4); // nothing leaked by the refusals

    // A host-network sandbox has the node's IP whatever it is given, and takes none from the range.
    const host = adopter.adoptSandbox(sandboxConfig('h', true), { ip: '10.88.0.3', createdAtMs: T0 });
    expect((await b.podSandboxStatus(host)).network!.ip).to.equal('10.0.0.9');
    expect(b.allocatedIPs).to.equal(4);
    // Released with the sandbox, as an allocated one is.
    const [reserved] = await b.listPodSandbox({ labelSelector: { [PodUIDLabel]: 'u1' } });
    await b.removePodSandbox(reserved!.id);
    expect(b.allocatedIPs).to.equal(3);
    await b.close();
  });

  it('refuses a duplicate container ID or a reserved name, and never hands out an adopted ID again', async () => {
    const clock = new FakeClock(T0);
    // The runtime that ran it: same seed, so its IDs are the ones a fresh counter would make again.
    const a = fresh(clock, [IMAGE]);
    const sbA = await a.runPodSandbox(sandboxConfig('u1'));
    const ranId = await a.createContainer(
      sbA,
      { ...containerConfig('u1', 'app', ['sleep', 'infinity']) },
      sandboxConfig('u1'),
    );

    const b = fresh(clock);
    const adopter = adopterOf(b);
    const sb = sandboxConfig('u1');
    const sandboxId = adopter.adoptSandbox(sb, { ip: '10.88.0.2', createdAtMs: T0 });
    const running = { state: 'running' as const, startedAtMs: T0 };
    adopter.adoptContainer(sandboxId, containerConfig('u1', 'app', ['sleep', 'infinity']), sb, {
      id: ranId,
      ...running,
    });
    const again = (name: string, id: string, attempt = 0) =>
      kindOf(() =>
        adopter.adoptContainer(sandboxId, containerConfig('u1', name, ['sleep', '1'], attempt), sb, {
          id,
          ...running,
        }),
      );
    expect(again('other', ranId)).to.equal('AlreadyExists');
    expect(again('app', 'f'.repeat(64))).to.equal('AlreadyExists'); // app attempt 0 holds the name
    expect(again('app', 'sim://abc')).to.equal('InvalidArgument'); // the prefix is the caller's to strip
    expect(
      kindOf(() =>
        adopter.adoptContainer('nope', containerConfig('u1', 'x', ['true']), sb, { id: 'abc', ...running }),
      ),
    ).to.equal('NotFound');
    expect(
      kindOf(() =>
        adopter.adoptContainer(sandboxId, containerConfig('u1', 'x', ['true']), sb, {
          id: 'abc',
          state: 'running',
          startedAtMs: Number.NaN,
        }),
      ),
    ).to.equal('InvalidArgument');

    // Containers B creates itself get IDs of their own, though its counter starts where A's did.
    const own = await b.createContainer(sandboxId, containerConfig('u1', 'side', ['sleep', 'infinity']), sb);
    expect(own).to.not.equal(ranId);
    expect(await b.listContainers()).to.have.length(2);

    await b.close();
    expect(
      kindOf(() => adopter.adoptSandbox(sandboxConfig('late'), { ip: '10.88.0.7', createdAtMs: T0 })),
    ).to.equal('Unavailable');
    await a.close();
  });

  it('runs an adopted container on from its start time: it exits when its run ends, or at the next tick', async () => {
    const clock = new FakeClock(T0 + 60_000);
    const b = fresh(clock);
    const adopter = adopterOf(b);
    const sb = sandboxConfig('u1');
    const sandboxId = adopter.adoptSandbox(sb, { ip: '10.88.0.2', createdAtMs: T0 });
    const now = clock.now();
    // A 10 s run that started 4 s ago has 6 s left.
    const short = adopter.adoptContainer(sandboxId, containerConfig('u1', 'short', ['sleep', '10']), sb, {
      id: 'a1',
      state: 'running',
      startedAtMs: now - 4_000,
    });
    // One whose run ended while nobody watched exits at the next tick, not during the adoption.
    const over = adopter.adoptContainer(sandboxId, containerConfig('u1', 'over', ['sleep', '10']), sb, {
      id: 'a2',
      state: 'running',
      startedAtMs: now - 20_000,
    });
    expect((await b.containerStatus(over)).state).to.equal('running');
    clock.advance(0);
    const o = await b.containerStatus(over);
    expect([o.state, o.exitCode, o.reason, msOf(o.finishedAt)]).to.deep.equal([
      'exited',
      0,
      'Completed',
      BigInt(now),
    ]);

    clock.advance(5_999);
    expect((await b.containerStatus(short)).state).to.equal('running');
    clock.advance(1);
    const s = await b.containerStatus(short);
    expect([s.state, s.exitCode, s.reason]).to.deep.equal(['exited', 0, 'Completed']);
    expect(s.startedAt).to.equal(BigInt(now - 4_000) * 1_000_000n);
    expect(msOf(s.finishedAt)).to.equal(BigInt(now + 6_000));

    // An exited one stays as it was told: no timer, its exit as given.
    const exited = adopter.adoptContainer(sandboxId, containerConfig('u1', 'done', ['sleep', '10']), sb, {
      id: 'a3',
      state: 'exited',
      startedAtMs: now - 30_000,
      finishedAtMs: now - 25_000,
      exitCode: 3,
      reason: 'Error',
      message: 'bye',
    });
    const timers = clock.pendingTimers();
    clock.advance(60_000);
    const e = await b.containerStatus(exited);
    expect([e.state, e.exitCode, e.reason, e.message]).to.deep.equal(['exited', 3, 'Error', 'bye']);
    expect(e.finishedAt).to.equal(BigInt(now - 25_000) * 1_000_000n);
    expect(timers).to.equal(0);
    await b.close();
  });
});

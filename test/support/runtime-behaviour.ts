/**
 * Behaviour that every Runtime implementation must share, run against the simulated runtime (with a fake
 * clock) and against real containerd over CRI. Only host-network sandboxes are used, so no CNI is needed.
 *
 * Each case runs its own pod (fresh UID) and removes it afterwards. Calls that take time on a real runtime
 * (start, stop, exec) are awaited through `waitFor`, so a fake-clock environment can advance its clock while
 * they are pending; assertions on durations use `now()`, the runtime's own clock.
 *
 * Facts the cases rely on were checked on containerd 1.6.20 with the busybox image of scripts/containerd.sh:
 * PID 1 of a container gets no SIGTERM it has no handler for, so `sleep 3600` and `sh -c 'sleep 3600'` both
 * wait out StopContainer's timeout and die with 137, while `sh -c 'trap "exit 7" TERM; sleep 3600 & wait'`
 * exits 7 at once.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  ContainerNameLabel,
  ManagedByLabel,
  PodNameLabel,
  PodNamespaceLabel,
  PodUIDLabel,
} from '../../src/runtime/labels.js';
import type { ContainerConfig, ContainerStatus, PodSandboxConfig, Runtime } from '../../src/runtime/types.js';
import { KindError, errorKind } from '../../src/util/errors.js';
import { rejection } from './throws.js';

export interface RuntimeBehaviourEnv {
  runtime: Runtime;
  images: { busybox: string; pause: string };
  /** Parent cgroup for the test pods (each pod gets `<cgroupParent>/pod<uid>`); omitted: the runtime's default. */
  cgroupParent?: string;
  /** Resolves once `pred` holds; rejects after `timeoutMs` (real time, or fake time advanced by the env). */
  waitFor(pred: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void>;
  /** Milliseconds on the runtime's clock (default Date.now). */
  now?: () => number;
  teardown(): Promise<void>;
}

const NAMESPACE = 'runtime-behaviour';
const NODE = 'runtime-behaviour-node';
const SLOW_MS = 60_000;

interface Settled<T> {
  done: boolean;
  value?: T;
  error?: unknown;
}

function track<T>(p: Promise<T>): Settled<T> {
  const s: Settled<T> = { done: false };
  p.then(
    (value) => Object.assign(s, { done: true, value }),
    (error: unknown) => Object.assign(s, { done: true, error }),
  );
  return s;
}

export function describeRuntimeBehaviour(name: string, setup: () => Promise<RuntimeBehaviourEnv>): void {
  describe(`Runtime behaviour: ${name}`, function () {
    this.timeout(120_000);
    let env: RuntimeBehaviourEnv;
    let rt: Runtime;
    let logRoot: string;
    let pods: string[] = [];
    const now = (): number => (env.now ?? Date.now)();

    before(async () => {
      env = await setup();
      rt = env.runtime;
      logRoot = mkdtempSync(join(tmpdir(), 'runtime-behaviour-'));
    });

    after(async () => {
      await env?.teardown();
      if (logRoot) rmSync(logRoot, { recursive: true, force: true });
    });

    afterEach(async () => {
      for (const id of pods.reverse()) {
        await rt.stopPodSandbox(id).catch(() => undefined);
        await rt.removePodSandbox(id);
      }
      pods = [];
    });

    /** Awaits a call that may take time on the runtime's clock. */
    async function settle<T>(p: Promise<T>, timeoutMs = SLOW_MS): Promise<T> {
      const s = track(p);
      await env.waitFor(() => s.done, timeoutMs);
      if ('error' in s) throw s.error;
      return s.value as T;
    }

    function sandboxConfig(pod: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
      const uid = randomUUID();
      return {
        metadata: { name: pod, uid, namespace: NAMESPACE, attempt: 0 },
        hostname: pod,
        logDirectory: join(logRoot, `${NAMESPACE}_${pod}_${uid}`),
        labels: {
          [PodNameLabel]: pod,
          [PodNamespaceLabel]: NAMESPACE,
          [PodUIDLabel]: uid,
          [ManagedByLabel]: NODE,
        },
        annotations: { 'kubernetes.io/config.source': 'api' },
        linux: {
          ...(env.cgroupParent && { cgroupParent: `${env.cgroupParent}/pod${uid}` }),
          securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
        },
        ...extra,
      };
    }

    async function runPod(pod: string): Promise<{ id: string; config: PodSandboxConfig }> {
      const config = sandboxConfig(pod);
      const id = await settle(rt.runPodSandbox(config));
      pods.push(id);
      return { id, config };
    }

    function containerConfig(
      sb: PodSandboxConfig,
      cname: string,
      argv: string[],
      attempt = 0,
    ): ContainerConfig {
      // The kubelet creates the container's log directory before CreateContainer; so does this suite.
      mkdirSync(join(sb.logDirectory!, cname), { recursive: true });
      return {
        metadata: { name: cname, attempt },
        image: env.images.busybox,
        command: argv.slice(0, 1),
        args: argv.slice(1),
        labels: {
          [PodNameLabel]: sb.metadata.name,
          [PodNamespaceLabel]: NAMESPACE,
          [PodUIDLabel]: sb.metadata.uid,
          [ContainerNameLabel]: cname,
        },
        annotations: {
          'io.kubernetes.container.restartCount': String(attempt),
          'example.com/note': 'kept as is',
        },
        logPath: `${cname}/${attempt}.log`,
      };
    }

    async function startContainer(
      pod: { id: string; config: PodSandboxConfig },
      cname: string,
      argv: string[],
    ) {
      const id = await settle(
        rt.createContainer(pod.id, containerConfig(pod.config, cname, argv), pod.config),
      );
      await settle(rt.startContainer(id));
      return id;
    }

    async function waitExited(id: string, timeoutMs = SLOW_MS): Promise<ContainerStatus> {
      await env.waitFor(async () => (await rt.containerStatus(id)).state === 'exited', timeoutMs);
      return rt.containerStatus(id);
    }

    function expectOrdered(s: ContainerStatus): void {
      for (const t of [s.createdAt, s.startedAt, s.finishedAt]) {
        expect(typeof t).to.equal('bigint');
        expect(t > 2n ** 53n, 'nanoseconds beyond 2^53').to.equal(true);
      }
      expect(s.createdAt <= s.startedAt, 'created <= started').to.equal(true);
      // containerd 1.6 stamps a process that exits at once with a finish time up to a few ms before its
      // start time (seen in 7 of 30 runs); allow that much skew, no more.
      const skewNs = 50_000_000n;
      expect(s.startedAt <= s.finishedAt + skewNs, 'started <= finished (50 ms skew allowed)').to.equal(true);
    }

    it('reports its version and a ready runtime', async () => {
      const v = await rt.version();
      expect(v.runtimeApiVersion).to.equal('v1');
      expect(v.runtimeName).to.be.a('string').that.is.not.empty;
      expect(v.runtimeVersion).to.be.a('string').that.is.not.empty;
      const { conditions } = await rt.status();
      expect(conditions.find((c) => c.type === 'RuntimeReady')?.status).to.equal(true);
      expect(conditions.some((c) => c.type === 'NetworkReady')).to.equal(true);
    });

    it('runs `sleep 3600` and round-trips labels and annotations', async () => {
      const pod = await runPod('rb-running');
      const sandbox = await rt.podSandboxStatus(pod.id);
      expect(sandbox.state).to.equal('ready');
      expect(sandbox.networkMode).to.equal('NODE');
      expect(sandbox.metadata).to.deep.equal(pod.config.metadata);
      expect(sandbox.labels).to.deep.equal(pod.config.labels);
      expect(sandbox.annotations).to.deep.equal(pod.config.annotations);

      const config = containerConfig(pod.config, 'main', ['sleep', '3600']);
      const id = await settle(rt.createContainer(pod.id, config, pod.config));
      const created = await rt.containerStatus(id);
      expect(created.state).to.equal('created');
      expect(created.startedAt).to.equal(0n);
      await settle(rt.startContainer(id));

      const s = await rt.containerStatus(id);
      expect(s.state).to.equal('running');
      expect(s.id).to.equal(id);
      expect(s.podSandboxId).to.equal(pod.id);
      expect(s.metadata).to.deep.equal({ name: 'main', attempt: 0 });
      expect(s.labels).to.deep.equal(config.labels);
      expect(s.annotations).to.deep.equal(config.annotations);
      expect(s.startedAt > 0n && s.createdAt <= s.startedAt).to.equal(true);
      expect(s.finishedAt).to.equal(0n);
      expect(s.reason).to.equal('');
      expect(s.imageRef).to.be.a('string').that.is.not.empty;
      expect(s.logPath).to.equal(join(pod.config.logDirectory!, 'main/0.log'));

      const listed = await rt.listContainers({ id });
      expect(listed).to.have.length(1);
      expect(listed[0]!.labels).to.deep.equal(config.labels);
      expect(listed[0]!.annotations).to.deep.equal(config.annotations);
      expect(listed[0]!.state).to.equal('running');
    });

    it('reports `sh -c "exit 3"` as exited 3, reason Error, with ordered ns timestamps', async () => {
      const pod = await runPod('rb-exit3');
      const id = await startContainer(pod, 'fail', ['sh', '-c', 'exit 3']);
      const s = await waitExited(id);
      expect(s.exitCode).to.equal(3);
      expect(s.reason).to.equal('Error');
      expectOrdered(s);
    });

    it('reports `true` as exited 0, reason Completed', async () => {
      const pod = await runPod('rb-true');
      const id = await startContainer(pod, 'ok', ['true']);
      const s = await waitExited(id);
      expect(s.exitCode).to.equal(0);
      expect(s.reason).to.equal('Completed');
      expectOrdered(s);
    });

    it('rejects the same container name and attempt (AlreadyExists) and accepts attempt + 1', async () => {
      const pod = await runPod('rb-reserved');
      const first = await settle(
        rt.createContainer(pod.id, containerConfig(pod.config, 'app', ['true']), pod.config),
      );
      const err = await rejection(
        settle(rt.createContainer(pod.id, containerConfig(pod.config, 'app', ['true']), pod.config)),
      );
      expect(errorKind(err), String(err)).to.equal('AlreadyExists');
      expect((err as Error).message).to.match(/is reserved/);
      const second = await settle(
        rt.createContainer(pod.id, containerConfig(pod.config, 'app', ['true'], 1), pod.config),
      );
      expect(second).to.not.equal(first);
      expect((await rt.containerStatus(second)).metadata.attempt).to.equal(1);
    });

    it('execSync returns output and a non-zero exit as data', async () => {
      const pod = await runPod('rb-exec');
      const id = await startContainer(pod, 'main', ['sleep', '3600']);
      const r = await settle(rt.execSync(id, ['sh', '-c', 'echo hi; exit 3'], 10));
      expect(r.stdout.toString()).to.equal('hi\n');
      expect(r.exitCode).to.equal(3);
      const ok = await settle(rt.execSync(id, ['true'], 10));
      expect(ok.exitCode).to.equal(0);
    });

    for (const argv of [
      ['sleep', '3600'],
      ['sh', '-c', 'sleep 3600'],
    ]) {
      it(`stop waits out the timeout for \`${argv.join(' ')}\` (PID 1 ignores SIGTERM), then 137`, async () => {
        const pod = await runPod('rb-stop-ignore');
        const id = await startContainer(pod, 'stubborn', argv);
        const timeoutS = 3;
        const t0 = now();
        await settle(rt.stopContainer(id, timeoutS), 30_000);
        const elapsed = now() - t0;
        expect(elapsed).to.be.at.least(timeoutS * 1000 - 250);
        expect(elapsed).to.be.below(timeoutS * 1000 + 15_000);
        const s = await rt.containerStatus(id);
        expect(s.state).to.equal('exited');
        expect(s.exitCode).to.equal(137);
        expect(s.reason).to.equal('Error');
        expectOrdered(s);
        // Stopping an exited container is a no-op.
        await settle(rt.stopContainer(id, timeoutS), 10_000);
        expect((await rt.containerStatus(id)).exitCode).to.equal(137);
      });
    }

    it('stop is prompt for a script that traps TERM and waits, with the trap exit code', async () => {
      const pod = await runPod('rb-stop-trap');
      const id = await startContainer(pod, 'polite', ['sh', '-c', 'trap "exit 7" TERM; sleep 3600 & wait']);
      // Let the shell reach `wait` with its trap installed (a real process needs a moment).
      await env.waitFor(async () => (await rt.containerStatus(id)).state === 'running', 10_000);
      const ready = now();
      await env.waitFor(() => now() - ready >= 500, 10_000);
      const t0 = now();
      await settle(rt.stopContainer(id, 30), 40_000);
      expect(now() - t0).to.be.below(10_000);
      const s = await rt.containerStatus(id);
      expect(s.exitCode).to.equal(7);
      expect(s.reason).to.equal('Error');
    });

    it('lists containers and sandboxes by sandbox, by label and by state', async () => {
      const a = await runPod('rb-list-a');
      const b = await runPod('rb-list-b');
      const a1 = await startContainer(a, 'one', ['sleep', '3600']);
      const a2 = await startContainer(a, 'two', ['true']);
      const b1 = await startContainer(b, 'one', ['sleep', '3600']);
      await waitExited(a2);

      const ids = (cs: readonly { id: string }[]): string[] => cs.map((c) => c.id).sort();
      expect(ids(await rt.listContainers({ podSandboxId: a.id }))).to.deep.equal([a1, a2].sort());
      expect(ids(await rt.listContainers({ podSandboxId: b.id }))).to.deep.equal([b1]);
      const uidB = b.config.metadata.uid;
      expect(ids(await rt.listContainers({ labelSelector: { [PodUIDLabel]: uidB } }))).to.deep.equal([b1]);
      expect(
        ids(
          await rt.listContainers({
            labelSelector: { [PodUIDLabel]: a.config.metadata.uid, [ContainerNameLabel]: 'two' },
          }),
        ),
      ).to.deep.equal([a2]);
      expect(ids(await rt.listContainers({ podSandboxId: a.id, state: 'running' }))).to.deep.equal([a1]);
      expect(ids(await rt.listContainers({ podSandboxId: a.id, state: 'exited' }))).to.deep.equal([a2]);

      const sandboxes = await rt.listPodSandbox({ labelSelector: { [PodUIDLabel]: uidB } });
      expect(ids(sandboxes)).to.deep.equal([b.id]);
      expect(sandboxes[0]!.labels).to.deep.equal(b.config.labels);
      expect(ids(await rt.listPodSandbox({ id: a.id }))).to.deep.equal([a.id]);
      const mine = await rt.listPodSandbox({ labelSelector: { [ManagedByLabel]: NODE }, state: 'ready' });
      expect(ids(mine)).to.include.members([a.id, b.id]);
    });

    it('stopPodSandbox kills running containers (137) and keeps exit codes; removePodSandbox removes them', async () => {
      const pod = await runPod('rb-remove');
      const running = await startContainer(pod, 'running', ['sleep', '3600']);
      const done = await startContainer(pod, 'done', ['true']);
      await waitExited(done);
      await settle(rt.stopPodSandbox(pod.id), 30_000);
      expect((await rt.podSandboxStatus(pod.id)).state).to.equal('notready');
      const killed = await rt.containerStatus(running);
      expect([killed.state, killed.exitCode, killed.reason]).to.deep.equal(['exited', 137, 'Error']);
      const kept = await rt.containerStatus(done);
      expect([kept.exitCode, kept.reason]).to.deep.equal([0, 'Completed']);
      await settle(rt.stopPodSandbox(pod.id));

      await settle(rt.removePodSandbox(pod.id), 30_000);
      pods = pods.filter((p) => p !== pod.id);
      for (const id of [running, done])
        expect(errorKind(await rejection(rt.containerStatus(id)))).to.equal('NotFound');
      expect(await rt.listContainers({ podSandboxId: pod.id })).to.deep.equal([]);
      expect(errorKind(await rejection(rt.podSandboxStatus(pod.id)))).to.equal('NotFound');
      await rt.removePodSandbox(pod.id);
    });

    it('answers NotFound for unknown IDs and ignores removal of unknown IDs', async () => {
      const unknown = 'f'.repeat(64);
      expect(errorKind(await rejection(rt.containerStatus(unknown)))).to.equal('NotFound');
      expect(errorKind(await rejection(rt.podSandboxStatus(unknown)))).to.equal('NotFound');
      await rt.removeContainer(unknown);
      await rt.removePodSandbox(unknown);
    });

    it('fails a pull from an unreachable registry with a typed error', async () => {
      const image = 'registry.invalid/kubelet-operator/unreachable:1';
      const err = await rejection(settle(rt.pullImage(image)));
      expect(err).to.be.instanceOf(KindError);
      expect((err as Error).message).to.match(/failed to pull and unpack image/);
      expect(await rt.imageStatus(image)).to.equal(null);
      const busybox = await rt.imageStatus(env.images.busybox);
      expect(busybox?.id).to.match(/^sha256:[0-9a-f]{64}$/);
    });
  });
}

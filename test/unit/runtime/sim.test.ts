import { expect } from 'chai';
import { ContainerNameLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import {
  SimAnnotationPrefix,
  SimBehaviourAnnotation,
  SimRuntime,
  compileProfile,
  parseImageReference,
  parseSimProfilesYaml,
  simContainerBehaviourAnnotation,
  type SimRuntimeOptions,
} from '../../../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';
import { errorKind } from '../../../src/util/errors.js';
import { describeRuntimeBehaviour } from '../../support/runtime-behaviour.js';
import { rejection } from '../../support/throws.js';

const BUSYBOX = 'docker.io/library/busybox:latest';
const PAUSE = 'registry.k8s.io/pause:3.10';

/** Polls `pred`, advancing the fake clock 100 ms between polls and letting promise callbacks run. */
function fakeWaitFor(clock: FakeClock) {
  return async (pred: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> => {
    const deadline = clock.now() + timeoutMs;
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (await pred()) return;
      if (clock.now() >= deadline) throw new Error(`condition not met within ${timeoutMs} ms of fake time`);
      clock.advance(100);
    }
  };
}

describeRuntimeBehaviour('sim (FakeClock)', async () => {
  const clock = new FakeClock();
  const runtime = new SimRuntime({ clock, images: [BUSYBOX, PAUSE] });
  return {
    runtime,
    images: { busybox: BUSYBOX, pause: PAUSE },
    waitFor: fakeWaitFor(clock),
    now: () => clock.now(),
    teardown: () => runtime.close(),
  };
});

let podSeq = 0;
function sandboxConfig(
  opts: { hostNetwork?: boolean; annotations?: Record<string, string> } = {},
): PodSandboxConfig {
  const n = podSeq++;
  const uid = `uid-${n}`;
  return {
    metadata: { name: `pod-${n}`, uid, namespace: 'default', attempt: 0 },
    logDirectory: `/var/log/pods/default_pod-${n}_${uid}`,
    labels: { [PodUIDLabel]: uid },
    annotations: opts.annotations ?? {},
    linux: { securityContext: { namespaceOptions: { network: opts.hostNetwork ? 'NODE' : 'POD' } } },
  };
}

function containerConfig(
  sb: PodSandboxConfig,
  name: string,
  argv: string[] | undefined,
  extra: Partial<ContainerConfig> = {},
): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: BUSYBOX,
    ...(argv && { command: argv }),
    labels: { [PodUIDLabel]: sb.metadata.uid, [ContainerNameLabel]: name },
    annotations: {},
    logPath: `${name}/0.log`,
    ...extra,
  };
}

function newSim(opts: Partial<SimRuntimeOptions> = {}) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const sim = new SimRuntime({ clock, images: [BUSYBOX], ...opts });
  async function pod(o: Parameters<typeof sandboxConfig>[0] = {}) {
    const config = sandboxConfig(o);
    return { id: await sim.runPodSandbox(config), config };
  }
  async function run(
    p: { id: string; config: PodSandboxConfig },
    name: string,
    argv: string[] | undefined,
    extra: Partial<ContainerConfig> = {},
  ) {
    const id = await sim.createContainer(p.id, containerConfig(p.config, name, argv, extra), p.config);
    await sim.startContainer(id);
    return id;
  }
  return { sim, clock, pod, run };
}

describe('SimRuntime', () => {
  describe('in-place resize', () => {
    it('applies new resources to a running container, after the profile latency, and refuses an exited one', async () => {
      const { sim, clock, pod, run } = newSim({
        profiles: parseSimProfilesYaml('images: { "busybox:1.36": { resizeLatencyMs: 2000 } }'),
        images: [BUSYBOX, 'busybox:1.36'],
      });
      const p = await pod();
      const created = { linux: { resources: { cpuShares: 512, cpuQuota: 50_000, cpuPeriod: 100_000 } } };
      const fast = await run(p, 'fast', ['sleep', '60'], created);
      expect((await sim.containerStatus(fast)).resources).to.deep.equal(created.linux.resources);
      await sim.updateContainerResources(fast, { cpuShares: 1024, cpuQuota: 100_000, cpuPeriod: 100_000 });
      expect((await sim.containerStatus(fast)).resources?.cpuShares).to.equal(1024);

      const slow = await run(p, 'slow', ['sleep', '60'], { ...created, image: 'busybox:1.36' });
      await sim.updateContainerResources(slow, { cpuShares: 2048 });
      expect((await sim.containerStatus(slow)).resources?.cpuShares, 'not yet').to.equal(512);
      clock.advance(1500);
      // Asked again for the same while applying: the wait does not start over.
      await sim.updateContainerResources(slow, { cpuShares: 2048 });
      clock.advance(500);
      expect((await sim.containerStatus(slow)).resources?.cpuShares).to.equal(2048);

      await sim.stopContainer(fast, 0);
      expect(errorKind(await rejection(sim.updateContainerResources(fast, { cpuShares: 2 })))).to.equal(
        'Unknown',
      );
      expect(errorKind(await rejection(sim.updateContainerResources('nope', { cpuShares: 2 })))).to.equal(
        'NotFound',
      );
    });

    it('reports the memory usage the behaviour profile states while the container runs', async () => {
      const { sim, run, pod } = newSim({
        profiles: parseSimProfilesYaml('defaults: { memoryUsageBytes: 41943040 }'),
      });
      const p = await pod();
      const id = await run(p, 'app', ['sleep', '60']);
      const { memory } = await sim.containerStats(id);
      expect(memory).to.include({ usageBytes: 41_943_040, workingSetBytes: 41_943_040 });
      expect(memory).not.to.have.property('availableBytes');
      await sim.stopContainer(id, 0);
      expect((await sim.containerStats(id)).memory?.usageBytes).to.equal(0);
    });

    it('fails a resize the behaviour profile says fails, changing nothing', async () => {
      const { sim, run, pod } = newSim({
        profiles: parseSimProfilesYaml('defaults: { resizeError: "cgroup update refused" }'),
      });
      const p = await pod();
      const id = await run(p, 'app', ['sleep', '60'], { linux: { resources: { cpuShares: 512 } } });
      const err = await rejection(sim.updateContainerResources(id, { cpuShares: 1024 }));
      expect(err.message).to.contain('cgroup update refused');
      expect((await sim.containerStatus(id)).resources?.cpuShares).to.equal(512);
    });
  });

  describe('behaviour profiles', () => {
    it('takes image profiles from YAML data, layered over the command and under annotations', async () => {
      const profiles = parseSimProfilesYaml(`
images:
  example.com/crasher:
    run: { exitAfterMs: 5000, exitCode: 2 }
    logs: ["starting", { line: "boom", stream: stderr, afterMs: 4000 }]
  busybox:1.36:
    startLatencyMs: 200
`);
      const { sim, clock, pod, run } = newSim({
        profiles,
        images: [BUSYBOX, 'example.com/crasher:v1', 'busybox:1.36'],
      });
      const p = await pod();
      const crash = await run(p, 'crash', undefined, { image: 'example.com/crasher:v1' });
      clock.advance(3999);
      expect(sim.readLogs(crash).map((l) => l.split(' ').slice(1).join(' '))).to.deep.equal([
        'stdout F starting',
      ]);
      clock.advance(1000);
      expect((await sim.containerStatus(crash)).state).to.equal('running');
      expect(sim.readLogs(crash)[1]).to.match(/ stderr F boom$/);
      clock.advance(1);
      const s = await sim.containerStatus(crash);
      expect([s.state, s.exitCode, s.reason]).to.deep.equal(['exited', 2, 'Error']);
      expect(sim.readLogs(crash)).to.have.length(2);

      // The annotation beats the image; the per-container annotation beats the pod-wide one.
      const overridden = await run(p, 'calm', undefined, {
        image: 'example.com/crasher:v1',
        annotations: {
          [SimBehaviourAnnotation]: '{"run": {"exitAfterMs": 1000, "exitCode": 9}}',
          [simContainerBehaviourAnnotation('calm')]: 'run: {}',
        },
      });
      clock.advance(10_000);
      expect((await sim.containerStatus(overridden)).state).to.equal('running');

      // startLatencyMs: start resolves only after the clock moved.
      const id = await sim.createContainer(
        p.id,
        containerConfig(p.config, 'slow', ['sleep', '60'], { image: 'busybox:1.36' }),
        p.config,
      );
      let started = false;
      const starting = sim.startContainer(id).then(() => (started = true));
      await Promise.resolve();
      expect((await sim.containerStatus(id)).state).to.equal('created');
      clock.advance(200);
      await starting;
      expect(started).to.equal(true);
      expect((await sim.containerStatus(id)).state).to.equal('running');
    });

    it('uses the image entrypoint and cmd when the container gives no command', async () => {
      const { sim, pod, run } = newSim({ profiles: { images: { busybox: { cmd: ['sh'] } } } });
      const p = await pod();
      const id = await run(p, 'default', undefined);
      expect((await sim.containerStatus(id)).reason).to.equal('Completed');
      const withArgs = await run(p, 'args', undefined, { args: ['sh', '-c', 'exit 5'] });
      expect((await sim.containerStatus(withArgs)).exitCode).to.equal(5);
    });

    it('reports OOMKilled, start and create errors from data', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const oom = await run(p, 'oom', ['sleep', '3600'], {
        annotations: { [SimBehaviourAnnotation]: 'run: { exitAfterMs: 100, oomKilled: true }' },
      });
      clock.advance(100);
      const s = await sim.containerStatus(oom);
      expect([s.exitCode, s.reason]).to.deep.equal([137, 'OOMKilled']);

      const bad = await sim.createContainer(
        p.id,
        containerConfig(p.config, 'nostart', ['app'], {
          annotations: {
            [SimBehaviourAnnotation]: 'startError: \'exec: "app": executable file not found in $PATH\'',
          },
        }),
        p.config,
      );
      const err = await rejection(sim.startContainer(bad));
      expect(errorKind(err)).to.equal('Unknown');
      const st = await sim.containerStatus(bad);
      expect([st.state, st.exitCode, st.reason]).to.deep.equal(['exited', 128, 'StartError']);
      expect(st.message).to.match(/executable file not found/);

      const created = containerConfig(p.config, 'nocreate', ['app'], {
        annotations: { [SimBehaviourAnnotation]: 'createError: no space left on device' },
      });
      expect((await rejection(sim.createContainer(p.id, created, p.config))).message).to.equal(
        'no space left on device',
      );
      // The failed create released its name.
      const ok = containerConfig(p.config, 'nocreate', ['app']);
      expect(await sim.createContainer(p.id, ok, p.config)).to.be.a('string');
    });

    it('answers exec from profile rules first, in their time windows, then from the command grammar', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const rules = [
        {
          argv: ['cat', '/tmp/healthy'],
          fromMs: 30_000,
          exitCode: 1,
          stderr: 'cat: /tmp/healthy: No such file',
        },
        { pattern: '^check ', stdout: 'fine\n', delayMs: 500 },
      ];
      const id = await run(p, 'main', ['sleep', '3600'], {
        annotations: { [simContainerBehaviourAnnotation('main')]: JSON.stringify({ exec: rules }) },
      });
      expect((await sim.execSync(id, ['cat', '/tmp/healthy'], 1)).exitCode).to.equal(0);
      const slow = sim.execSync(id, ['check', 'x'], 1);
      clock.advance(500);
      expect((await slow).stdout.toString()).to.equal('fine\n');
      clock.advance(30_000);
      const late = await sim.execSync(id, ['cat', '/tmp/healthy'], 1);
      expect([late.exitCode, late.stderr.toString()]).to.deep.equal([1, 'cat: /tmp/healthy: No such file']);

      const timedOut = rejection(sim.execSync(id, ['sleep', '10'], 1));
      clock.advance(1000);
      expect(errorKind(await timedOut)).to.equal('DeadlineExceeded');

      const done = await run(p, 'done', ['true']);
      expect(errorKind(await rejection(sim.execSync(done, ['true'], 1)))).to.equal('InvalidArgument');
    });

    it('rejects invalid profile data with InvalidArgument naming the field', async () => {
      const cases: [unknown, RegExp][] = [
        [{ images: { busybox: { run: { exitCode: 300 } } } }, /images\.busybox\.run\.exitCode: Too big/],
        [{ images: { busybox: { startLatency: 5 } } }, /images\.busybox\.startLatency: unknown field/],
        [{ defaults: { ports: { http: {} } } }, /defaults\.ports\.http: invalid key: port must be 1-65535/],
        [{ defaults: { exec: [{ exitCode: 1 }] } }, /defaults\.exec\.0: exactly one of argv or pattern/],
        [
          { defaults: { exec: [{ pattern: '(' }] } },
          /defaults\.exec\.0\.pattern: not a valid regular expression/,
        ],
        [{ defaults: { logs: [42] } }, /defaults\.logs\.0/],
        [{ images: { 'Not A Ref': {} } }, /images\.Not A Ref: not an image reference/],
        [{ nodes: {} }, /nodes: unknown field/],
      ];
      for (const [profiles, message] of cases) {
        const err = await rejection(() => new SimRuntime({ clock: new FakeClock(), profiles }));
        expect(errorKind(err), String(err)).to.equal('InvalidArgument');
        expect(err.message).to.match(message);
      }
      expect(() => compileProfile({ run: { exitAfterMs: -1 } }, 'test')).to.throw(/test: .*run\.exitAfterMs/);
      expect(() => parseSimProfilesYaml('images: [')).to.throw(/not valid YAML/);

      const { sim, pod } = newSim();
      const p = await pod();
      for (const [key, value, message] of [
        [
          SimBehaviourAnnotation,
          'run: [',
          /annotation sim\.kubelet-operator\.dev\/behaviour: not valid YAML/,
        ],
        [simContainerBehaviourAnnotation('c'), 'ignoresSigterm: maybe', /behaviour\.c: .*ignoresSigterm/],
        // JSON goes to the JSON parser: 5,000 levels deep is read (the YAML parser overflowed its stack on
        // it) and the schema says what is wrong; flow-style YAML that is not JSON still parses as YAML.
        [
          SimBehaviourAnnotation,
          `{"run": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
          /profile: run: .*expected object/,
        ],
        [SimBehaviourAnnotation, '{run: {exitAfterMs: -1}}', /profile: run\.exitAfterMs/],
      ] as const) {
        const cfg = containerConfig(p.config, 'c', ['true'], { annotations: { [key]: value } });
        const err = await rejection(sim.createContainer(p.id, cfg, p.config));
        expect(errorKind(err)).to.equal('InvalidArgument');
        expect(err.message).to.match(message);
      }
    });
  });

  describe('lifecycle', () => {
    it('stops SIGTERM-honouring containers at once (143) and SIGTERM-ignoring ones at the timeout', async () => {
      const { sim, clock, pod, run } = newSim({ images: [BUSYBOX, 'example.com/app:1'] });
      const p = await pod();
      const app = await run(p, 'app', ['/app/server'], { image: 'example.com/app:1' });
      await sim.stopContainer(app, 30);
      const s = await sim.containerStatus(app);
      expect([s.exitCode, s.reason]).to.deep.equal([143, 'Error']);

      const polite = await run(p, 'polite', ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done']);
      await sim.stopContainer(polite, 30);
      expect((await sim.containerStatus(polite)).reason).to.equal('Completed');

      // Ignoring SIGTERM with a natural exit before the timeout: it exits on its own, with 0.
      const short = await run(p, 'short', ['sleep', '5']);
      const stopping = sim.stopContainer(short, 30);
      clock.advance(5000);
      await stopping;
      expect((await sim.containerStatus(short)).exitCode).to.equal(0);

      // Two stops: the shorter timeout wins; timeout 0 kills at once.
      const twice = await run(p, 'twice', ['sleep', '3600']);
      const first = sim.stopContainer(twice, 30);
      const second = sim.stopContainer(twice, 2);
      clock.advance(2000);
      await Promise.all([first, second]);
      expect((await sim.containerStatus(twice)).exitCode).to.equal(137);
      const now = await run(p, 'now', ['sleep', '3600']);
      await sim.stopContainer(now, 0);
      expect((await sim.containerStatus(now)).exitCode).to.equal(137);

      // Removing a container with a pending stop settles the stop.
      const removed = await run(p, 'removed', ['sleep', '3600']);
      const pending = sim.stopContainer(removed, 30);
      await sim.removeContainer(removed);
      await pending;
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('checks create and start preconditions as containerd does', async () => {
      const { sim, pod } = newSim();
      const p = await pod();
      const missingImage = containerConfig(p.config, 'x', ['true'], { image: 'example.com/absent:1' });
      expect(errorKind(await rejection(sim.createContainer(p.id, missingImage, p.config)))).to.equal(
        'NotFound',
      );
      const cfg = containerConfig(p.config, 'x', ['true']);
      expect(errorKind(await rejection(sim.createContainer('nope', cfg, p.config)))).to.equal('NotFound');
      const noSandboxConfig = sim.createContainer(p.id, cfg, undefined as unknown as PodSandboxConfig);
      expect(errorKind(await rejection(noSandboxConfig))).to.equal('InvalidArgument');
      const id = await sim.createContainer(p.id, cfg, p.config);
      await sim.stopPodSandbox(p.id);
      expect(errorKind(await rejection(sim.startContainer(id)))).to.equal('InvalidArgument');
      const late = containerConfig(p.config, 'late', ['true']);
      expect(errorKind(await rejection(sim.createContainer(p.id, late, p.config)))).to.equal(
        'InvalidArgument',
      );
      expect(errorKind(await rejection(sim.runPodSandbox(p.config)))).to.equal('AlreadyExists');
      expect((await sim.containerStatus(id)).state).to.equal('created');
    });

    it('is deterministic: the same calls give the same IDs and timestamps', async () => {
      const trace = async () => {
        podSeq = 1000;
        const { sim, clock, pod, run } = newSim();
        const p = await pod();
        const a = await run(p, 'a', ['sleep', '1']);
        clock.advance(1500);
        return [p.id, a, await sim.containerStatus(a)];
      };
      expect(await trace()).to.deep.equal(await trace());
    });

    it('fails every call while down, keeps containers running, and injects counted faults', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const id = await run(p, 'c', ['sleep', '10']);
      sim.setDown(true);
      for (const call of [() => sim.version(), () => sim.containerStatus(id), () => sim.listContainers()]) {
        expect(errorKind(await rejection(call))).to.equal('Unavailable');
      }
      clock.advance(10_000);
      sim.setDown(false);
      expect((await sim.containerStatus(id)).state).to.equal('exited');

      sim.injectFault({ op: 'listContainers', kind: 'DeadlineExceeded', count: 2 });
      expect(errorKind(await rejection(sim.listContainers()))).to.equal('DeadlineExceeded');
      expect(errorKind(await rejection(sim.listContainers()))).to.equal('DeadlineExceeded');
      expect(await sim.listContainers()).to.have.length(1);
      sim.injectFault({ op: '*', kind: 'Internal', message: 'boom' });
      const err = await rejection(sim.status());
      expect([errorKind(err), err.message]).to.deep.equal(['Internal', 'boom']);
      expect((await sim.status()).conditions).to.have.length(2);
      expect(() => sim.injectFault({ op: 'status', kind: 'Internal', count: 0 })).to.throw(
        /positive integer/,
      );
    });

    it('rejects pending calls and every later call once closed, leaving no timers', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const id = await run(p, 'c', ['sleep', '3600']);
      const stopping = rejection(sim.stopContainer(id, 30));
      const exec = rejection(sim.execSync(id, ['sleep', '60'], 0));
      await sim.close();
      expect(errorKind(await stopping)).to.equal('Unavailable');
      expect(errorKind(await exec)).to.equal('Unavailable');
      expect(errorKind(await rejection(sim.version()))).to.equal('Unavailable');
      expect(clock.pendingTimers()).to.equal(0);
    });
  });

  describe('network, probes and logs', () => {
    it('allocates pod IPs from the CIDR, gives host-network pods the node IP, and releases on remove', async () => {
      const { sim, pod } = newSim({ podCIDR: '10.244.1.0/29', nodeIP: '192.168.1.10' });
      const pods = [];
      for (let i = 0; i < 5; i++) pods.push(await pod());
      const ips = await Promise.all(pods.map(async (p) => (await sim.podSandboxStatus(p.id)).network!.ip));
      expect(ips).to.deep.equal(['10.244.1.2', '10.244.1.3', '10.244.1.4', '10.244.1.5', '10.244.1.6']);
      const exhausted = await rejection(pod());
      expect(errorKind(exhausted)).to.equal('Unknown');
      expect(exhausted.message).to.match(/no IP addresses available/);
      const host = await pod({ hostNetwork: true });
      const hs = await sim.podSandboxStatus(host.id);
      expect([hs.network?.ip, hs.networkMode]).to.deep.equal(['192.168.1.10', 'NODE']);

      await sim.stopPodSandbox(pods[1]!.id);
      expect(sim.allocatedIPs).to.equal(5);
      await sim.removePodSandbox(pods[1]!.id);
      expect(sim.allocatedIPs).to.equal(4);
      const again = await pod();
      expect((await sim.podSandboxStatus(again.id)).network!.ip).to.equal('10.244.1.3');
      expect(() => new SimRuntime({ clock: new FakeClock(), podCIDR: '10.0.0.0/33' })).to.throw(/podCIDR/);
      expect(() => new SimRuntime({ clock: new FakeClock(), nodeIP: 'node-1' })).to.throw(/nodeIP/);
    });

    it('answers port probes from `httpd -f -p` and from port rules with ready and fail times', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const web = await run(p, 'web', ['httpd', '-f', '-p', '8080']);
      expect(sim.probePort(web, 8080, 'http')).to.deep.equal({ result: 'success', output: '' });
      expect(sim.probePort(web, 8080, 'tcp').result).to.equal('success');
      const ip = (await sim.podSandboxStatus(p.id)).network!.ip;
      expect(sim.probePort(web, 9090, 'tcp')).to.deep.equal({
        result: 'failure',
        output: `dial tcp ${ip}:9090: connect: connection refused`,
      });

      const ports = { ports: { '80': { readyAfterMs: 2000, failAfterMs: 10_000 }, '81': { fails: true } } };
      const app = await run(p, 'app', ['sleep', 'infinity'], {
        annotations: { [SimBehaviourAnnotation]: JSON.stringify(ports) },
      });
      expect(sim.probePort(app, 80, 'http').result).to.equal('failure');
      clock.advance(2000);
      expect(sim.probePort(app, 80, 'http').result).to.equal('success');
      clock.advance(8000);
      expect(sim.probePort(app, 80, 'http').output).to.equal('HTTP probe failed with statuscode: 500');
      expect(sim.probePort(app, 81, 'http').result).to.equal('failure');
      await sim.stopContainer(web, 0);
      expect(sim.probePort(web, 8080, 'tcp').result).to.equal('failure');
    });

    it('declares its capabilities: nothing on the host, its own probe and log answers, sim:// IDs', async () => {
      const { sim, pod, run } = newSim();
      const caps = sim.capabilities;
      expect(sim.kind).to.equal('sim');
      expect(caps).to.include({
        hostLogDirectories: false,
        hostPodCgroups: false,
        podAnnotationPrefix: SimAnnotationPrefix,
        runtimeType: 'sim',
      });
      expect(Object.isFrozen(caps)).to.equal(true);
      const p = await pod();
      const web = await run(p, 'web', ['sh', '-c', 'echo up; httpd -f -p 8080']);
      // Detached from the runtime object, as the kubelet holds them.
      const { probePort, readLogs } = caps;
      expect(probePort!(web, 8080, 'http')).to.deep.equal(sim.probePort(web, 8080, 'http'));
      expect(probePort!(web, 8080, 'tcp').result).to.equal('success');
      expect(readLogs!(web)).to.deep.equal(sim.readLogs(web));
      expect(errorKind(await rejection(() => probePort!('nope', 80, 'tcp')))).to.equal('NotFound');
      expect(errorKind(await rejection(() => readLogs!('nope')))).to.equal('NotFound');
    });

    it('writes CRI-format log lines as the script reaches them', async () => {
      const { sim, clock, pod, run } = newSim();
      const p = await pod();
      const id = await run(p, 'talker', ['sh', '-c', 'echo one; sleep 2; echo two >&2; sleep 1; exit 1']);
      const first = sim.readLogs(id);
      expect(first).to.have.length(1);
      expect(first[0]).to.match(/^2026-01-01T00:00:00(\.\d+)?Z stdout F one$/);
      clock.advance(2000);
      expect(sim.readLogs(id)[1]).to.match(/^2026-01-01T00:00:02(\.\d+)?Z stderr F two$/);
      clock.advance(1000);
      const s = await sim.containerStatus(id);
      expect([s.exitCode, s.logPath]).to.deep.equal([1, `${p.config.logDirectory}/talker/0.log`]);
      const cfg = { ...sandboxConfig(), logDirectory: '' };
      const noDir = await sim.runPodSandbox(cfg);
      const quiet = await sim.createContainer(noDir, containerConfig(cfg, 'q', ['true']), cfg);
      expect((await sim.containerStatus(quiet)).logPath).to.equal('');
    });
  });

  describe('images', () => {
    it('normalises references, pulls, lists and removes images', async () => {
      expect(parseImageReference('busybox')?.ref).to.equal('docker.io/library/busybox:latest');
      expect(parseImageReference('localhost:5000/a/b')?.ref).to.equal('localhost:5000/a/b:latest');
      expect(parseImageReference('quay.io/x/y@sha256:abc')?.ref).to.equal('quay.io/x/y@sha256:abc');
      expect(parseImageReference('Upper/Case')).to.equal(undefined);

      const profiles = {
        images: {
          'example.com/slow': { pullLatencyMs: 3000 },
          'example.com/denied': { pullError: 'unauthorized' },
        },
      };
      const { sim, clock } = newSim({ profiles });
      const ref = await sim.pullImage('nginx:1.27');
      expect((await sim.imageStatus('docker.io/library/nginx:1.27'))?.id).to.equal(ref);
      expect((await sim.imageStatus(ref))?.repoTags).to.deep.equal(['docker.io/library/nginx:1.27']);
      const slow = sim.pullImage('example.com/slow:2');
      clock.advance(2999);
      expect(await sim.imageStatus('example.com/slow:2')).to.equal(null);
      clock.advance(1);
      await slow;
      const denied = await rejection(sim.pullImage('example.com/denied:1'));
      expect(denied.message).to.equal('failed to pull and unpack image "example.com/denied:1": unauthorized');
      const unreachable = await rejection(sim.pullImage('registry.invalid/x:1'));
      expect([errorKind(unreachable), unreachable.message]).to.deep.equal([
        'Unknown',
        'failed to pull and unpack image "registry.invalid/x:1": failed to resolve reference "registry.invalid/x:1": ' +
          'failed to do request: Head "https://registry.invalid/v2/x/manifests/1": dial tcp: lookup registry.invalid: no such host',
      ]);
      expect((await sim.listImages()).map((i) => i.repoTags[0]).sort()).to.deep.equal([
        BUSYBOX,
        'docker.io/library/nginx:1.27',
        'example.com/slow:2',
      ]);
      const before = await sim.imageFsInfo();
      const sizes = (await sim.listImages()).reduce((sum, i) => sum + i.size, 0);
      expect(before.imageFilesystems[0]).to.deep.include({ usedBytes: sizes, inodesUsed: 3 });
      const nginx = (await sim.imageStatus('nginx:1.27'))!.size;
      await sim.removeImage('nginx:1.27');
      await sim.removeImage('nginx:1.27');
      expect(await sim.imageStatus(ref)).to.equal(null);
      // The image filesystem (also the containers') gives the removed image's bytes back.
      const after = await sim.imageFsInfo();
      expect(after.imageFilesystems[0]).to.deep.include({ usedBytes: sizes - nginx, inodesUsed: 2 });
      expect(after.containerFilesystems[0]?.mountpoint).to.equal(after.imageFilesystems[0]?.mountpoint);
    });

    it('names a container filesystem of its own when told: every container’s layer, until it is removed', async () => {
      const { sim, clock, pod, run } = newSim({
        containerFilesystem: 'separate',
        profiles: parseSimProfilesYaml('images: { busybox: { usage: { disk: 100Mi } } }'),
      });
      const p = await pod();
      const short = await run(p, 'short', ['sleep', '5']);
      await run(p, 'long', ['sleep', 'infinity']);
      clock.advance(10_000);
      await sim.stopContainer(short, 0);
      const info = await sim.imageFsInfo();
      expect(info.imageFilesystems[0]?.mountpoint).to.equal('/var/lib/sim/images');
      // The exited container's layer stays on disk with the running one's.
      expect(info.containerFilesystems[0]).to.deep.include({
        mountpoint: '/var/lib/sim/containers',
        usedBytes: 200 * 2 ** 20,
      });
      await sim.removeContainer(short);
      expect((await sim.imageFsInfo()).containerFilesystems[0]?.usedBytes).to.equal(100 * 2 ** 20);
    });
  });

  describe('scale', () => {
    /** Builds `containers` containers in sandboxes of 10, half of them with a finite run. */
    async function populate(containers: number) {
      const env = newSim({ podCIDR: '10.0.0.0/8' });
      const pods = [];
      for (let i = 0; i < containers / 10; i++) {
        const p = await env.pod();
        pods.push(p);
        for (let j = 0; j < 10; j++)
          await env.run(p, `c${j}`, j % 2 === 0 ? ['sleep', '60'] : ['sleep', 'infinity']);
      }
      return { ...env, pods };
    }

    /** Records examined by one round of per-pod and per-container calls. */
    async function workPerCall(env: Awaited<ReturnType<typeof populate>>): Promise<number[]> {
      const { sim, pods } = env;
      const p = pods[Math.floor(pods.length / 2)]!;
      const counts: number[] = [];
      const measure = async (call: () => Promise<unknown>) => {
        const before = sim.recordsVisited;
        await call();
        counts.push(sim.recordsVisited - before);
      };
      const [c] = await sim.listContainers({ podSandboxId: p.id });
      await measure(() => sim.listContainers({ podSandboxId: p.id }));
      await measure(() => sim.listContainers({ labelSelector: { [PodUIDLabel]: p.config.metadata.uid } }));
      await measure(() => sim.listPodSandbox({ labelSelector: { [PodUIDLabel]: p.config.metadata.uid } }));
      await measure(() => sim.containerStatus(c!.id));
      await measure(() => sim.podSandboxStatus(p.id));
      await measure(() => sim.stopContainer(c!.id, 0));
      await measure(() => sim.removeContainer(c!.id));
      return counts;
    }

    it('holds 100,000 containers with per-call work independent of the total', async function () {
      this.timeout(120_000);
      const small = await populate(1000);
      const large = await populate(100_000);
      expect(await large.sim.listContainers({ state: 'running' })).to.have.length(100_000);
      const smallWork = await workPerCall(small);
      const largeWork = await workPerCall(large);
      expect(largeWork).to.deep.equal(smallWork);
      expect(Math.max(...largeWork)).to.be.at.most(10);

      // One timer per finite run; 50,000 exits fire in one advance of the heap-backed FakeClock.
      expect(large.clock.pendingTimers()).to.equal(50_000 - 1);
      large.clock.advance(60_000);
      expect(await large.sim.listContainers({ state: 'exited' })).to.have.length(50_000 - 1);
      expect(large.clock.pendingTimers()).to.equal(0);
      await Promise.all([small.sim.close(), large.sim.close()]);
    });
  });
});

describe('FakeClock (heap) ordering', () => {
  it('fires random timers in (due, creation) order and skips cancelled ones', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const clock = new FakeClock(0);
    const fired: number[] = [];
    const expected: { at: number; seq: number }[] = [];
    for (let seq = 0; seq < 5000; seq++) {
      const at = Math.floor(random() * 1000);
      const h = clock.setTimer(at, () => fired.push(seq));
      if (random() < 0.3) h.cancel();
      else expected.push({ at, seq });
    }
    expect(clock.pendingTimers()).to.equal(expected.length);
    clock.advance(1000);
    expected.sort((a, b) => a.at - b.at || a.seq - b.seq);
    expect(fired).to.deep.equal(expected.map((e) => e.seq));
    expect(clock.pendingTimers()).to.equal(0);
  });
});

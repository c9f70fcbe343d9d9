// KubeGenericRuntimeManager.syncPod on the simulated runtime: what gets started, in which order, with which
// events, results and reason-cache entries.
import { expect } from 'chai';
import { SimBehaviourAnnotation } from '../../../../src/runtime/sim/index.js';
import { KindError } from '../../../../src/util/errors.js';
import { container, Harness, IMAGE, makePod, probes, summary } from './manager-fixtures.js';

const forever = ['sleep', 'infinity'];
/** Not a busybox applet: the simulated process exits promptly on SIGTERM. */
const server = ['server'];

describe('KubeGenericRuntimeManager.syncPod', function () {
  this.timeout(10_000);

  it('starts a plain pod: sandbox, pull, create, start, with the kubelet events in order', async () => {
    const h = new Harness();
    const pod = makePod({
      containers: [container('app', forever, { image: 'docker.io/library/nginx:1.27' })],
    });
    const r = await h.sync(pod);
    expect(r.error).to.equal(undefined);
    // As the kubelet: a new pod is first "killed" (nothing to stop), then gets its sandbox.
    expect(summary(r)).to.deep.equal([
      `KillPodSandbox ${pod.metadata.uid}`,
      `CreatePodSandbox ${pod.metadata.name}_default(${pod.metadata.uid})`,
      `ConfigPodSandbox ${(await h.status(pod)).sandboxes[0]!.id}`,
      'StartContainer app',
    ]);
    const size = (await h.runtime.imageStatus('docker.io/library/nginx:1.27'))!.size;
    expect(h.events).to.deep.equal([
      {
        type: 'Normal',
        reason: 'Pulling',
        message: 'Pulling image "docker.io/library/nginx:1.27"',
        fieldPath: 'spec.containers{app}',
      },
      {
        type: 'Normal',
        reason: 'Pulled',
        message: `Successfully pulled image "docker.io/library/nginx:1.27" in 0s (0s including waiting). Image size: ${size} bytes.`,
        fieldPath: 'spec.containers{app}',
      },
      {
        type: 'Normal',
        reason: 'Created',
        message: 'Created container: app',
        fieldPath: 'spec.containers{app}',
      },
      {
        type: 'Normal',
        reason: 'Started',
        message: 'Started container app',
        fieldPath: 'spec.containers{app}',
      },
    ]);

    const st = await h.status(pod);
    expect(st.sandboxes).to.have.length(1);
    expect(st.sandboxes[0]).to.include({ state: 'ready', attempt: 0, netns: 'pod' });
    expect(st.ips).to.have.length(1);
    expect(st.ips[0]).to.match(/^10\.88\./);
    expect(st.containers).to.have.length(1);
    expect(st.containers[0]).to.include({
      name: 'app',
      state: 'running',
      restartCount: 0,
      runtimeType: 'sim',
    });
    expect(st.containers[0]!.startedAt).to.equal(h.clock.now());

    // Level-triggered: a second sync has nothing to do.
    h.takeEvents();
    const again = await h.sync(pod);
    expect(summary(again)).to.deep.equal([`ConfigPodSandbox ${st.sandboxes[0]!.id}`]);
    expect(h.events).to.deep.equal([]);
  });

  it('reports an image already present, and passes the resolved environment and expanded args', async () => {
    const h = new Harness();
    h.configMaps.set('cfg', { MODE: 'prod' });
    h.secrets.set('creds', { TOKEN: 's3cret' });
    const pod = makePod({
      containers: [
        container('app', ['sh', '-c'], {
          args: ['echo $(MODE) $(NAME)'],
          env: [
            { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } },
            { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          ],
          envFrom: [{ prefix: 'DB_', secretRef: { name: 'creds' } }],
        }),
      ],
    });
    await h.sync(pod);
    expect(h.takeEvents()[0]).to.equal(`Pulled: Container image "${IMAGE}" already present on machine`);
    const config = h.createdConfigs[0]!;
    const st = await h.status(pod);
    expect(config.envs).to.deep.equal([
      { key: 'DB_TOKEN', value: 's3cret' },
      { key: 'MODE', value: 'prod' },
      { key: 'NAME', value: pod.metadata.name },
      { key: 'POD_IP', value: st.ips[0] },
    ]);
    expect(config.args).to.deep.equal([`echo prod ${pod.metadata.name}`]);
  });

  it('runs init containers one per sync, then the regular containers', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('init-1', ['sh', '-c', 'exit 0']), container('init-2', ['sleep', '5'])],
      containers: [container('app', forever)],
    });
    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer init-1',
    ]);
    expect((await h.status(pod)).containers.map((c) => `${c.name}:${c.state}`)).to.deep.equal([
      'init-1:exited',
    ]);

    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer init-2',
    ]);
    // init-2 still runs: nothing else may start.
    h.clock.advance(1000);
    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([]);

    h.clock.advance(5000);
    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer app',
    ]);
    const st = await h.status(pod);
    expect(st.containers.map((c) => `${c.name}:${c.state}`)).to.deep.equal([
      'app:running',
      'init-2:exited',
      'init-1:exited',
    ]);
    expect(h.events.filter((e) => e.reason === 'Started').map((e) => e.fieldPath)).to.deep.equal([
      'spec.initContainers{init-1}',
      'spec.initContainers{init-2}',
      'spec.containers{app}',
    ]);
  });

  it('keeps a sidecar running beside the regular containers and restarts it when it exits', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('proxy', ['sleep', '10'], { restartPolicy: 'Always' })],
      containers: [container('app', forever)],
    });
    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer proxy',
    ]);
    expect(summary(await h.sync(pod)).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer app',
    ]);
    h.clock.advance(10_000);
    expect((await h.status(pod)).containers.find((c) => c.name === 'proxy')!.state).to.equal('exited');
    const r = await h.sync(pod);
    expect(summary(r).filter((s) => s.startsWith('Start'))).to.deep.equal(['StartContainer proxy']);
    const st = await h.status(pod);
    expect(
      st.containers
        .filter((c) => c.state === 'running')
        .map((c) => `${c.name}#${c.restartCount}`)
        .sort(),
    ).to.deep.equal(['app#0', 'proxy#1']);
  });

  it('backs off a crash-looping container, then restarts it with the next attempt', async () => {
    const h = new Harness();
    const pod = makePod({ containers: [container('app', ['sh', '-c', 'exit 1'])] });
    const uid = pod.metadata.uid!;
    await h.sync(pod); // attempt 0 runs and exits 1 at once
    let r = await h.sync(pod); // no back-off yet: attempt 1
    expect(summary(r)).to.include('StartContainer app');
    expect(r.error).to.equal(undefined);
    h.takeEvents();

    r = await h.sync(pod);
    const desc = `${pod.metadata.name}_default(${uid})`;
    expect(summary(r)).to.include('StartContainer app CrashLoopBackOff');
    expect(r.results.find((x) => x.error)!.message).to.equal(
      `back-off 10s restarting failed container=app pod=${desc}`,
    );
    expect(r.error).to.be.instanceOf(KindError);
    expect(r.error!.message).to.equal(
      `failed to "StartContainer" for "app" with CrashLoopBackOff: "back-off 10s restarting failed container=app pod=${desc}"`,
    );
    expect(h.events).to.deep.equal([
      {
        type: 'Warning',
        reason: 'BackOff',
        message: `Back-off restarting failed container app in pod ${desc}`,
        fieldPath: 'spec.containers{app}',
      },
    ]);
    expect(h.deps.reasonCache.get(uid, 'app')).to.deep.equal({
      reason: 'CrashLoopBackOff',
      message: `back-off 10s restarting failed container=app pod=${desc}`,
    });

    h.clock.advance(10_000);
    r = await h.sync(pod);
    expect(r.error).to.equal(undefined);
    expect(h.deps.reasonCache.get(uid, 'app')).to.equal(undefined);
    const st = await h.status(pod);
    expect(st.containers.map((c) => c.restartCount)).to.deep.equal([2, 1, 0]);

    // The next back-off doubles.
    r = await h.sync(pod);
    expect(r.results.find((x) => x.error)!.message).to.match(/^back-off 20s restarting/);
  });

  it('kills a container that failed its liveness probe and starts the next attempt', async () => {
    const h = new Harness();
    const pod = makePod({ containers: [container('app', server)] });
    await h.sync(pod);
    const before = (await h.status(pod)).containers[0]!;
    h.takeEvents();
    const r = await h.sync(pod, probes({ [before.id]: 'failure' }));
    expect(summary(r).filter((s) => !s.startsWith('Config'))).to.deep.equal([
      'KillContainer app',
      'StartContainer app',
    ]);
    expect(h.takeEvents()).to.deep.equal([
      'Killing: Container app failed liveness probe, will be restarted',
      `Pulled: Container image "${IMAGE}" already present on machine`,
      'Created: Created container: app',
      'Started: Started container app',
    ]);
    const st = await h.status(pod);
    expect(st.containers.map((c) => `${c.state}#${c.restartCount}`)).to.deep.equal(['running#1', 'exited#0']);
    expect(st.containers[1]!.exitCode).to.equal(143);
  });

  it('reports ErrImagePull, then ImagePullBackOff until the back-off expires', async () => {
    const h = new Harness();
    const image = 'registry.invalid/team/app:1.0';
    const pod = makePod({ containers: [container('app', forever, { image })] });
    let r = await h.sync(pod);
    expect(summary(r)).to.include('StartContainer app ErrImagePull');
    const events = h.takeEvents();
    expect(events[0]).to.equal(`Pulling: Pulling image "${image}"`);
    expect(events[1]).to.match(
      new RegExp(`^Failed: Failed to pull image "${image}": failed to pull and unpack image .*no such host$`),
    );
    expect(events[2]).to.equal('Failed: Error: ErrImagePull');
    expect(h.deps.reasonCache.get(pod.metadata.uid!, 'app')!.reason).to.equal('ErrImagePull');

    r = await h.sync(pod);
    expect(summary(r)).to.include('StartContainer app ImagePullBackOff');
    expect(r.results.find((x) => x.error)!.message).to.match(
      new RegExp(`^Back-off pulling image "${image}"`),
    );
    expect(h.takeEvents()).to.deep.equal([
      `BackOff: Back-off pulling image "${image}"`,
      'Failed: Error: ImagePullBackOff',
    ]);
    expect(h.deps.reasonCache.get(pod.metadata.uid!, 'app')!.reason).to.equal('ImagePullBackOff');

    h.clock.advance(10_000);
    r = await h.sync(pod);
    expect(summary(r)).to.include('StartContainer app ErrImagePull');
  });

  it('refuses to pull under imagePullPolicy Never', async () => {
    const h = new Harness();
    const image = 'docker.io/library/alpine:3.20';
    const pod = makePod({ containers: [container('app', forever, { image, imagePullPolicy: 'Never' })] });
    const r = await h.sync(pod);
    expect(r.results.find((x) => x.error)).to.include({
      error: 'ErrImageNeverPull',
      message: `Container image "${image}" is not present with pull policy of Never`,
    });
    expect(h.events.map((e) => `${e.type} ${e.reason}`)).to.deep.equal([
      'Warning ErrImageNeverPull',
      'Warning Failed',
    ]);
  });

  it('reads environment sources in order and stops at the first required one missing, as the kubelet', async () => {
    const h = new Harness();
    const asked: string[] = [];
    const get = h.configMaps.get.bind(h.configMaps);
    h.configMaps.get = (name: string) => (asked.push(name), get(name));
    h.configMaps.set('present', { k: 'v' });
    const pod = makePod({
      containers: [
        container('app', forever, {
          envFrom: [
            { configMapRef: { name: 'maybe', optional: true } },
            { configMapRef: { name: 'present' } },
          ],
          env: [
            { name: 'A', valueFrom: { configMapKeyRef: { name: 'present', key: 'k' } } },
            { name: 'B', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k' } } },
            { name: 'C', valueFrom: { configMapKeyRef: { name: 'after', key: 'k' } } },
          ],
        }),
      ],
    });
    const r = await h.sync(pod);
    expect(r.results.find((x) => x.error)).to.include({ message: 'configmap "missing" not found' });
    expect(asked, 'each object once, nothing after the failing reference').to.deep.equal([
      'maybe',
      'present',
      'missing',
    ]);
  });

  it('fails with CreateContainerConfigError when a referenced config map is missing', async () => {
    const h = new Harness();
    const pod = makePod({
      containers: [
        container('app', forever, {
          env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'x', key: 'k' } } }],
        }),
      ],
    });
    const r = await h.sync(pod);
    expect(r.results.find((x) => x.error)).to.include({
      error: 'CreateContainerConfigError',
      message: 'configmap "x" not found',
    });
    expect(h.takeEvents().slice(-1)).to.deep.equal(['Failed: Error: configmap "x" not found']);
    expect(h.deps.reasonCache.get(pod.metadata.uid!, 'app')).to.deep.equal({
      reason: 'CreateContainerConfigError',
      message: 'configmap "x" not found',
    });
    expect((await h.status(pod)).containers).to.deep.equal([]);

    h.configMaps.set('x', { k: 'v' });
    expect((await h.sync(pod)).error).to.equal(undefined);
    expect(h.createdConfigs[0]!.envs).to.deep.equal([{ key: 'X', value: 'v' }]);
  });

  it('reports CreateContainerError and RunContainerError from the runtime', async () => {
    const profiles = {
      images: {
        'docker.io/library/broken:1': { createError: 'no such file' },
        'docker.io/library/nostart:1': { startError: 'exec: "x": not found' },
      },
    };
    const h = new Harness({
      images: [IMAGE, 'docker.io/library/broken:1', 'docker.io/library/nostart:1'],
      profiles,
    });
    const pod = makePod({
      containers: [
        container('a', forever, { image: 'docker.io/library/broken:1' }),
        container('b', forever, { image: 'docker.io/library/nostart:1' }),
      ],
    });
    const r = await h.sync(pod);
    expect(summary(r).filter((s) => s.startsWith('Start'))).to.deep.equal([
      'StartContainer a CreateContainerError',
      'StartContainer b RunContainerError',
    ]);
    const warnings = h.events.filter((e) => e.type === 'Warning').map((e) => `${e.fieldPath} ${e.message}`);
    expect(warnings).to.deep.equal([
      'spec.containers{a} Error: no such file',
      'spec.containers{b} Error: failed to create containerd task: exec: "x": not found',
    ]);
  });

  it('kills the container when its postStart hook fails', async () => {
    const h = new Harness();
    // A runtime that leaves the network to the kubelet: the hook's GET goes through the injected getter.
    Object.defineProperty(h.runtime, 'capabilities', {
      value: { ...h.runtime.capabilities, probePort: undefined },
    });
    h.httpFails = true;
    const pod = makePod({
      containers: [
        container('app', server, {
          ports: [{ name: 'http', containerPort: 8080 }],
          lifecycle: { postStart: { httpGet: { path: '/ready', port: 'http' } } },
        }),
      ],
    });
    const r = await h.sync(pod);
    const st = await h.status(pod);
    expect(h.httpCalls[0]!.url).to.equal(`http://${st.ips[0]}:8080/ready`);
    expect(h.httpCalls[0]!.headers).to.include({ 'User-Agent': 'kube-lifecycle/1.33', Accept: '*/*' });
    const failed = r.results.find((x) => x.error)!;
    expect(failed.error).to.equal('PostStartHookError');
    expect(failed.message).to.match(
      new RegExp(
        `^HTTP lifecycle hook \\(/ready\\) for Container "app" in Pod "${pod.metadata.name}_default\\(${pod.metadata.uid}\\)" failed - error: Get `,
      ),
    );
    expect(h.takeEvents().slice(-4)).to.deep.equal([
      'Created: Created container: app',
      'Started: Started container app',
      'FailedPostStartHook: PostStartHook failed',
      'Killing: FailedPostStartHook',
    ]);
    expect(st.containers[0]!.state).to.equal('exited');
  });

  it('answers an httpGet hook on a simulated pod from the runtime, never over the network', async () => {
    const h = new Harness();
    const pod = makePod({
      containers: [
        container('app', server, {
          ports: [{ name: 'http', containerPort: 8080 }],
          lifecycle: { postStart: { httpGet: { path: '/nope', port: 9 } } },
        }),
      ],
    });
    const r = await h.sync(pod);
    expect(h.httpCalls, 'no real GET to a made-up pod IP').to.deep.equal([]);
    const failed = r.results.find((x) => x.error)!;
    expect(failed.error).to.equal('PostStartHookError');
    const st = await h.status(pod);
    expect(failed.message).to.include(
      `failed - error: Get "http://${st.ips[0]}:9/nope": dial tcp ${st.ips[0]}:9: connect: connection refused`,
    );
  });

  it('runs an exec postStart hook in the container', async () => {
    const h = new Harness();
    const pod = makePod({
      containers: [
        container('app', forever, {
          lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 7'] } } },
        }),
      ],
    });
    const r = await h.sync(pod);
    const failed = r.results.find((x) => x.error)!;
    expect(failed.message).to.equal(
      `Exec lifecycle hook ([sh -c exit 7]) for Container "app" in Pod "${pod.metadata.name}_default(${pod.metadata.uid})" failed - error: command 'sh -c exit 7' exited with 7: , message: ""`,
    );
  });

  it('records FailedCreatePodSandBox when the sandbox cannot be created', async () => {
    const h = new Harness();
    h.runtime.injectFault({
      op: 'runPodSandbox',
      kind: 'Unknown',
      message: 'failed to setup network for sandbox: cni broken',
    });
    const pod = makePod({ containers: [container('app', forever)] });
    const r = await h.sync(pod);
    expect(summary(r)).to.deep.equal([
      `KillPodSandbox ${pod.metadata.uid}`,
      `CreatePodSandbox ${pod.metadata.name}_default(${pod.metadata.uid}) CreatePodSandboxError`,
    ]);
    expect(r.results[1]!.message).to.equal(
      `Failed to create pod sandbox for pod "${pod.metadata.name}_default(${pod.metadata.uid})": failed to setup network for sandbox: cni broken`,
    );
    expect(h.takeEvents()).to.deep.equal([
      'FailedCreatePodSandBox: Failed to create pod sandbox: failed to setup network for sandbox: cni broken',
    ]);
    // Next sync creates it.
    expect((await h.sync(pod)).error).to.equal(undefined);
  });

  it('recreates a dead sandbox with SandboxChanged, restarting init from the first container', async () => {
    const h = new Harness();
    const pod = makePod({
      init: [container('init', ['sh', '-c', 'exit 0'])],
      containers: [container('app', forever)],
    });
    await h.sync(pod);
    await h.sync(pod);
    const st = await h.status(pod);
    await h.runtime.stopPodSandbox(st.sandboxes[0]!.id);
    h.takeEvents();
    const r = await h.sync(pod);
    expect(summary(r).filter((s) => !s.startsWith('Config'))).to.deep.equal([
      'KillPodSandbox ' + pod.metadata.uid,
      `CreatePodSandbox ${pod.metadata.name}_default(${pod.metadata.uid})`,
      'StartContainer init',
    ]);
    expect(h.takeEvents()[0]).to.equal(
      'SandboxChanged: Pod sandbox changed, it will be killed and re-created.',
    );
    const after = await h.status(pod);
    expect(after.sandboxes.map((s) => `${s.attempt}:${s.state}`)).to.deep.equal(['1:ready', '0:notready']);
    // The old init record was purged; the new one is the only init record.
    expect(after.containers.filter((c) => c.name === 'init')).to.have.length(1);
  });

  it('puts every pod in the node network namespace with podNetwork host', async () => {
    const h = new Harness({ podNetwork: 'host' });
    const pod = makePod({
      containers: [
        container('app', forever, {
          env: [{ name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
        }),
      ],
    });
    await h.sync(pod);
    const st = await h.status(pod);
    expect(st.sandboxes[0]).to.include({ netns: 'node', ip: '10.0.0.2' });
    expect(h.createdConfigs[0]!.envs).to.deep.equal([{ key: 'IP', value: '10.0.0.2' }]);
    // Stable: the forced host network does not look like a sandbox change.
    expect(summary(await h.sync(pod)).filter((s) => !s.startsWith('Config'))).to.deep.equal([]);
  });

  it('copies the pod sim behaviour annotations onto the containers', async () => {
    const h = new Harness();
    const pod = makePod({
      annotations: { [SimBehaviourAnnotation]: JSON.stringify({ run: { exitAfterMs: 2000, exitCode: 3 } }) },
      containers: [container('app', forever)],
    });
    await h.sync(pod);
    h.clock.advance(2000);
    expect((await h.status(pod)).containers[0]).to.include({ state: 'exited', exitCode: 3 });
  });

  it('returns an error result for a pod it cannot interpret', async () => {
    const h = new Harness();
    const pod = makePod({ containers: [container('app', forever), container('app', forever)] });
    const r = await h.sync(pod);
    expect(r.results).to.deep.equal([]);
    expect(r.error!.kind).to.equal('InvalidArgument');
  });
});

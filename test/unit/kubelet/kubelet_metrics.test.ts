// The kubelet's start and termination counters, end to end on the simulated runtime under a FakeClock:
// kubelet_started_pods_total, kubelet_started_pods_errors_total, kubelet_started_containers_total,
// kubelet_started_containers_errors_total and kubelet_terminated_containers_total, as the upstream
// "ContainerTerminationMetrics ... should report terminated_containers_total metric" reads them.
import { expect } from 'chai';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { Metrics } from '../../../src/metrics.js';
import { KindError } from '../../../src/util/errors.js';
import { advance, mkPod, NODE, setup, start } from './kubelet-fixtures.js';

const sh = (script: string) => ['sh', '-c', script];

/** The value of the sample `name{labels}` in exposition `text` (labels in registration order), or 0. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const want = `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}} `;
  const line = text.split('\n').find((l) => l.startsWith(want));
  return line ? Number(line.slice(want.length)) : 0;
}

describe('Kubelet: started and terminated counters (/metrics)', () => {
  it('counts sandboxes and containers started, their failures, and terminations by type, exit code and reason', async () => {
    const { clock, api, deps, runtime } = setup();
    const metrics = new Metrics(false);
    // The sandbox of pod "nosb" fails to be created.
    const run = runtime.runPodSandbox.bind(runtime);
    runtime.runPodSandbox = (config) =>
      config.metadata.name === 'p-nosb'
        ? Promise.reject(new KindError('Unavailable', 'no network'))
        : run(config);
    api.pods.set(
      'p-crash',
      mkPod('crash', {
        restartPolicy: 'Never',
        initContainers: [{ name: 'init', image: 'img:1', command: sh('exit 0') }],
        containers: [{ name: 'crash-container', image: 'img:1', command: sh('exit 139') }],
      }),
    );
    api.pods.set(
      'p-noimg',
      mkPod('noimg', { containers: [{ name: 'app', image: 'missing:1', imagePullPolicy: 'Never' }] }),
    );
    api.pods.set('p-nosb', mkPod('nosb'));
    const k = new Kubelet({ ...deps(), metrics });
    await start(k, clock);
    await advance(clock, 5_000, 200);
    const text = await metrics.registry.metrics();

    const node = { node: NODE };
    expect(sample(text, 'kubelet_started_pods_total', node)).to.be.at.least(3);
    expect(sample(text, 'kubelet_started_pods_errors_total', node)).to.be.at.least(1);
    expect(
      sample(text, 'kubelet_started_containers_total', { ...node, container_type: 'init_container' }),
    ).to.equal(1);
    // crash-container once (Never), app at least once (its image is missing and may not be pulled).
    expect(
      sample(text, 'kubelet_started_containers_total', { ...node, container_type: 'container' }),
    ).to.be.at.least(2);
    expect(
      sample(text, 'kubelet_started_containers_errors_total', {
        ...node,
        container_type: 'container',
        code: 'ErrImageNeverPull',
      }),
    ).to.be.at.least(1);
    const terminated = (container_type: string, exit_code: string, reason: string): number =>
      sample(text, 'kubelet_terminated_containers_total', { ...node, container_type, exit_code, reason });
    expect(terminated('container', '139', 'Error')).to.equal(1);
    expect(terminated('init_container', '0', 'Completed')).to.equal(1);
    await k.stop(0);
  });
});

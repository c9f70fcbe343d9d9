// The kubelet core with N pods shaped like the scale benchmark's (one container with a TCP readiness probe
// every 10 s, on the simulated runtime, under a FakeClock): what the memory budget test and
// `npm run bench:perpod` both measure.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Pod } from '../../../src/api/core.js';
import { EventRecorder } from '../../../src/kube/events.js';
import { Kubelet } from '../../../src/kubelet/kubelet.js';
import { SimBehaviourAnnotation } from '../../../src/runtime/sim/profile.js';
import { advance, mkPod, setup, start } from '../kubelet/kubelet-fixtures.js';

/** Live heap bytes after full collections. */
export function heapUsedAfterGC(): number {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

function benchLikePod(i: number): Pod {
  const pod = mkPod(`m${i}`, {
    containers: [
      {
        name: 'app',
        image: 'img:1',
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 10 },
      },
    ],
  });
  pod.metadata.annotations = { [SimBehaviourAnnotation]: '{"ports":{"8080":{}}}' };
  return pod;
}

export interface PerPodRun {
  /** Containers running once the pods have started. */
  running: number;
  kubelet: Kubelet;
}

/**
 * Starts a Kubelet, calls `baseline()` once it idles without pods, adds `pods` pods, lets 30 s of fake time
 * pass (every pod running and probed), then calls `after()`. The pod objects exist before the baseline, so
 * they are not counted. The caller stops the Kubelet.
 */
export async function runPods(pods: number, baseline: () => void, after: () => void): Promise<PerPodRun> {
  const { clock, api, deps, runtime } = setup();
  const list = Array.from({ length: pods }, (_, i) => benchLikePod(i));
  const base = deps();
  const recorder = new EventRecorder({ create: async () => {}, patch: async () => {} }, clock, 'n1');
  const kubelet = new Kubelet({
    ...base,
    recorder,
    node: () => ({
      ...base.node(),
      allocatable: new Map([
        ['cpu', 1e9],
        ['pods', pods + 10],
      ]),
    }),
  });
  await start(kubelet, clock);
  await advance(clock, 2_000);
  baseline();
  for (const p of list) {
    api.pods.set(p.metadata.name ?? '', p);
    kubelet.handlePodAdd(p);
  }
  await advance(clock, 30_000, 500);
  const running = (await runtime.listContainers()).filter((c) => c.state === 'running').length;
  after();
  return { running, kubelet };
}

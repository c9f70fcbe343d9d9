// The kubelet core with N pods shaped like the scale benchmark's (one container with a TCP readiness probe
// every 10 s, on the simulated runtime, under a FakeClock): what the memory budget test and
// `npm run bench:perpod` both measure.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Pod } from '../../../src/api/core.js';
import { EventRecorder } from '../../../src/kube/events.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { SimBehaviourAnnotation } from '../../../src/runtime/sim/profile.js';
import { advance, mkPod, setup, start } from '../kubelet/kubelet-fixtures.js';
import { EchoingAPI } from './echoapi.js';

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
  /** Status PATCHes and GETs, with `echo`. */
  writes?: { patches: number; gets: number };
  /** Lets `ms` more of fake time pass, the pods settled (a benchmark of what a settled node costs). */
  advance(ms: number): Promise<void>;
}

export interface PerPodOptions {
  /**
   * Status writes come back as informer updates (test/unit/memory/echoapi.ts), as on a real API server.
   * Without it the pods' written statuses never reach the pod manager; the memory budget keeps that shape so
   * that only objects of the kubelet core are counted (the echoed pod versions are the informer's).
   */
  echo?: boolean;
}

/**
 * Starts a Kubelet, calls `baseline()` once it idles without pods, adds `pods` pods, lets 30 s of fake time
 * pass (every pod running and probed), then calls `after()`. The pod objects exist before the baseline, so
 * they are not counted. The caller stops the Kubelet.
 */
export async function runPods(
  pods: number,
  baseline: () => void,
  after: () => void,
  opts: PerPodOptions = {},
): Promise<PerPodRun> {
  const { clock, api: fakeAPI, deps, runtime } = setup();
  const list = Array.from({ length: pods }, (_, i) => benchLikePod(i));
  const base = deps();
  const recorder = new EventRecorder({ create: async () => {}, patch: async () => {} }, clock, 'n1');
  // The echo's updates come on later turns, once `kubelet` below exists.
  const echo = opts.echo ? new EchoingAPI((pod, old) => kubelet.handlePodUpdate(pod, old)) : undefined;
  const api = echo ?? fakeAPI;
  const informer = echo ? { ...base.podInformer, byIndex: () => [...echo.pods.values()] } : base.podInformer;
  const kubelet = new Kubelet({
    ...base,
    client: api,
    podInformer: informer,
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
  return {
    running,
    kubelet,
    advance: (ms) => advance(clock, ms),
    ...(echo ? { writes: { patches: echo.patches, gets: echo.gets } } : {}),
  };
}

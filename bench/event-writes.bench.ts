// `npm run bench:events [-- --nodes N --pods M --rounds R]`
// What a pod's start Events cost the operator's process, against a real API server (test/support's control
// plane): N EventRecorders, one per node as the operator keeps them, each records Pulled, Created and Started
// for M pods, written through the REST sink and a KubeClient pool of EVENT_CONNECTIONS (src/config.ts), as
// src/main.ts sets up the Event client. Each round is timed until every recorder has flushed; prints this
// process's CPU (user + system, all threads) per Event written, and the Events per second, for each round
// and their median. The API server's and etcd's CPU is not counted: they are processes of their own.
import { startControlPlane } from '../test/support/controlplane.js';
import { EVENT_CONNECTIONS } from '../src/config.js';
import { KubeClient } from '../src/kube/client.js';
import { EventRecorder, type ObjectReference } from '../src/kube/events.js';
import { restEventSink } from '../src/node/api.js';
import { RealClock } from '../src/util/clock.js';
import { positiveArg } from './lib/args.js';
import { POD_START_EVENTS } from './lib/pods.js';
import { median } from './lib/stats.js';

const NODES = positiveArg('--nodes', 100);
const PODS = positiveArg('--pods', 34);
const ROUNDS = positiveArg('--rounds', 3);

const cp = await startControlPlane();
try {
  const client = (await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { unlimited: true })).withPool(
    EVENT_CONNECTIONS,
  );
  const clock = new RealClock();
  const round = async (tag: string): Promise<{ usPerEvent: number; perSec: number }> => {
    const recorders = Array.from(
      { length: NODES },
      (_, n) => new EventRecorder(restEventSink(client), clock, `node-${n}`),
    );
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    recorders.forEach((r, n) => {
      for (let p = 0; p < PODS; p++) {
        const ref: ObjectReference = {
          kind: 'Pod',
          apiVersion: 'v1',
          namespace: 'default',
          name: `${tag}-n${n}-p${p}`,
          uid: `${tag}-${n}-${p}`,
          fieldPath: 'spec.containers{app}',
        };
        for (const [reason, message] of POD_START_EVENTS) r.event(ref, 'Normal', reason, message);
      }
    });
    await Promise.all(recorders.map((r) => r.flush()));
    const wallMs = performance.now() - t0;
    const used = process.cpuUsage(cpu);
    const written = recorders.reduce((n, r) => n + r.stats.created, 0);
    const failed = recorders.reduce((n, r) => n + r.stats.failed + r.stats.dropped, 0);
    if (failed > 0 || written !== NODES * PODS * POD_START_EVENTS.length)
      throw new Error(`${tag}: ${written} Events written, ${failed} failed or dropped`);
    return { usPerEvent: (used.user + used.system) / written, perSec: (written * 1000) / wallMs };
  };
  await round('warmup');
  const results: { usPerEvent: number; perSec: number }[] = [];
  for (let i = 1; i <= ROUNDS; i++) results.push(await round(`r${i}`));
  client.close();
  const events = NODES * PODS * POD_START_EVENTS.length;
  console.log(`${events} Events per round from ${NODES} recorders over ${EVENT_CONNECTIONS} connections`);
  console.log(`CPU per Event (us): ${results.map((r) => r.usPerEvent.toFixed(0)).join(', ')}`);
  console.log(`Events per second: ${results.map((r) => r.perSec.toFixed(0)).join(', ')}`);
  console.log(
    `median ${median(results.map((r) => r.usPerEvent)).toFixed(0)} us per Event, ` +
      `${median(results.map((r) => r.perSec)).toFixed(0)} Events per second`,
  );
} finally {
  await cp.stop();
}

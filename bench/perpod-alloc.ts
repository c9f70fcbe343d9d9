// `npm run bench:perpod-alloc [-- --pods N] [--top K] [--no-echo] [--settled SECONDS]`
// Bytes the kubelet core allocates per pod, collected or not, without an API server: the Kubelet of the unit
// tests (simulated runtime, FakeClock, in-memory pod source) runs N pods shaped like the scale benchmark's
// (see test/unit/memory/perpod-fixture.ts) while V8's sampling heap profiler counts every allocation, the
// ones the garbage collector has taken since included (bench/lib/allocprofile.ts). Allocation is what the
// young generation's size trades against CPU (bench/README.md), so this prints the total per pod and the
// functions that allocate most.
import { logAllocations, sampleAllocations } from './lib/allocprofile.js';
import { runPods } from '../test/unit/memory/perpod-fixture.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const PODS = Number(arg('--pods') ?? 2000);
const TOP = Number(arg('--top') ?? 25);
// Status writes come back as informer updates unless --no-echo (test/unit/memory/echoapi.ts).
const ECHO = !process.argv.includes('--no-echo');
// With --settled, what the settled pods allocate over that many more seconds (probes, relists, resyncs,
// housekeeping, the status manager's reconcile), printed per pod and second, instead of their start.
const SETTLED = arg('--settled') === undefined ? undefined : Number(arg('--settled'));
// The fixture's in-memory API server and informer are not the kubelet core.
const leaveOut = /^\S+ test\//;
const log = (s: string): void => console.log(s);

if (SETTLED === undefined) {
  const { head, result } = await sampleAllocations((start) =>
    runPods(PODS, start, () => undefined, { echo: ECHO }),
  );
  await result.kubelet.stop(0);
  const echo = ECHO ? '' : ', status writes not echoed';
  logAllocations(head, {
    pods: PODS,
    during: `by ${PODS} pods over 30 s of fake time${echo}`,
    top: TOP,
    log,
    leaveOut,
  });
} else {
  const run = await runPods(
    PODS,
    () => undefined,
    () => undefined,
    { echo: ECHO },
  );
  const { head } = await sampleAllocations(async (start) => {
    start();
    await run.advance(SETTLED * 1000);
  });
  await run.kubelet.stop(0);
  const perPod = logAllocations(head, {
    pods: PODS,
    during: `by ${PODS} settled pods over ${SETTLED} s of fake time`,
    top: TOP,
    log,
    leaveOut,
  });
  log(`${(perPod / SETTLED).toFixed(0)} bytes per pod and second`);
}

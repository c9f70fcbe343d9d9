// `npm run bench:perpod-cpu [-- --pods N] [--settled SECONDS] [--rounds R]`
// CPU the kubelet core spends on settled pods, without an API server: the Kubelet of the unit tests
// (simulated runtime, FakeClock, in-memory pod source whose status writes come back as informer updates)
// starts N pods shaped like the scale benchmark's (test/unit/memory/perpod-fixture.ts), then lets SECONDS of
// fake time pass R times, each a round: resyncs (every pod once a minute, as the kubelet), probes every 10 s,
// relists, housekeeping. Prints the process's CPU per round and per pod-minute, the median of the rounds.
// Fake time runs as fast as the CPU allows, so the figure is the work itself, not a rate.
import { runPods } from '../test/unit/memory/perpod-fixture.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const PODS = Number(arg('--pods') ?? 2000);
const SETTLED = Number(arg('--settled') ?? 60);
const ROUNDS = Number(arg('--rounds') ?? 5);

const run = await runPods(
  PODS,
  () => undefined,
  () => undefined,
  { echo: true },
);
if (run.running !== PODS) throw new Error(`${run.running} of ${PODS} containers running after the start`);
// One round first, not counted: the first resyncs of every pod come in it, and V8 warms up.
await run.advance(SETTLED * 1000);
const perRound: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const before = process.cpuUsage();
  await run.advance(SETTLED * 1000);
  const used = process.cpuUsage(before);
  perRound.push((used.user + used.system) / 1000);
}
await run.kubelet.stop(0);
const sorted = [...perRound].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)]!;
const perPodMinute = (median * 1000) / PODS / (SETTLED / 60);
console.log(`${PODS} settled pods, ${SETTLED} s of fake time per round, ${ROUNDS} rounds`);
console.log(`CPU per round (ms): ${perRound.map((ms) => ms.toFixed(0)).join(', ')}`);
console.log(`median ${median.toFixed(0)} ms: ${perPodMinute.toFixed(1)} us per pod and minute of fake time`);

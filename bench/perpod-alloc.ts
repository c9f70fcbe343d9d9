// `npm run bench:perpod-alloc [-- --pods N] [--top K]`
// Bytes the kubelet core allocates per pod, collected or not, without an API server: the Kubelet of the unit
// tests (simulated runtime, FakeClock, in-memory pod source) runs N pods shaped like the scale benchmark's
// (see test/unit/memory/perpod-fixture.ts) while V8's sampling heap profiler counts every allocation, the
// ones the garbage collector has taken since included. Allocation is what the young generation's size trades
// against CPU (bench/README.md), so this prints the total per pod and the functions that allocate most
// (self bytes; a built-in such as `Map` or `join` is counted to the function of ours that called it).
import inspector from 'node:inspector/promises';
import { runPods } from '../test/unit/memory/perpod-fixture.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const PODS = Number(arg('--pods') ?? 2000);
const TOP = Number(arg('--top') ?? 25);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const session = new inspector.Session();
session.connect();
const { kubelet } = await runPods(
  PODS,
  () =>
    void session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    }),
  () => undefined,
);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
await kubelet.stop(0);

const byFunction = new Map<string, number>();
let total = 0;
const walk = (n: ProfileNode, owner: string): void => {
  const { functionName, url, lineNumber } = n.callFrame;
  const own = url.startsWith('file:')
    ? `${functionName || '(anonymous)'} ${url.replace(/^.*?\/(src|test)\//, '$1/')}:${lineNumber + 1}`
    : owner;
  total += n.selfSize;
  byFunction.set(own, (byFunction.get(own) ?? 0) + n.selfSize);
  for (const c of n.children) walk(c, own);
};
walk(profile.head, '(outside the project)');
console.log(`${PODS} pods, 30 s of fake time each: ${(total / PODS / 1024).toFixed(1)} KB allocated per pod`);
for (const [fn, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
  console.log(`${(bytes / PODS / 1024).toFixed(2).padStart(8)} KB  ${fn}`);
}

// `npm run bench:perpod [-- --pods N] [--snapshots DIR]`
// Bytes a running pod keeps alive in the kubelet core, by owner, without an API server: the Kubelet of the
// unit tests (simulated runtime, FakeClock, in-memory pod source) runs N pods shaped like the scale
// benchmark's (one container, a TCP readiness probe every 10 s), and V8 heap snapshots taken before and after
// the pods are summarised by bench/heapsnapshot.ts ("new objects by owner"). The unit suite's budget
// (test/unit/memory/perpod.test.ts) measures the same total with heapUsed; this says where it goes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { heapUsedAfterGC, runPods } from '../test/unit/memory/perpod-fixture.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const PODS = Number(arg('--pods') ?? 2000);
const dir = arg('--snapshots') ?? mkdtempSync(join(tmpdir(), 'perpod-'));

let before = 0;
let after = 0;
const { kubelet } = await runPods(
  PODS,
  () => {
    before = heapUsedAfterGC();
    v8.writeHeapSnapshot(join(dir, 'before.heapsnapshot'));
  },
  () => {
    after = heapUsedAfterGC();
    v8.writeHeapSnapshot(join(dir, 'after.heapsnapshot'));
  },
);
await kubelet.stop(0);
console.log(
  `${PODS} pods: ${((after - before) / PODS).toFixed(0)} bytes per pod (heapUsed), snapshots in ${dir}`,
);
const out = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    join(import.meta.dirname, 'heapsnapshot.ts'),
    join(dir, 'before.heapsnapshot'),
    join(dir, 'after.heapsnapshot'),
    '--per',
    String(PODS),
    '--top',
    '30',
  ],
  { encoding: 'utf8' },
);
const text = out.stdout + out.stderr;
const at = text.indexOf('new objects by owner');
console.log(at >= 0 ? text.slice(at) : text);
process.exit(out.status ?? 1);

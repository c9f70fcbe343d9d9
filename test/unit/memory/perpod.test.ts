/**
 * A memory budget for the kubelet core: the bytes a running pod keeps alive in the Kubelet's own per-pod
 * structures (pod manager, pod worker, status manager cache, PLEG records and pod cache, probe worker and
 * its timer, event correlator, allocation, volume manager, the simulated runtime's records), measured with
 * the V8 heap after full collections over a few thousand pods on the simulated runtime under a FakeClock.
 * The pod objects themselves (the informer's copies) exist before the baseline and are not counted.
 *
 * The budget is the figure measured when it was set plus about 40 %: a change that doubles the per-pod
 * cost fails here, in the unit suite, long before a benchmark would show it (bench/README.md has the
 * per-owner breakdown from heap snapshots).
 */
import { expect } from 'chai';
import { heapUsedAfterGC, runPods } from './perpod-fixture.js';

const PODS = 2000;
/**
 * Bytes per running pod; measured 8.0 KB when set (2026-11-26 evening, Node 20; 9.2 to 9.4 KB before exact-length
 * arrays in the PLEG, a lazy volume failure map, shared applied resources and pod worker timers without a
 * closure; 18.9 KB before the compaction of the status cache, correlator, prober, PLEG and simulated
 * runtime). `npm run bench:perpod` shows owners.
 */
const BUDGET_BYTES_PER_POD = 11_000;

describe('memory: bytes a running pod keeps alive in the kubelet core', function () {
  this.timeout(120_000);

  it(`stays under ${BUDGET_BYTES_PER_POD} bytes per pod over ${PODS} pods`, async () => {
    let before = 0;
    let after = 0;
    const { running, kubelet } = await runPods(
      PODS,
      () => (before = heapUsedAfterGC()),
      () => (after = heapUsedAfterGC()),
    );
    expect(running, 'every pod runs').to.equal(PODS);
    const perPod = (after - before) / PODS;
    console.log(`      ${(perPod / 1000).toFixed(1)} KB per pod (budget ${BUDGET_BYTES_PER_POD / 1000} KB)`);
    expect(perPod).to.be.below(BUDGET_BYTES_PER_POD);
    await kubelet.stop(0);
  });
});

import { expect } from 'chai';
import { Counter, Histogram, Registry } from 'prom-client';
import { SeriesCounter, SeriesHistogram } from '../../../src/util/promseries.js';

/** The same metrics twice: prom-client's own in one registry, the series ones in another. */
function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const buckets = [0.005, 0.01, 0.1, 1, 10];
  const cfg = {
    latency: { name: 'x_latency_seconds', help: 'Latency.', labelNames: ['node', 'op'] as const, buckets },
    total: { name: 'x_total', help: 'Things "counted"\nhere.', labelNames: ['node', 'code'] as const },
  };
  return {
    theirs,
    ours,
    h1: new Histogram({ ...cfg.latency, labelNames: [...cfg.latency.labelNames], registers: [theirs] }),
    c1: new Counter({ ...cfg.total, labelNames: [...cfg.total.labelNames], registers: [theirs] }),
    h2: new SeriesHistogram({ ...cfg.latency, registers: [ours] }),
    c2: new SeriesCounter({ ...cfg.total, registers: [ours] }),
  };
}

describe('promseries: counters and histograms with series kept by their callers', () => {
  it("writes the same exposition text and JSON as prom-client's for the same random observations", async () => {
    const { theirs, ours, h1, c1, h2, c2 } = pair();
    let seed = 7;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const nodes = ['n1', 'n-2', 'n"3\\'];
    for (let i = 0; i < 3000; i++) {
      const node = nodes[Math.floor(rand() * nodes.length)]!;
      const op = rand() < 0.5 ? 'create' : 'sync';
      const value = rand() < 0.1 ? 0.01 : rand() * (rand() < 0.2 ? 30 : 0.5);
      h1.observe({ node, op }, value);
      // Half through a kept series, half through the per-call form.
      if (i % 2) h2.series({ node, op }).observe(value);
      else h2.observe({ node, op }, value);
      const code = String([200, 201, 409, 0][Math.floor(rand() * 4)]);
      const n = rand() < 0.9 ? 1 : 3;
      c1.inc({ node, code }, n);
      c2.series({ node, code }).inc(n);
    }
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    // As JSON: prom-client's sum and count samples carry an `exemplar` member that is undefined.
    const json = async (r: Registry): Promise<unknown> =>
      JSON.parse(JSON.stringify(await r.getMetricsAsJSON()));
    expect(await json(ours)).to.deep.equal(await json(theirs));
  });

  it('rejects missing or unknown labels and values a counter or histogram cannot take', () => {
    const { h2, c2 } = pair();
    expect(() => h2.series({ node: 'n1' } as never)).to.throw(/label op is missing/);
    expect(() => c2.series({ node: 'n1', code: '200', extra: 'x' } as never)).to.throw(/unknown label extra/);
    const s = c2.series({ node: 'n1', code: '200' });
    expect(() => s.inc(-1)).to.throw(TypeError);
    expect(() => h2.series({ node: 'n1', op: 'x' }).observe(Number.NaN)).to.throw(TypeError);
  });

  it('finds the same series again by its label values, with or without labels', async () => {
    const { ours, c2 } = pair();
    expect(c2.series({ node: 'n1', code: '200' })).to.equal(c2.series({ code: '200', node: 'n1' }));
    expect(c2.series({ node: 'n1', code: '200' })).not.to.equal(c2.series({ node: 'n1', code: '201' }));
    const bare = new SeriesCounter({
      name: 'bare_total',
      help: 'No labels.',
      labelNames: [],
      registers: [ours],
    });
    expect(bare.series({})).to.equal(bare.series({}));
    bare.inc({}, 2);
    expect(await ours.metrics()).to.include('bare_total 2');
  });

  it('keeps a series across a reset, counting from zero again', async () => {
    const { ours, c2, h2 } = pair();
    const s = c2.series({ node: 'n1', code: '200' });
    const h = h2.series({ node: 'n1', op: 'x' });
    s.inc(5);
    h.observe(2);
    ours.resetMetrics();
    s.inc();
    h.observe(0.05);
    const text = await ours.metrics();
    expect(text).to.include('x_total{node="n1",code="200"} 1');
    expect(text).to.include('x_latency_seconds_count{node="n1",op="x"} 1');
    expect(text).to.include('x_latency_seconds_bucket{le="0.1",node="n1",op="x"} 1');
  });
});

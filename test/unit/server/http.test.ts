import { expect } from 'chai';
import { Metrics } from '../../../src/metrics.js';
import { HealthServer } from '../../../src/server/http.js';

describe('HealthServer', () => {
  it('serves healthz, readyz with named failures, and metrics', async () => {
    const metrics = new Metrics(false);
    metrics.onRequest('GET', 'pods', 200, 12);
    const s = new HealthServer(metrics.registry);
    let informersSynced = false;
    s.addHealthCheck('ping', () => undefined);
    s.addReadyCheck('informers', () => (informersSynced ? undefined : 'not synced'));
    const port = await s.listen(0, '127.0.0.1');
    try {
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${port}${p}`);
        return { status: r.status, text: await r.text() };
      };
      expect(await get('/healthz')).to.deep.equal({ status: 200, text: '[+]ping ok\nok\n' });
      expect(await get('/readyz')).to.deep.equal({
        status: 500,
        text: '[-]informers failed: not synced\nfailed\n',
      });
      informersSynced = true;
      expect((await get('/readyz')).status).to.equal(200);
      const m = await get('/metrics');
      expect(m.text).to.contain('rest_client_requests_total{verb="GET",resource="pods",code="200"} 1');
      expect((await get('/nope')).status).to.equal(404);
    } finally {
      await s.close();
    }
  });
});

describe('Metrics: Event recorders', () => {
  it('reads every registered recorder at scrape time, by node and outcome', async () => {
    const metrics = new Metrics(false);
    const stats = {
      created: 7,
      patched: 3,
      merged: 5,
      dropped: 6,
      filtered: 2,
      displaced: 1,
      failed: 1,
      retried: 4,
    };
    metrics.eventRecorders.set('vn-a', { stats, pending: 12 });
    const text = await metrics.registry.metrics();
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="created"} 7');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="patched"} 3');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="merged"} 5');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="filtered"} 2');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="dropped_queue_full"} 4');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="retried"} 4');
    expect(text).to.contain('kubelet_operator_events_total{node="vn-a",outcome="failed"} 1');
    expect(text).to.contain('kubelet_operator_events_pending{node="vn-a"} 12');
    metrics.eventRecorders.delete('vn-a');
    expect(await metrics.registry.metrics()).not.to.contain('node="vn-a"');
  });
});

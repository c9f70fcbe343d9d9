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

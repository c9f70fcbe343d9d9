// The http prober (src/kubelet/prober/shell/http.ts) against a real local server, and through the runner.
import http from 'node:http';
import { expect } from 'chai';
import type { Container } from '../../../../../src/api/core.js';
import {
  httpProbe,
  httpProbeAnswer,
  probeHeaders,
  probeURL,
} from '../../../../../src/kubelet/prober/shell/http.js';
import { appWarning, close, closedPort, listen, pod, setup, status } from '../runner-fixtures.js';

describe('prober http', () => {
  let server: http.Server;
  let port: number;
  const seen: http.IncomingHttpHeaders[] = [];
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, res) => res.end('ok');

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      handler(req, res);
    });
    port = await listen(server);
  });
  after(() => close(server));
  beforeEach(() => {
    seen.length = 0;
  });

  it('builds the URL from scheme, host, port and path (query kept)', () => {
    expect(probeURL({ port: 80, path: 'healthz?x=1' }, '10.0.0.1', 8080).toString()).to.equal(
      'http://10.0.0.1:8080/healthz?x=1',
    );
    expect(probeURL({ port: 80, scheme: 'HTTPS' }, 'fd00::1', 443).toString()).to.equal('https://[fd00::1]/');
  });

  it('sends the kube-probe User-Agent, Accept */* and the probe headers (Host included)', async () => {
    const headers = probeHeaders({
      port,
      httpHeaders: [
        { name: 'X-Check', value: 'a' },
        { name: 'Host', value: 'svc.local' },
      ],
    });
    const r = await httpProbe(new URL(`http://127.0.0.1:${port}/`), headers, 1000);
    expect(r).to.deep.equal({ result: 'success', output: 'ok' });
    expect(seen[0]).to.include({
      'user-agent': 'kube-probe/1.33',
      accept: '*/*',
      'x-check': 'a',
      host: 'svc.local',
    });
    const custom = probeHeaders({ port, httpHeaders: [{ name: 'user-agent', value: 'mine' }] });
    expect(custom).to.deep.equal({ 'user-agent': ['mine'], Accept: ['*/*'] });
  });

  it('fails on 500 with the status code, through the runner with a named port', async () => {
    handler = (_q, res) => {
      res.statusCode = 500;
      res.end('boom');
    };
    const { run, events } = setup();
    const c: Container = { name: 'web', ports: [{ name: 'http', containerPort: port }] };
    const outcome = await run(
      { httpGet: { port: 'http', path: '/healthz' } },
      pod(c),
      status('web'),
      'sim://abc',
      'readiness',
    );
    expect(outcome).to.equal('failure');
    expect(events[0]!.message).to.equal('Readiness probe failed: HTTP probe failed with statuscode: 500');
  });

  it('follows redirects to the same host, and warns on one to another host', async () => {
    handler = (req, res) => {
      if (req.url === '/old') {
        res.writeHead(302, { Location: '/new' });
        res.end();
      } else if (req.url === '/away') {
        res.writeHead(301, { Location: `http://localhost:${port}/new` });
        res.end('moved');
      } else res.end('new');
    };
    expect(await httpProbe(new URL(`http://127.0.0.1:${port}/old`), {}, 1000)).to.deep.equal({
      result: 'success',
      output: 'new',
    });
    const { run, events } = setup();
    const outcome = await run(
      { httpGet: { port, path: '/away' } },
      pod({ name: 'app' }),
      status('app'),
      'sim://abc',
      'liveness',
    );
    expect(outcome).to.equal('warning');
    expect(events).to.deep.equal([
      appWarning('ProbeWarning', 'Liveness probe warning: Probe terminated redirects, Response body: moved'),
    ]);
  });

  it('stops after 10 redirects', async () => {
    handler = (_q, res) => {
      res.writeHead(302, { Location: '/loop' });
      res.end();
    };
    const r = await httpProbe(new URL(`http://127.0.0.1:${port}/loop`), {}, 2000);
    expect(r).to.deep.equal({
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/loop": stopped after 10 redirects`,
    });
  });

  it('times out with the Go client message', async () => {
    handler = () => undefined; // never answers
    const r = await httpProbe(new URL(`http://127.0.0.1:${port}/slow`), {}, 200);
    expect(r).to.deep.equal({
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
    handler = (_q, res) => res.end('ok');
  });

  it('reports a refused connection as Go words it', async () => {
    const closed = await closedPort();
    const r = await httpProbe(new URL(`http://127.0.0.1:${closed}/`), {}, 1000);
    expect(r).to.deep.equal({
      result: 'failure',
      output: `Get "http://127.0.0.1:${closed}/": dial tcp 127.0.0.1:${closed}: connect: connection refused`,
    });
  });
  it('words an answer from the runtime as the Go client would', () => {
    const url = new URL('http://10.88.0.5:9090/h');
    expect(httpProbeAnswer(url, { result: 'success', output: '' })).to.deep.equal({
      result: 'success',
      output: '',
    });
    expect(
      httpProbeAnswer(url, {
        result: 'failure',
        output: 'dial tcp 10.88.0.5:9090: connect: connection refused',
      }),
    ).to.deep.equal({
      result: 'failure',
      output: 'Get "http://10.88.0.5:9090/h": dial tcp 10.88.0.5:9090: connect: connection refused',
    });
    expect(
      httpProbeAnswer(url, { result: 'failure', output: 'HTTP probe failed with statuscode: 500' }).output,
    ).to.equal('HTTP probe failed with statuscode: 500');
  });
});

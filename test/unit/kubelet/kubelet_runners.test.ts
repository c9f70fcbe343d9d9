// Probe runners (src/kubelet/prober/runners.ts): exec through the runtime, httpGet/tcpSocket/grpc against
// real local servers, the simulated runtime's port prober, and the kubelet's event wording.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import type { Container, ContainerStatus, Pod, Probe } from '../../../src/api/core.js';
import {
  createProbeRunner,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  httpProbe,
  probeHeaders,
  probeURL,
  resolveProbePort,
  tcpProbe,
  type PortProber,
} from '../../../src/kubelet/prober/runners.js';
import type { ProbeType } from '../../../src/kubelet/prober/types.js';
import type { ExecSyncResult } from '../../../src/runtime/types.js';
import { KindError } from '../../../src/util/errors.js';

interface Recorded {
  type: string;
  reason: string;
  message: string;
  fieldPath?: string;
}

function pod(container: Container, podIP = '127.0.0.1'): Pod {
  return {
    metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
    spec: { containers: [container] },
    status: { podIP, podIPs: [{ ip: podIP }] },
  };
}

const status = (name: string): ContainerStatus => ({
  name,
  containerID: 'sim://abc',
  ready: false,
  restartCount: 0,
  state: { running: {} },
});

function listen(server: http.Server | net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function close(server: http.Server | net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

class FakeExec {
  calls: { id: string; cmd: string[]; timeout: number }[] = [];
  next: (() => Promise<ExecSyncResult>) | undefined;
  execSync(id: string, cmd: string[], timeout: number): Promise<ExecSyncResult> {
    this.calls.push({ id, cmd, timeout });
    return this.next
      ? this.next()
      : Promise.resolve({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });
  }
}

function setup(portProber?: PortProber) {
  const events: Recorded[] = [];
  const probes: [ProbeType, string][] = [];
  const runtime = new FakeExec();
  const run = createProbeRunner({
    runtime,
    record: (_pod, type, reason, message, fieldPath) =>
      events.push({ type, reason, message, ...(fieldPath ? { fieldPath } : {}) }),
    onProbe: (t, r) => probes.push([t, r]),
    ...(portProber ? { portProber } : {}),
  });
  return { events, probes, runtime, run };
}

describe('kubelet probe runners', () => {
  describe('exec', () => {
    it('succeeds on exit 0 and runs in the runtime container with the timeout', async () => {
      const { run, runtime, events, probes } = setup();
      const probe: Probe = { exec: { command: ['cat', '/ready'] }, timeoutSeconds: 3 };
      const c = { name: 'app' };
      expect(await run(probe, pod(c), status('app'), 'sim://abc', 'readiness')).to.equal('success');
      expect(runtime.calls).to.deep.equal([{ id: 'abc', cmd: ['cat', '/ready'], timeout: 3 }]);
      expect(events).to.deep.equal([]);
      expect(probes).to.deep.equal([['readiness', 'successful']]);
    });

    it('fails on a non-zero exit with the combined output as the Unhealthy message', async () => {
      const { run, runtime, events } = setup();
      runtime.next = async () => ({
        stdout: Buffer.from('out\n'),
        stderr: Buffer.from('err\n'),
        exitCode: 1,
      });
      const outcome = await run(
        { exec: { command: ['check'] } },
        pod({ name: 'app' }),
        status('app'),
        'sim://abc',
        'liveness',
      );
      expect(outcome).to.equal('failure');
      expect(events).to.deep.equal([
        {
          type: 'Warning',
          reason: 'Unhealthy',
          message: 'Liveness probe failed: out\nerr\n',
          fieldPath: 'spec.containers{app}',
        },
      ]);
      // The default timeout is 1 s.
      expect(runtime.calls[0]!.timeout).to.equal(1);
    });

    it('reports a timeout as a failure with the kubelet message', async () => {
      const { run, runtime, events } = setup();
      runtime.next = () => Promise.reject(new KindError('DeadlineExceeded', 'exec timed out'));
      const outcome = await run(
        { exec: { command: ['sleep', '10'] } },
        pod({ name: 'app' }),
        status('app'),
        'sim://abc',
        'startup',
      );
      expect(outcome).to.equal('failure');
      expect(events[0]!.message).to.equal('Startup probe failed: command "sleep 10" timed out');
    });

    it('retries an execution error three times, then records it and rejects', async () => {
      const { run, runtime, events, probes } = setup();
      runtime.next = () => Promise.reject(new KindError('NotFound', 'container abc not found'));
      let err: unknown;
      try {
        await run(
          { exec: { command: ['x'] } },
          pod({ name: 'app' }),
          status('app'),
          'sim://abc',
          'readiness',
        );
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(KindError);
      expect(runtime.calls.length).to.equal(3);
      expect(events).to.deep.equal([
        {
          type: 'Warning',
          reason: 'Unhealthy',
          message: 'Readiness probe errored: container abc not found',
          fieldPath: 'spec.containers{app}',
        },
      ]);
      expect(probes).to.deep.equal([['readiness', 'unknown']]);
    });

    it('names init (sidecar) containers by their init field path', async () => {
      const { run, runtime, events } = setup();
      runtime.next = async () => ({ stdout: Buffer.from('no'), stderr: Buffer.alloc(0), exitCode: 2 });
      const p: Pod = {
        metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
        spec: { containers: [{ name: 'app' }], initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] },
      };
      await run({ exec: { command: ['x'] } }, p, status('proxy'), 'sim://abc', 'readiness');
      expect(events[0]!.fieldPath).to.equal('spec.initContainers{proxy}');
    });
  });

  describe('httpGet', () => {
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
      expect(probeURL({ port: 80, scheme: 'HTTPS' }, 'fd00::1', 443).toString()).to.equal(
        'https://[fd00::1]/',
      );
    });

    it('resolves named, numeric and string-numeric ports, and rejects unknown ones', () => {
      const ports = [{ name: 'http', containerPort: 8080 }];
      expect(resolveProbePort('http', ports)).to.equal(8080);
      expect(resolveProbePort(81, ports)).to.equal(81);
      expect(resolveProbePort('82', ports)).to.equal(82);
      expect(() => resolveProbePort('metrics', ports)).to.throw('port metrics not found');
      expect(() => resolveProbePort(70000, ports)).to.throw('invalid port number');
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
        {
          type: 'Warning',
          reason: 'ProbeWarning',
          message: 'Liveness probe warning: Probe terminated redirects, Response body: moved',
          fieldPath: 'spec.containers{app}',
        },
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
      const s = net.createServer();
      const closed = await listen(s);
      await close(s);
      const r = await httpProbe(new URL(`http://127.0.0.1:${closed}/`), {}, 1000);
      expect(r).to.deep.equal({
        result: 'failure',
        output: `Get "http://127.0.0.1:${closed}/": dial tcp 127.0.0.1:${closed}: connect: connection refused`,
      });
    });
  });

  describe('tcpSocket', () => {
    it('succeeds when the port accepts and fails with the dial error when it does not', async () => {
      const s = net.createServer((sock) => sock.end());
      const port = await listen(s);
      expect(await tcpProbe('127.0.0.1', port, 1000)).to.deep.equal({ result: 'success', output: '' });
      await close(s);
      expect(await tcpProbe('127.0.0.1', port, 1000)).to.deep.equal({
        result: 'failure',
        output: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
      });
    });
  });

  describe('grpc', () => {
    let server: grpc.Server;
    let port: number;
    let serving = 1;
    const identity = (b: Buffer): Buffer => b;

    before(async () => {
      server = new grpc.Server();
      server.addService(
        {
          Check: {
            path: '/grpc.health.v1.Health/Check',
            requestStream: false,
            responseStream: false,
            requestSerialize: identity,
            requestDeserialize: identity,
            responseSerialize: identity,
            responseDeserialize: identity,
            originalName: 'check',
          },
        },
        {
          Check: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
            // A service named "unknown" is not served (field 1 of the request is the name).
            if (call.request.toString('utf8').includes('unknown')) return cb(null, Buffer.from([0x08, 3]));
            cb(null, serving === 0 ? Buffer.alloc(0) : Buffer.from([0x08, serving]));
          },
        },
      );
      port = await new Promise<number>((resolve, reject) =>
        server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(err) : resolve(p),
        ),
      );
    });
    after(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));

    it('encodes the request and decodes the response of the health protocol', () => {
      expect(encodeHealthCheckRequest('')).to.deep.equal(Buffer.alloc(0));
      expect(encodeHealthCheckRequest('db')).to.deep.equal(Buffer.from([0x0a, 2, 0x64, 0x62]));
      expect(decodeHealthCheckResponse(Buffer.from([0x08, 1]))).to.equal(1);
      expect(decodeHealthCheckResponse(Buffer.from([0x12, 1, 0x41, 0x08, 2]))).to.equal(2);
      expect(decodeHealthCheckResponse(Buffer.alloc(0))).to.equal(0);
    });

    it('is healthy when SERVING and unhealthy otherwise, with the kubelet wording', async () => {
      const { run, events } = setup();
      const p = pod({ name: 'app' });
      serving = 1;
      expect(await run({ grpc: { port } }, p, status('app'), 'sim://abc', 'liveness')).to.equal('success');
      serving = 2;
      expect(await run({ grpc: { port } }, p, status('app'), 'sim://abc', 'liveness')).to.equal('failure');
      expect(
        await run({ grpc: { port, service: 'unknown' } }, p, status('app'), 'sim://abc', 'liveness'),
      ).to.equal('failure');
      expect(events.map((e) => e.message)).to.deep.equal([
        'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")',
        'Liveness probe failed: service unhealthy (responded with "SERVICE_UNKNOWN")',
      ]);
    });

    it('fails when nothing listens', async () => {
      const s = net.createServer();
      const closed = await listen(s);
      await close(s);
      const { run, events } = setup();
      const outcome = await run(
        { grpc: { port: closed }, timeoutSeconds: 1 },
        pod({ name: 'app' }),
        status('app'),
        'sim://abc',
        'readiness',
      );
      expect(outcome).to.equal('failure');
      expect(events[0]!.message).to.equal(
        `Readiness probe failed: timeout: failed to connect service "127.0.0.1:${closed}" within 1s: context deadline exceeded`,
      );
    });
  });

  describe('on the simulated runtime', () => {
    it('asks the port prober instead of the network, with the kubelet wording around it', async () => {
      const asked: [string, number, string][] = [];
      const { run, events } = setup((id, port, kind) => {
        asked.push([id, port, kind]);
        return port === 8080
          ? { result: 'success', output: '' }
          : { result: 'failure', output: `dial tcp 10.88.0.5:${port}: connect: connection refused` };
      });
      const p = pod({ name: 'web', ports: [{ name: 'http', containerPort: 8080 }] }, '10.88.0.5');
      expect(
        await run({ httpGet: { port: 'http', path: '/' } }, p, status('web'), 'sim://abc', 'readiness'),
      ).to.equal('success');
      expect(
        await run({ httpGet: { port: 9090, path: '/h' } }, p, status('web'), 'sim://abc', 'readiness'),
      ).to.equal('failure');
      expect(await run({ tcpSocket: { port: 9091 } }, p, status('web'), 'sim://abc', 'liveness')).to.equal(
        'failure',
      );
      expect(asked).to.deep.equal([
        ['abc', 8080, 'http'],
        ['abc', 9090, 'http'],
        ['abc', 9091, 'tcp'],
      ]);
      expect(events.map((e) => e.message)).to.deep.equal([
        'Readiness probe failed: Get "http://10.88.0.5:9090/h": dial tcp 10.88.0.5:9090: connect: connection refused',
        'Liveness probe failed: dial tcp 10.88.0.5:9091: connect: connection refused',
      ]);
    });
  });
});

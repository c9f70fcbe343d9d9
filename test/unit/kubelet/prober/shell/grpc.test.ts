// The grpc prober (src/kubelet/prober/shell/grpc.ts) against a real local health server, and through the runner.
import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import {
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  grpcProbeAnswer,
} from '../../../../../src/kubelet/prober/shell/grpc.js';
import { closedPort, pod, setup, status } from '../runner-fixtures.js';

describe('prober grpc', () => {
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
    const closed = await closedPort();
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
  it('words an answer from the runtime as the kubelet does', () => {
    expect(grpcProbeAnswer('10.88.0.5', 9000, 1000, { result: 'success', output: '' })).to.deep.equal({
      result: 'success',
      output: 'service healthy',
    });
    expect(
      grpcProbeAnswer('10.88.0.5', 9000, 2500, { result: 'failure', output: 'dial tcp: refused' }),
    ).to.deep.equal({
      result: 'failure',
      output: 'timeout: failed to connect service "10.88.0.5:9000" within 2.5s: context deadline exceeded',
    });
  });
});

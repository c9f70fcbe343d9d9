/**
 * The grpc prober (kubelet: pkg/probe/grpc): Check on the standard grpc.health.v1.Health service over an
 * insecure connection, its two messages coded by hand (one field each) rather than through a proto. A
 * runtime that answers probes itself reports whether the port accepts connections; the wording around its
 * answer is the kubelet's.
 */
import type * as grpc from '@grpc/grpc-js';
import { grpcJs } from '../../../util/grpcmodules.js';
import type { PortProbeOutcome } from '../../../runtime/types.js';
import { formatGoDuration } from '../../../util/duration.js';
import { KindError } from '../../../util/errors.js';
import { joinHostPort, ProbeUserAgent, type ProbeExecution } from '../probe.js';

/** grpc.health.v1.HealthCheckResponse.ServingStatus names by number. */
const ServingStatus = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;

/** HealthCheckRequest { string service = 1; } in protobuf wire form. */
export function encodeHealthCheckRequest(service: string): Buffer {
  const s = Buffer.from(service, 'utf8');
  if (s.length === 0) return Buffer.alloc(0);
  const len: number[] = [];
  let n = s.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([0x0a, ...len]), s]);
}

/** HealthCheckResponse { ServingStatus status = 1; } from protobuf wire form; unknown fields are skipped. */
export function decodeHealthCheckResponse(buf: Buffer): number {
  let i = 0;
  let status = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw new KindError('InvalidArgument', 'truncated health check response');
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return v;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) status = v;
    } else if (wire === 2) {
      const len = varint(); // read before adding: `i += varint()` would add to the old index
      i += len;
    } else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else throw new KindError('InvalidArgument', `unexpected wire type ${wire} in health check response`);
  }
  return status;
}

/**
 * kubelet grpc prober: Check on grpc.health.v1.Health over an insecure connection; SERVING is success
 * (`service healthy`), any other status, a failed connection or a failed call is a failure worded as the
 * kubelet words it.
 */
export async function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
): Promise<ProbeExecution> {
  const addr = joinHostPort(host, port);
  const timeout = formatGoDuration(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const client = new (grpcJs().Client)(addr, grpcJs().credentials.createInsecure(), {
    'grpc.primary_user_agent': ProbeUserAgent,
  });
  try {
    const connected = await new Promise<Error | undefined>((resolve) =>
      client.waitForReady(deadline, resolve),
    );
    if (connected) {
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded`,
      };
    }
    const response = await new Promise<{ err: grpc.ServiceError | null; status?: number }>((resolve) => {
      client.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (s: string) => encodeHealthCheckRequest(s),
        (b: Buffer) => decodeHealthCheckResponse(b),
        service,
        new (grpcJs().Metadata)(),
        { deadline },
        (err, status) => resolve({ err, status }),
      );
    });
    if (response.err) {
      const e = response.err;
      if (e.code === grpcJs().status.UNIMPLEMENTED) {
        return {
          result: 'failure',
          output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${e.details}`,
        };
      }
      if (e.code === grpcJs().status.DEADLINE_EXCEEDED) {
        return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      }
      return { result: 'failure', output: `error: health rpc probe failed: ${e.message}` };
    }
    const status = response.status ?? 0;
    if (status !== 1) {
      const name = ServingStatus[status] ?? String(status);
      return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(name)})` };
    }
    return { result: 'success', output: 'service healthy' };
  } finally {
    client.close();
  }
}

/** A grpc probe the runtime answered (RuntimeCapabilities.probePort, asked as tcp): healthy when it accepts. */
export function grpcProbeAnswer(
  host: string,
  port: number,
  timeoutMs: number,
  answer: PortProbeOutcome,
): ProbeExecution {
  if (answer.result === 'success') return { result: 'success', output: 'service healthy' };
  return {
    result: 'failure',
    output: `timeout: failed to connect service ${JSON.stringify(joinHostPort(host, port))} within ${formatGoDuration(timeoutMs)}: context deadline exceeded`,
  };
}

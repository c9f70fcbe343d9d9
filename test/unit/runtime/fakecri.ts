/**
 * An in-process CRI server for the client's unit tests: a @grpc/grpc-js Server on a unix socket in a temp
 * directory, serving both services of our own proto (src/runtime/cri/proto/api.proto). Each RPC answers from
 * `handlers` (canned answers set by the test) and is recorded with the request and the deadline it came with;
 * an RPC without a handler answers UNIMPLEMENTED. `stop()` and `start()` take the socket away and bring it
 * back on the same path, for outage and reconnect tests.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadCriServices } from '../../../src/runtime/cri/connection.js';

/** A canned answer: the response object (as proto-loader takes it), or a gRPC error to fail with. */
export type Answer = object | { error: { code: grpc.status; details: string } } | 'never';

/** Answers one request; `'never'` leaves the call hanging until its deadline or a shutdown. */
export type Handler = (request: Record<string, unknown>) => Answer | Promise<Answer>;

export interface RecordedCall {
  method: string;
  request: Record<string, unknown>;
  /** Milliseconds left before the call's deadline when the server got it; Infinity without one. */
  remainingMs: number;
}

export class FakeCriServer {
  readonly calls: RecordedCall[] = [];
  handlers: Partial<Record<string, Handler>> = {};
  private server: grpc.Server | undefined;

  private constructor(
    readonly dir: string,
    readonly socketPath: string,
  ) {}

  /** A started server on `<tmp>/cri.sock`. */
  static async start(): Promise<FakeCriServer> {
    const dir = await mkdtemp(join(tmpdir(), 'fakecri-'));
    const s = new FakeCriServer(dir, join(dir, 'cri.sock'));
    await s.start();
    return s;
  }

  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  /** Calls of `method`, in order. */
  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  async start(): Promise<void> {
    if (this.server) return;
    await rm(this.socketPath, { force: true });
    const server = new grpc.Server();
    const services = loadCriServices();
    for (const svc of [services.RuntimeService.service, services.ImageService.service]) {
      const impl: grpc.UntypedServiceImplementation = {};
      for (const method of Object.keys(svc)) impl[method] = this.unary(method);
      server.addService(svc, impl);
    }
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    this.server = server;
  }

  /** Takes the socket away at once; calls in flight fail. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    server?.forceShutdown();
    await rm(this.socketPath, { force: true });
  }

  async close(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
  }

  private unary(method: string): grpc.handleUnaryCall<Record<string, unknown>, object> {
    return (call, callback) => {
      const deadline = call.getDeadline();
      const at = deadline instanceof Date ? deadline.getTime() : deadline;
      this.calls.push({
        method,
        request: call.request,
        remainingMs: Number.isFinite(at) ? at - Date.now() : Infinity,
      });
      const handler = this.handlers[method];
      if (!handler) {
        callback({ code: grpc.status.UNIMPLEMENTED, details: `fake CRI: no handler for ${method}` });
        return;
      }
      Promise.resolve(handler(call.request)).then(
        (answer) => {
          if (answer === 'never') return;
          if ('error' in answer) callback(answer.error);
          else callback(null, answer);
        },
        (err: unknown) => callback({ code: grpc.status.INTERNAL, details: String(err) }),
      );
    };
  }
}

/** Shared builders for the probe protocol and runner tests (prober/shell/runner.ts and the protocols it runs). */
import type http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Container, ContainerStatus, Pod } from '../../../../src/api/core.js';
import { createProbeRunner } from '../../../../src/kubelet/prober/shell/runner.js';
import type { ProbeType } from '../../../../src/kubelet/prober/types.js';
import type { ExecSyncResult, PortProber } from '../../../../src/runtime/types.js';

export interface Recorded {
  type: string;
  reason: string;
  message: string;
  fieldPath?: string;
}

export function pod(container: Container, podIP = '127.0.0.1'): Pod {
  return {
    metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
    spec: { containers: [container] },
    status: { podIP, podIPs: [{ ip: podIP }] },
  };
}

/** A Warning Event about container app, as the runner records it. */
export const appWarning = (reason: string, message: string): Recorded => ({
  type: 'Warning',
  reason,
  message,
  fieldPath: 'spec.containers{app}',
});

export const status = (name: string): ContainerStatus => ({
  name,
  containerID: 'sim://abc',
  ready: false,
  restartCount: 0,
  state: { running: {} },
});

export function listen(server: http.Server | net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

export function close(server: http.Server | net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port no one listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const s = net.createServer();
  const port = await listen(s);
  await close(s);
  return port;
}

/** Records exec calls; answers exit 0 unless `next` says otherwise. Answers network probes when given one. */
export class FakeRuntime {
  calls: { id: string; cmd: string[]; timeout: number }[] = [];
  next: (() => Promise<ExecSyncResult>) | undefined;
  readonly capabilities: { probePort?: PortProber };

  constructor(probePort?: PortProber) {
    this.capabilities = probePort ? { probePort } : {};
  }

  execSync(id: string, cmd: string[], timeout: number): Promise<ExecSyncResult> {
    this.calls.push({ id, cmd, timeout });
    return this.next
      ? this.next()
      : Promise.resolve({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 });
  }
}

/** A runner over a FakeRuntime, with the events and metrics it produced. */
export function setup(probePort?: PortProber) {
  const events: Recorded[] = [];
  const probes: [ProbeType, string][] = [];
  const runtime = new FakeRuntime(probePort);
  const run = createProbeRunner({
    runtime,
    record: (_pod, type, reason, message, fieldPath) =>
      events.push({ type, reason, message, ...(fieldPath ? { fieldPath } : {}) }),
    onProbe: (t, r) => probes.push([t, r]),
  });
  return { events, probes, runtime, run };
}

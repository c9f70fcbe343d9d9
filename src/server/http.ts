/**
 * The operator's own HTTP endpoints: /healthz (the process is alive and its loops turn), /readyz (informers
 * synced, nodes started), /metrics (Prometheus text). Checks are functions registered by name, so each part
 * reports its own health and a failing check names itself in the response.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export type Check = () => string | undefined | Promise<string | undefined>;

export class HealthServer {
  private readonly health = new Map<string, Check>();
  private readonly ready = new Map<string, Check>();
  private server: http.Server | undefined;

  constructor(private readonly registry: Registry) {}

  addHealthCheck(name: string, check: Check): void {
    this.health.set(name, check);
  }
  addReadyCheck(name: string, check: Check): void {
    this.ready.set(name, check);
  }

  private async run(checks: Map<string, Check>): Promise<{ ok: boolean; body: string }> {
    const lines: string[] = [];
    let ok = true;
    for (const [name, check] of checks) {
      let problem: string | undefined;
      try {
        problem = await check();
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      }
      if (problem) ok = false;
      lines.push(problem ? `[-]${name} failed: ${problem}` : `[+]${name} ok`);
    }
    lines.push(ok ? 'ok' : 'failed');
    return { ok, body: `${lines.join('\n')}\n` };
  }

  async listen(port: number, host: string): Promise<number> {
    this.server = http.createServer((req, res) => {
      void this.handle(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    try {
      if (path === '/healthz' || path === '/livez' || path === '/readyz') {
        const r = await this.run(path === '/readyz' ? this.ready : this.health);
        res.writeHead(r.ok ? 200 : 500, { 'Content-Type': 'text/plain; charset=utf-8' });
        res.end(r.body);
      } else if (path === '/metrics') {
        const body = await this.registry.metrics();
        res.writeHead(200, { 'Content-Type': this.registry.contentType });
        res.end(body);
      } else {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('not found\n');
      }
    } catch (err) {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(`${err instanceof Error ? err.message : String(err)}\n`);
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections?.();
  }
}

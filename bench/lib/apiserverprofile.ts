// The API server's CPU profile over a window of a scale round (`--apiserver-profile DIR`): kube-apiserver runs
// with --profiling, and its /debug/pprof/profile endpoint is read with the driver's client certificate
// (system:masters). The profile is Go's pprof format; `go tool pprof -top FILE` reads it (the profile carries
// its own symbols). It tells where the API server spends the window: our agent's traffic and kwok's differ
// in kind (patch types, watches, Events), and on two shared cores the server's CPU sets the creates' pace.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import { DRIVER_USER, type BenchCluster } from './cluster.js';

/** The kube-apiserver flag that serves /debug/pprof (the test control plane turns it off by default). */
export const APISERVER_PROFILING_FLAG = '--profiling=true';

/** Reads `seconds` of the API server's CPU profile into `file`; resolves when the window has ended. */
export async function apiserverCpuProfile(bc: BenchCluster, seconds: number, file: string): Promise<void> {
  await writeFile(
    file,
    await driverGet(bc, `/debug/pprof/profile?seconds=${seconds}`, (seconds + 30) * 1000),
  );
}

/** GET `urlPath` of the API server as the driver (system:masters); rejects on anything but 200. */
export async function driverGet(bc: BenchCluster, urlPath: string, timeoutMs: number): Promise<Buffer> {
  const [ca, cert, key] = await Promise.all([
    readFile(path.join(bc.cp.dir, 'pki', 'ca.crt')),
    readFile(path.join(bc.dir, `${DRIVER_USER}.crt`)),
    readFile(path.join(bc.dir, `${DRIVER_USER}.key`)),
  ]);
  return new Promise<Buffer>((resolve, reject) => {
    const req = https.get(`${bc.cp.server}${urlPath}`, { ca, cert, key, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks))
          : reject(new Error(`API server ${urlPath}: HTTP ${res.statusCode}: ${Buffer.concat(chunks)}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`API server ${urlPath}: timed out`)));
    req.on('error', reject);
  });
}

/** `go tool pprof -top` of a profile, its first `lines` lines; a note instead when Go is not on PATH. */
export function pprofTop(file: string, lines = 30): Promise<string> {
  return new Promise((resolve) =>
    execFile(
      'go',
      ['tool', 'pprof', '-top', `-nodecount=${lines}`, file],
      { maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        resolve(err ? `go tool pprof ${file}: ${stderr.trim() || String(err)}` : stdout.trimEnd()),
    ),
  );
}

// Latency of RunPodSandbox + CreateContainer + StartContainer on a real containerd (scripts/containerd.sh),
// through CriRuntime and as bare grpc-js calls from the same proto, side by side: the difference is our
// client layer (conversion, error mapping, bookkeeping). Run with `npm run bench:cri` (root, Linux).
//
// Env: BENCH_SEQ (default 20) sequential pods per client, BENCH_PAR (default 20) pods per parallel round,
// BENCH_ROUNDS (default 3) parallel rounds per client. Clients alternate so drift hits both alike.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CriRuntime } from '../src/runtime/cri/client.js';
import type { PodSandboxConfig, ContainerConfig } from '../src/runtime/types.js';
import { startContainerd, type TestContainerd } from '../test/support/containerd.js';

const SEQ = Number(process.env.BENCH_SEQ ?? 20);
const PAR = Number(process.env.BENCH_PAR ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = 2;
const PROTO = fileURLToPath(new URL('../src/runtime/cri/proto/api.proto', import.meta.url));

/** One way of starting a pod; resolves to the sandbox ID. */
interface Starter {
  name: string;
  start(i: string): Promise<string>;
  cleanup(sandboxId: string): Promise<void>;
}

// ------------------------------------------------------------------------------------ raw grpc-js

type Unary = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (e: grpc.ServiceError | null, r?: unknown) => void,
) => void;

function rawClient(endpoint: string): { call<T>(method: string, req: object): Promise<T>; close(): void } {
  const def = protoLoader.loadSync(PROTO, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const root = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
  };
  const client = new root.runtime.v1.RuntimeService(endpoint, grpc.credentials.createInsecure());
  return {
    call: <T>(method: string, req: object) =>
      new Promise<T>((resolve, reject) => {
        const fn = (client as unknown as Record<string, Unary>)[method]!;
        fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + 120_000 }, (e, r) =>
          e ? reject(e) : resolve(r as T),
        );
      }),
    close: () => client.close(),
  };
}

function rawStarter(ctd: TestContainerd): Starter & { close(): void } {
  const raw = rawClient(ctd.endpoint);
  return {
    name: 'raw grpc-js',
    async start(tag) {
      const uid = randomUUID();
      const sandboxConfig = {
        metadata: { name: `bench-${tag}`, uid, namespace: 'bench', attempt: 0 },
        log_directory: `${ctd.dir}/pods/bench_bench-${tag}_${uid}`,
        labels: { bench: 'cri' },
        annotations: {},
        linux: {
          cgroup_parent: `${ctd.cgroupParentPrefix}/pod${uid}`,
          security_context: {
            namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
            seccomp: { profile_type: 'RuntimeDefault' },
          },
        },
      };
      const { pod_sandbox_id } = await raw.call<{ pod_sandbox_id: string }>('RunPodSandbox', {
        config: sandboxConfig,
      });
      const { container_id } = await raw.call<{ container_id: string }>('CreateContainer', {
        pod_sandbox_id,
        config: {
          metadata: { name: 'main', attempt: 0 },
          image: { image: ctd.images.busybox },
          command: ['sleep', '3600'],
          log_path: 'main/0.log',
          labels: { bench: 'cri' },
          annotations: {},
          linux: {
            security_context: {
              namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
              seccomp: { profile_type: 'RuntimeDefault' },
            },
          },
        },
        sandbox_config: sandboxConfig,
      });
      await raw.call('StartContainer', { container_id });
      return pod_sandbox_id;
    },
    async cleanup(id) {
      await raw.call('StopPodSandbox', { pod_sandbox_id: id });
      await raw.call('RemovePodSandbox', { pod_sandbox_id: id });
    },
    close: () => raw.close(),
  };
}

// ------------------------------------------------------------------------------------ CriRuntime

function criStarter(ctd: TestContainerd, rt: CriRuntime): Starter {
  return {
    name: 'CriRuntime',
    async start(tag) {
      const uid = randomUUID();
      const sandbox: PodSandboxConfig = {
        metadata: { name: `bench-${tag}`, uid, namespace: 'bench', attempt: 0 },
        logDirectory: `${ctd.dir}/pods/bench_bench-${tag}_${uid}`,
        labels: { bench: 'cri' },
        annotations: {},
        linux: {
          cgroupParent: `${ctd.cgroupParentPrefix}/pod${uid}`,
          securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
        },
      };
      const id = await rt.runPodSandbox(sandbox);
      const container: ContainerConfig = {
        metadata: { name: 'main', attempt: 0 },
        image: ctd.images.busybox,
        command: ['sleep', '3600'],
        logPath: 'main/0.log',
        labels: { bench: 'cri' },
        annotations: {},
      };
      const cid = await rt.createContainer(id, container, sandbox);
      await rt.startContainer(cid);
      return id;
    },
    async cleanup(id) {
      await rt.stopPodSandbox(id);
      await rt.removePodSandbox(id);
    },
  };
}

// ------------------------------------------------------------------------------------ measuring

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

function summary(samples: number[]): { median: number; p99: number; min: number; n: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { median: percentile(s, 50), p99: percentile(s, 99), min: s[0] ?? Number.NaN, n: s.length };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = process.hrtime.bigint();
  const v = await fn();
  return [v, Number(process.hrtime.bigint() - t0) / 1e6];
}

async function sequential(starter: Starter, tag: string, into: number[]): Promise<void> {
  const [id, ms] = await timed(() => starter.start(tag));
  into.push(ms);
  await starter.cleanup(id);
}

async function parallel(starter: Starter, round: number): Promise<{ total: number; perPod: number[] }> {
  const t0 = process.hrtime.bigint();
  const results = await Promise.all(
    Array.from({ length: PAR }, (_, i) => timed(() => starter.start(`p${round}-${i}`))),
  );
  const total = Number(process.hrtime.bigint() - t0) / 1e6;
  await Promise.all(results.map(([id]) => starter.cleanup(id)));
  return { total, perPod: results.map(([, ms]) => ms) };
}

const fmt = (ms: number): string => `${ms.toFixed(1).padStart(8)} ms`;

async function main(): Promise<void> {
  console.log('starting containerd (scripts/containerd.sh)...');
  const ctd = await startContainerd();
  const rt = new CriRuntime({ endpoint: ctd.endpoint });
  const raw = rawStarter(ctd);
  const starters = [criStarter(ctd, rt), raw];
  try {
    const v = await rt.version();
    console.log(
      `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}), host-network pods, busybox sleep`,
    );

    for (const s of starters)
      for (let i = 0; i < WARMUP; i++) await sequential(s, `${s.name === 'CriRuntime' ? 'c' : 'r'}w${i}`, []);

    const seq = new Map<string, number[]>(starters.map((s) => [s.name, []]));
    for (let i = 0; i < SEQ; i++) {
      // Alternate which client goes first, so slow drift of the daemon affects both equally.
      const order = i % 2 === 0 ? starters : [...starters].reverse();
      for (const s of order)
        await sequential(s, `${s.name === 'CriRuntime' ? 'c' : 'r'}${i}`, seq.get(s.name)!);
    }

    const par = new Map<string, { totals: number[]; perPod: number[] }>(
      starters.map((s) => [s.name, { totals: [], perPod: [] }]),
    );
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? starters : [...starters].reverse();
      for (const s of order) {
        const res = await parallel(s, r * 2 + (s.name === 'CriRuntime' ? 0 : 1));
        par.get(s.name)!.totals.push(res.total);
        par.get(s.name)!.perPod.push(...res.perPod);
      }
    }

    const names = starters.map((s) => s.name);
    const col = (t: string): string => t.padStart(16);
    console.log('');
    console.log(`Run+Create+Start of one pod${' '.repeat(22)}${names.map(col).join('')}`);
    const row = (label: string, values: number[]): void =>
      console.log(`  ${label.padEnd(47)}${values.map((v) => col(fmt(v))).join('')}`);
    const seqS = names.map((n) => summary(seq.get(n)!));
    row(
      `sequential, n=${SEQ}: median`,
      seqS.map((s) => s.median),
    );
    row(
      'sequential: p99',
      seqS.map((s) => s.p99),
    );
    row(
      'sequential: min',
      seqS.map((s) => s.min),
    );
    const parT = names.map((n) => summary(par.get(n)!.totals));
    const parP = names.map((n) => summary(par.get(n)!.perPod));
    row(
      `${PAR} in parallel, ${ROUNDS} rounds: total (median)`,
      parT.map((s) => s.median),
    );
    row(
      `${PAR} in parallel: total (worst round)`,
      parT.map((s) => s.p99),
    );
    row(
      `${PAR} in parallel: per pod median`,
      parP.map((s) => s.median),
    );
    row(
      `${PAR} in parallel: per pod p99`,
      parP.map((s) => s.p99),
    );
    const [cri, bare] = seqS;
    if (cri && bare) {
      console.log('');
      console.log(`client overhead, sequential median: ${(cri.median - bare.median).toFixed(1)} ms`);
    }
  } finally {
    // Anything a failed measurement left behind, then the daemon (which also removes the pod cgroups).
    for (const sb of await rt.listPodSandbox({ labelSelector: { bench: 'cri' } }).catch(() => [])) {
      await rt.stopPodSandbox(sb.id).catch(() => undefined);
      await rt.removePodSandbox(sb.id).catch(() => undefined);
    }
    await rt.close();
    raw.close();
    await ctd.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

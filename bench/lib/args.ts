// Command line of `npm run bench -- <scenario> [flags]` (pure: argv in, options or an error out).

export const SCENARIOS = ['scale', 'steady', 'cri-latency', 'resize', 'eviction', 'all'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** How the benchmark's agents authenticate to the API server (bench/lib/cluster.ts). */
export const AGENT_AUTHS = ['token', 'certificate'] as const;
export type AgentAuth = (typeof AGENT_AUTHS)[number];

export interface BenchArgs {
  scenario: Scenario;
  quick: boolean;
  /** Unset: the scenario's default (full or quick). */
  nodes?: number;
  pods?: number;
  /** Minutes of the steady-state hold. */
  holdMinutes?: number;
  /** Concurrent pod creates from the benchmark driver. */
  concurrency: number;
  /** Unset: bench/results/<scenario>-<timestamp>.json. */
  json?: string;
  /** scale: also run the same scenario with kwok (default true). */
  kwok: boolean;
  /** scale: run our side (default true; false with --kwok-only). */
  ours: boolean;
  /** scale: each side on a fresh control plane of its own (default: one for all sides). */
  planePerSide: boolean;
  /**
   * Flags for the operator's node process (e.g. --max-old-space-size=384), in order, after the image's own
   * (see imageNodeFlags; a V8 flag given twice takes the later value).
   */
  nodeArgs: string[];
  /** Run the operator with the node flags of the image's ENTRYPOINT and its compile cache (default true). */
  imageNodeFlags: boolean;
  /** Run the operator on the image's Node release (scripts/image-node.sh) instead of this process's. */
  imageNode: boolean;
  /** scale: write operator heap snapshots (nodes only, all Ready) into this directory. */
  heapSnapshots?: string;
  /** scale: count the operator's allocations in the create phase; the profile goes into this directory. */
  allocProfile?: string;
  /** scale: the API server's CPU profile of each side's first seconds of creates, written into this directory. */
  apiserverProfile?: string;
  /** scale: how the agents authenticate (default token: their ServiceAccounts', as deployed). */
  agentAuth: AgentAuth;
  /** steady: serve the node API on a loopback address per node and run metrics-server (15 s) against it. */
  metricsServer?: boolean;
  /** scale: run the whole scenario this many times, each on a fresh control plane, and summarize (default 1). */
  runs: number;
  /** scale: kwok's side runs first (with --runs N, in the first run; the runs alternate the order). */
  kwokFirst: boolean;
  /** scale: the audit log records Event writes too (left out by default, see bench/lib/audit.ts). */
  auditEvents: boolean;
  /** scale: at most this many pod creates started per second (unset: only --concurrency bounds them). */
  rate?: number;
  /**
   * scale: kwok's sides. `default`: kwokctl's default stages; `events`: its pod-ready stage also sends the
   * kubelet's three start Events; `both`: one side of each, in that order (issue #58's fair peer).
   */
  kwokEvents: 'default' | 'events' | 'both';
  /**
   * scale: our side as this many operator replicas sharing the VirtualNodes by shard Leases (default 1); with
   * 2 or more, one replica is killed after the hold and the fail-over is timed (bench/lib/replicas.ts).
   */
  replicas: number;
}

export const USAGE = `usage: npm run bench -- <${SCENARIOS.join('|')}> [flags]
  --quick            small variant (scale 10x100, steady 1000 pods for 1 min, cri-latency fewer rounds,
                     resize 200 pods, eviction 10x20)
  --nodes N          nodes per side
  --pods M           pods per node
  --hold-minutes H   steady: how long to hold the pods (default 10, quick 1); scale: hold them Ready this
                     long before the delete (default 0), Leases and Node readiness watched throughout
  --rate R           scale: at most R pod creates (and then deletes) started per second (default:
                     --concurrency alone)
  --kwok-events      scale: kwok's pod-ready stage also sends Pulled, Created and Started, as a kubelet does
                     for the benchmark pod (bench/lib/agents.ts kwokEventsStage says what they still lack)
  --kwok-both        scale: two kwok sides, kwokctl's default stages and --kwok-events' (ours first)
  --concurrency C    concurrent pod creates from the driver (default 64)
  --replicas N       scale: our side as N operator processes sharing the nodes by shard Leases; after the
                     hold one replica is killed (SIGKILL) and the fail-over to the others is timed
  --no-kwok          scale: skip the kwok side
  --plane-per-side   scale: each side on a fresh control plane of its own (etcd and kube-apiserver), for
                     sizes where one cannot hold both sides one after the other (1,000 x 100)
  --kwok-only        scale: kwok's sides alone, without ours
  --json PATH        where to write the results (default bench/results/<scenario>-<timestamp>.json)
  --node-arg FLAG    a flag for the operator's node process (repeatable; e.g. --node-arg=--max-semi-space-size=4),
                     after the image's own flags
  --no-image-node-flags
                     run the operator's node without the flags of the Dockerfile's ENTRYPOINT (and
                     without the compile cache its ENV NODE_COMPILE_CACHE gives the image)
  --image-node       run the operator (not the driver) on the image's Node release, fetched and cached by
                     scripts/image-node.sh, instead of the machine's (BENCH_OPERATOR_NODE=PATH names any node)
  --heap-snapshots D scale: write the operator's V8 heap snapshots (nodes only, all Ready, Events written) into D
  --alloc-profile D  scale: count what the operator allocates from the first create to all Ready (V8's
                     sampling heap profiler, collected objects included); prints KB per pod and the top
                     functions, writes the profile into D
  --apiserver-profile D
                     scale: the API server's CPU profile of each side's first 20 s of creates (pprof format,
                     written into D); prints its top functions (go tool pprof -top)
  --agent-auth A     scale: token (default; each agent with its ServiceAccount's token, RBAC and FlowSchemas,
                     as deployed) or certificate (client certificates in system:masters, exempt from API
                     Priority and Fairness: the benchmark before 2026-11-29)
  --runs N           scale: run it N times, one after the other (each with a fresh control plane), and print
                     the targets' median over the runs and how many runs met each; the runs alternate which
                     side goes first (the second meets the first one's Events and write history)
  --kwok-first       scale: kwok's side first, then ours (in the first of --runs N); default ours first
  --audit-events     scale: the audit log records Event writes too (left out by default, as Kubernetes' own
                     production audit policy leaves them out: auditing each costs the API server CPU)
  --metrics-server   steady: the operator serves its node API (a loopback InternalIP per node) and
                     metrics-server scrapes every node every 15 s; adds the metrics API coverage and the
                     cost of one scrape of one node`;

/**
 * Whether kwok's side goes first in run `run` (1-based) of a scale set: the first run as `--kwok-first` says,
 * then every run the other way round, so each side goes second in half the runs (the second side meets what
 * the first left on the shared API server and etcd). Never without kwok.
 */
export function kwokFirstInRun(a: Pick<BenchArgs, 'kwok' | 'kwokFirst'>, run: number): boolean {
  return a.kwok && a.kwokFirst === (run % 2 === 1);
}

/**
 * `--name N` of this process's command line for the micro-benchmarks (`npm run bench:<name> -- --name N`):
 * a positive integer, `fallback` when absent; anything else throws.
 */
export function positiveArg(name: string, fallback: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(name);
  const v = i >= 0 ? Number(argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} needs a positive integer`);
  return v;
}

export type ParsedArgs = { ok: true; args: BenchArgs } | { ok: false; message: string };

export function parseBenchArgs(argv: readonly string[]): ParsedArgs {
  let scenario: Scenario | undefined;
  const args: Omit<BenchArgs, 'scenario'> = {
    quick: false,
    concurrency: 64,
    kwok: true,
    ours: true,
    planePerSide: false,
    nodeArgs: [],
    imageNodeFlags: true,
    imageNode: false,
    agentAuth: 'token',
    runs: 1,
    kwokFirst: false,
    auditEvents: false,
    kwokEvents: 'default',
    replicas: 1,
  };
  const positive = (flag: string, v: string | undefined): number | string => {
    const n = Number(v);
    return v !== undefined && Number.isInteger(n) && n > 0 ? n : `${flag} needs a positive integer`;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? a.split(/=(.*)/s, 2) : [a, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--quick':
        args.quick = true;
        break;
      case '--no-kwok':
        args.kwok = false;
        break;
      case '--plane-per-side':
        args.planePerSide = true;
        break;
      case '--kwok-only':
        args.ours = false;
        break;
      case '--no-image-node-flags':
        args.imageNodeFlags = false;
        break;
      case '--image-node':
        args.imageNode = true;
        break;
      case '--metrics-server':
        args.metricsServer = true;
        break;
      case '--kwok-first':
        args.kwokFirst = true;
        break;
      case '--audit-events':
        args.auditEvents = true;
        break;
      case '--kwok-events':
        args.kwokEvents = 'events';
        break;
      case '--kwok-both':
        args.kwokEvents = 'both';
        break;
      case '--json': {
        const v = value();
        if (!v) return { ok: false, message: '--json needs a path' };
        args.json = v;
        break;
      }
      case '--node-arg': {
        const v = value();
        if (!v?.startsWith('-'))
          return { ok: false, message: '--node-arg needs a node flag (--node-arg=--flag)' };
        args.nodeArgs.push(v);
        break;
      }
      case '--alloc-profile': {
        const v = value();
        if (!v) return { ok: false, message: '--alloc-profile needs a directory' };
        args.allocProfile = v;
        break;
      }
      case '--apiserver-profile': {
        const v = value();
        if (!v) return { ok: false, message: '--apiserver-profile needs a directory' };
        args.apiserverProfile = v;
        break;
      }
      case '--agent-auth': {
        const v = value();
        if (!(AGENT_AUTHS as readonly (string | undefined)[]).includes(v))
          return { ok: false, message: `--agent-auth needs one of ${AGENT_AUTHS.join(', ')}` };
        args.agentAuth = v as AgentAuth;
        break;
      }
      case '--heap-snapshots': {
        const v = value();
        if (!v) return { ok: false, message: '--heap-snapshots needs a directory' };
        args.heapSnapshots = v;
        break;
      }
      case '--nodes':
      case '--pods':
      case '--hold-minutes':
      case '--runs':
      case '--rate':
      case '--replicas':
      case '--concurrency': {
        const n = positive(flag, value());
        if (typeof n === 'string') return { ok: false, message: n };
        if (flag === '--nodes') args.nodes = n;
        else if (flag === '--pods') args.pods = n;
        else if (flag === '--hold-minutes') args.holdMinutes = n;
        else if (flag === '--runs') args.runs = n;
        else if (flag === '--rate') args.rate = n;
        else if (flag === '--replicas') args.replicas = n;
        else args.concurrency = n;
        break;
      }
      default:
        if (flag!.startsWith('-')) return { ok: false, message: `unknown flag ${flag}` };
        if (scenario) return { ok: false, message: `unexpected argument ${flag}` };
        if (!(SCENARIOS as readonly string[]).includes(flag!))
          return { ok: false, message: `unknown scenario ${flag}` };
        scenario = flag as Scenario;
    }
  }
  if (!scenario) return { ok: false, message: 'no scenario given' };
  if (args.metricsServer && scenario !== 'steady' && scenario !== 'all')
    return { ok: false, message: '--metrics-server is a flag of the steady scenario' };
  if (args.runs > 1 && scenario !== 'scale')
    return { ok: false, message: '--runs is a flag of the scale scenario' };
  if (args.replicas > 1 && scenario !== 'scale')
    return { ok: false, message: '--replicas is a flag of the scale scenario' };
  if (!args.ours && (scenario !== 'scale' || !args.kwok || args.replicas > 1 || args.runs > 1))
    return {
      ok: false,
      message: '--kwok-only is a flag of the scale scenario, not with --no-kwok, --replicas or --runs',
    };
  if (args.kwokEvents !== 'default' && !args.kwok)
    return { ok: false, message: '--kwok-events and --kwok-both need the kwok side (not with --no-kwok)' };
  return { ok: true, args: { scenario, ...args } };
}

/** bench/results/<scenario>-<UTC timestamp>.json, relative to the repo root. */
export function defaultJsonPath(scenario: string, now: Date): string {
  const ts = now
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d{3}Z$/, 'Z');
  return `bench/results/${scenario}-${ts}.json`;
}

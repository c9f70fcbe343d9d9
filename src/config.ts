/**
 * Operator configuration from flags and environment, validated once at start. A bad value stops the
 * process with one line naming the flag; nothing later re-checks.
 *
 * Flags win over environment variables; every flag has an env form (KO_<UPPER_SNAKE>).
 */
import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * The Event writes' and the heartbeats' own connections (the rest: --kube-api-connections). Sixteen Event
 * connections keep up with a burst's Events as fast as the API server takes them (32 and 4 were both slower
 * at 100 nodes). Heartbeats need one renewal per node every 10 s whatever the load: a pool of sixteen renews
 * at most 16 / latency Leases a second, which at 1,000 nodes (100 a second) falls behind once a busy API
 * server answers in more than 160 ms (a 1000 x 100 run renewed 4,504 of 6,000 Leases a minute while pods
 * were created). A kubelet has a connection of its own; here the pool opens up to 128 as the queue needs
 * them and closes idle ones after 90 s, so a hundred nodes still use a handful.
 * Exported for bench:events, which measures the Event client as main.ts sets it up.
 */
export const EVENT_CONNECTIONS = 16;
export const HEARTBEAT_CONNECTIONS = 128;

// Label selector syntax (apimachinery labels.Parse): requirements separated by commas, each `key`, `!key`,
// `key=v`, `key==v`, `key!=v`, `key in (v,...)`, `key notin (v,...)`, `key > n` or `key < n`. Checked here so
// that a typo stops the process at start instead of failing every list the operator makes.
const LABEL_NAME = '[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';
const LABEL_KEY = `(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?${LABEL_NAME}`;
const LABEL_VALUE = `(?:${LABEL_NAME})?`;
const REQUIREMENT = new RegExp(
  `^\\s*(?:!\\s*${LABEL_KEY}|${LABEL_KEY}(?:\\s*(?:==|=|!=)\\s*${LABEL_VALUE}` +
    `|\\s+(?:in|notin)\\s*\\(\\s*${LABEL_VALUE}(?:\\s*,\\s*${LABEL_VALUE})*\\s*\\)|\\s*[<>]\\s*[0-9]+)?)\\s*$`,
);

/** Whether `s` parses as a label selector (empty = everything). */
export function isLabelSelector(s: string): boolean {
  if (s.trim() === '') return true;
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')') depth--;
    else if (s[i] === ',' && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) return false;
  }
  parts.push(s.slice(start));
  return depth === 0 && parts.every((p) => REQUIREMENT.test(p));
}

export const ConfigSchema = z.object({
  /** Path to a kubeconfig; empty = in-cluster, or ~/.kube/config outside a cluster. */
  kubeconfig: z.string().default(''),
  /**
   * Client rate limit (kubelet defaults) for everything but heartbeats and events. Heartbeats (node Leases,
   * node status, shard Leases) are never rate limited, as the kubelet's heartbeat client.
   */
  kubeApiQps: z.coerce.number().positive().default(50),
  kubeApiBurst: z.coerce.number().int().positive().default(100),
  /** Each VirtualNode's Event rate limit, a bucket per node (kubelet eventRecordQPS and eventBurst, same defaults). */
  eventQps: z.coerce.number().positive().default(50),
  eventBurst: z.coerce.number().int().positive().default(100),
  /**
   * Connections to the API server for everything but heartbeats and events; requests beyond them wait their
   * turn in the process. Events and heartbeats have pools of their own (EVENT_CONNECTIONS, HEARTBEAT_CONNECTIONS).
   */
  kubeApiConnections: z.coerce.number().int().positive().default(64),
  /** Lift the client and event rate limits entirely (benchmarks). */
  unlimitedQps: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(false),
  /** /healthz, /readyz, /metrics. */
  httpAddress: z.string().default('0.0.0.0'),
  httpPort: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Port advertised as the node API (daemonEndpoints). */
  nodeApiPort: z.coerce.number().int().min(1).max(65535).default(10250),
  /** Address the node API listens on (one HTTPS server for every served VirtualNode). */
  nodeApiAddress: z.string().default('0.0.0.0'),
  /**
   * Where the node API's serving certificate comes from: `files` (--node-api-cert-file and
   * --node-api-key-file; without them the node API is off) or `csr` (one per node, requested with a
   * CertificateSigningRequest for signer kubernetes.io/kubelet-serving, which someone must approve).
   */
  nodeApiServingCert: z.enum(['files', 'csr']).default('files'),
  /** Node API serving certificate and key (PEM); SANs must hold the nodes' InternalIPs. Empty = no node API. */
  nodeApiCertFile: z.string().default(''),
  nodeApiKeyFile: z.string().default(''),
  /** CA bundle for client certificates (the API server's kubelet client cert). Empty = tokens only. */
  nodeApiClientCaFile: z.string().default(''),
  /** InternalIP for VirtualNodes that do not set one (the operator pod's IP in a cluster). */
  defaultInternalIP: z
    .string()
    .refine((s) => isIP(s) !== 0, 'not an IP address')
    .default('127.0.0.1'),
  /** Only VirtualNodes matching this label selector are served (sharding across processes). */
  virtualNodeSelector: z.string().refine(isLabelSelector, 'not a label selector').default(''),
  /** Where the operator keeps per-node state (pod directories: `<state-dir>/nodes/<node>/pods`). */
  stateDir: z.string().startsWith('/', 'must be an absolute path').default('/var/lib/kubelet-operator'),
  /** Cluster DNS servers (comma-separated) for VirtualNodes that set no spec.kubelet.clusterDNS. */
  clusterDns: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    )
    .refine((l) => l.every((x) => isIP(x) !== 0), 'not a comma-separated list of IP addresses'),
  /** Cluster DNS domain for VirtualNodes that set no spec.kubelet.clusterDomain. */
  clusterDomain: z.string().default('cluster.local'),
  /** The host's resolv.conf (dnsPolicy Default) for cri VirtualNodes that set no spec.kubelet.resolvConf. */
  resolvConf: z.string().startsWith('/', 'must be an absolute path').default('/etc/resolv.conf'),
  /** The host's hosts file, which host-network pods on cri VirtualNodes see (with their hostAliases). */
  hostsFile: z.string().startsWith('/', 'must be an absolute path').default('/etc/hosts'),
  /**
   * Share VirtualNodes with other replicas by Leases in --shard-namespace (operator/shard): each replica
   * announces itself with a Lease and serves the VirtualNodes whose shard Lease it holds, at most its fair
   * share. Off: this process serves every VirtualNode matching --virtual-node-selector (one replica).
   */
  shardLeases: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(false),
  /** This replica's holder identity (default: env POD_NAME, else `<hostname>-<pid>`). */
  shardIdentity: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/, 'not a DNS label (lower case, at most 63)')
    .or(z.literal(''))
    .default(''),
  /** Namespace of the shard Leases (default: env POD_NAMESPACE, else kubelet-operator-system). */
  shardNamespace: z.string().default(''),
  shardLeaseDurationSeconds: z.coerce.number().int().min(2).max(3600).default(15),
  shardRenewIntervalSeconds: z.coerce.number().int().min(1).max(3600).default(5),
  /**
   * The host (Node name) this replica runs on (default: env NODE_NAME). A cri VirtualNode with
   * spec.runtime.cri.host is served only by a replica on that host, whose containerd it drives.
   */
  shardHost: z.string().default(''),
  logLevel: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
  /** Workers for the VirtualNode controller queue (syncs mostly wait on API calls; many nodes start at once). */
  workers: z.coerce.number().int().min(1).max(64).default(16),
});

export type Config = z.infer<typeof ConfigSchema>;

/** Words of a camelCase name; a run of capitals is one word (defaultInternalIP -> default, internal, ip). */
function words(s: string): string[] {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(' ');
}
function camelToKebab(s: string): string {
  return words(s).join('-');
}
function camelToEnv(s: string): string {
  return `KO_${words(s).join('_').toUpperCase()}`;
}

/** The flag a configuration key is given by (`nodeApiPort` -> `node-api-port`). */
export function flagName(key: keyof Config): string {
  return camelToKebab(key);
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; message: string };

/**
 * Reads `--flag=value` / `--flag value` / `--bool-flag` from argv and KO_* from env. Unknown flags and
 * invalid values are errors naming the flag.
 */
export function loadConfig(argv: string[], env: Record<string, string | undefined>): ConfigResult {
  const keys = Object.keys(ConfigSchema.shape) as (keyof Config)[];
  const byFlag = new Map(keys.map((k) => [camelToKebab(k), k]));
  const raw: Record<string, unknown> = {};
  for (const k of keys) {
    const v = env[camelToEnv(k)];
    if (v !== undefined) raw[k] = v;
  }
  if (raw.kubeconfig === undefined && env.KUBECONFIG) raw.kubeconfig = env.KUBECONFIG;
  if (raw.defaultInternalIP === undefined && env.POD_IP) raw.defaultInternalIP = env.POD_IP;
  if (raw.shardIdentity === undefined && env.POD_NAME) raw.shardIdentity = env.POD_NAME;
  if (raw.shardNamespace === undefined && env.POD_NAMESPACE) raw.shardNamespace = env.POD_NAMESPACE;
  if (raw.shardHost === undefined && env.NODE_NAME) raw.shardHost = env.NODE_NAME;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) return { ok: false, message: `unexpected argument ${JSON.stringify(arg)}` };
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    const key = byFlag.get(name);
    if (!key) return { ok: false, message: `unknown flag --${name}` };
    if (eq >= 0) raw[key] = arg.slice(eq + 1);
    else if (key === 'unlimitedQps' || key === 'shardLeases') raw[key] = true;
    else if (i + 1 < argv.length) raw[key] = argv[++i];
    else return { ok: false, message: `flag --${name} needs a value` };
  }
  const r = ConfigSchema.safeParse(raw);
  if (r.success) {
    const c = r.data;
    if (c.shardRenewIntervalSeconds * 2 >= c.shardLeaseDurationSeconds)
      return {
        ok: false,
        message: '--shard-renew-interval-seconds: must be less than half of --shard-lease-duration-seconds',
      };
    if (c.nodeApiServingCert === 'csr' && (c.nodeApiCertFile || c.nodeApiKeyFile))
      return {
        ok: false,
        message: '--node-api-serving-cert=csr: leave --node-api-cert-file and --node-api-key-file empty',
      };
    return { ok: true, config: c };
  }
  const issue = r.error.issues[0]!;
  const key = String(issue.path[0] ?? '');
  return { ok: false, message: `--${camelToKebab(key)}: ${issue.message}` };
}

export function usage(): string {
  const keys = Object.keys(ConfigSchema.shape);
  return `kubelet-operator flags (each also as env KO_<NAME>):\n${keys.map((k) => `  --${camelToKebab(k)}`).join('\n')}`;
}

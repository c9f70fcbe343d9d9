/**
 * Operator configuration from flags and environment, validated once at start. A bad value stops the
 * process with one line naming the flag; nothing later re-checks.
 *
 * Flags win over environment variables; every flag has an env form (KO_<UPPER_SNAKE>).
 */
import { z } from 'zod';

export const ConfigSchema = z.object({
  /** Path to a kubeconfig; empty = in-cluster, or ~/.kube/config outside a cluster. */
  kubeconfig: z.string().default(''),
  /** Client rate limit (kubelet defaults). */
  kubeApiQps: z.coerce.number().positive().default(50),
  kubeApiBurst: z.coerce.number().int().positive().default(100),
  /** Lift the client rate limit entirely (benchmarks). */
  unlimitedQps: z
    .union([z.boolean(), z.enum(['true', 'false'])])
    .transform((v) => v === true || v === 'true')
    .default(false),
  /** /healthz, /readyz, /metrics. */
  httpAddress: z.string().default('0.0.0.0'),
  httpPort: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Port advertised as the node API (daemonEndpoints). */
  nodeApiPort: z.coerce.number().int().min(1).max(65535).default(10250),
  /** InternalIP for VirtualNodes that do not set one (the operator pod's IP in a cluster). */
  defaultInternalIP: z.string().default('127.0.0.1'),
  /** Only VirtualNodes matching this label selector are served (sharding across processes). */
  virtualNodeSelector: z.string().default(''),
  logLevel: z.enum(['error', 'warn', 'info', 'debug']).default('info'),
  /** Workers for the VirtualNode controller queue. */
  workers: z.coerce.number().int().min(1).max(64).default(4),
});

export type Config = z.infer<typeof ConfigSchema>;

function camelToKebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
function camelToEnv(s: string): string {
  return `KO_${s.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
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
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) return { ok: false, message: `unexpected argument ${JSON.stringify(arg)}` };
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq >= 0 ? eq : undefined);
    const key = byFlag.get(name);
    if (!key) return { ok: false, message: `unknown flag --${name}` };
    if (eq >= 0) raw[key] = arg.slice(eq + 1);
    else if (key === 'unlimitedQps') raw[key] = true;
    else if (i + 1 < argv.length) raw[key] = argv[++i];
    else return { ok: false, message: `flag --${name} needs a value` };
  }
  const r = ConfigSchema.safeParse(raw);
  if (r.success) return { ok: true, config: r.data };
  const issue = r.error.issues[0]!;
  const key = String(issue.path[0] ?? '');
  return { ok: false, message: `--${camelToKebab(key)}: ${issue.message}` };
}

export function usage(): string {
  const keys = Object.keys(ConfigSchema.shape);
  return `kubelet-operator flags (each also as env KO_<NAME>):\n${keys.map((k) => `  --${camelToKebab(k)}`).join('\n')}`;
}

/**
 * What a node's `/configz` and `/flagz` say, pure. A kubelet serves its effective KubeletConfiguration on
 * `/configz` as `{"kubeletconfig": <kubelet.config.k8s.io/v1beta1 KubeletConfiguration>}` (component-base
 * configz under the name cmd/kubelet registers), compact JSON; upstream's node e2e reads it through
 * `/api/v1/nodes/<node>/proxy/configz` and decodes it into the v1beta1 type. `/flagz` lists its
 * command-line flags.
 *
 * Ours list only what a node really applies, each from the setting in force: the node's own settings
 * (NodeKubeletSettings, from its VirtualNode and the operator's defaults, see src/app/nodeconfigz.ts) and the node
 * API server's (NodeApiSettings, from the operator's flags). Fields are in the v1beta1 type's order and
 * follow its JSON rules (an omitempty field at its zero value is left out, as `readOnlyPort: 0` is on a
 * kubelet). /flagz has the operator's own flags, then, under the kubelet's flag names, what the node's
 * kubelet flags would be (`--node-ip`, `--hostname-override`, `--cluster-dns`, ...); a name both have shows
 * the node's value.
 */
import { flagName, type Config } from '../../config.js';
import { formatGoDuration } from '../../util/duration.js';
import { AUTHN_TTL_MS, AUTHZ_ALLOWED_TTL_MS, AUTHZ_DENIED_TTL_MS } from './auth.js';
import { goJSONEscape } from './negotiate.js';

export const CONFIGZ_PATH = '/configz';
/** The name cmd/kubelet registers its configuration under (configz.New("kubeletconfig")). */
export const CONFIGZ_NAME = 'kubeletconfig';

/** One node's kubelet settings as the node applies them. */
export interface NodeKubeletSettings {
  nodeName: string;
  nodeIP: string;
  /** A cri node's CRI endpoint, cgroup parent and pod log root; undefined on a simulated node. */
  cri?: { endpoint: string; cgroupRoot: string; podLogsDir: string };
  clusterDNS: readonly string[];
  clusterDomain: string;
  /** The resolv.conf that pods with dnsPolicy Default start from; '' when the node reads none. */
  resolvConf: string;
  maxPods: number;
  /** Pod workers' resync period. */
  syncFrequencyMs: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  allowedUnsafeSysctls: readonly string[];
  /**
   * shutdownGracePeriod, shutdownGracePeriodCriticalPods (ms) and shutdownGracePeriodByPodPriority in force
   * (GracefulNodeShutdown); absent: not known (a node built without them), left out.
   */
  shutdown?: {
    gracePeriodMs: number;
    gracePeriodCriticalPodsMs: number;
    byPodPriority: readonly { priority: number; shutdownGracePeriodSeconds: number }[];
  };
  /**
   * crashLoopBackOff.maxContainerRestartPeriod in force (KubeletCrashLoopBackOffMax on: the configured one,
   * else the kubelet's default 300 s); undefined with that gate off, where a kubelet leaves it unset.
   */
  maxContainerRestartPeriodMs?: number;
  /** cpuCFSQuotaPeriod in force (default 100 ms). */
  cpuCFSQuotaPeriodMs: number;
  /** volumeStatsAggPeriod in force (default a minute; negative: volume stats off). */
  volumeStatsAggPeriodMs?: number;
  /** The image GC policy in force (imageGCHigh/LowThresholdPercent, imageMinimum/MaximumGCAge); absent: none. */
  imageGC?: { highThresholdPercent: number; lowThresholdPercent: number; minAgeMs: number; maxAgeMs: number };
  /** The node's labels and taints from its VirtualNode (kubelet --node-labels, --register-with-taints). */
  labels: Readonly<Record<string, string>>;
  taints: readonly { key: string; value?: string; effect: string }[];
}

/** The node API server's settings, the same for every node of the process (main.ts, from the flags). */
export interface NodeApiSettings {
  address: string;
  port: number;
  /** The CA file of accepted client certificates; '' when only bearer tokens are accepted. */
  clientCAFile: string;
  /** Where the serving certificate comes from; undefined when not known (a server built without flags). */
  serving?: { mode: 'files'; certFile: string; keyFile: string } | { mode: 'csr' };
  /** Each node's Event rate limit (one bucket per node, as each kubelet has one). */
  events?: { qps: number; burst: number } | 'unlimited';
  /** The operator's own flags and their values, as /flagz lists them (operatorFlagValues). */
  operatorFlags: Readonly<Record<string, string>>;
}

/** A Go duration string ("1m0s") of milliseconds. */
const duration = (ms: number): string => formatGoDuration(ms);

/** The effective KubeletConfiguration (kubelet.config.k8s.io/v1beta1), in the type's field order. */
export function kubeletConfiguration(n: NodeKubeletSettings, api: NodeApiSettings): Record<string, unknown> {
  const c: Record<string, unknown> = {
    kind: 'KubeletConfiguration',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    enableServer: true,
  };
  if (n.cri) c.podLogsDir = n.cri.podLogsDir;
  c.syncFrequency = duration(n.syncFrequencyMs);
  if (api.address) c.address = api.address;
  if (api.port) c.port = api.port;
  if (api.serving?.mode === 'files') {
    if (api.serving.certFile) c.tlsCertFile = api.serving.certFile;
    if (api.serving.keyFile) c.tlsPrivateKeyFile = api.serving.keyFile;
  }
  if (api.serving?.mode === 'csr') c.serverTLSBootstrap = true;
  c.authentication = {
    x509: api.clientCAFile ? { clientCAFile: api.clientCAFile } : {},
    webhook: { enabled: true, cacheTTL: duration(AUTHN_TTL_MS) },
    anonymous: { enabled: false },
  };
  c.authorization = {
    mode: 'Webhook',
    webhook: {
      cacheAuthorizedTTL: duration(AUTHZ_ALLOWED_TTL_MS),
      cacheUnauthorizedTTL: duration(AUTHZ_DENIED_TTL_MS),
    },
  };
  // eventRecordQPS is an int32 there, 0 meaning no limit; a fractional rate has no v1beta1 form.
  if (api.events === 'unlimited') c.eventRecordQPS = 0;
  else if (api.events) {
    if (Number.isInteger(api.events.qps)) c.eventRecordQPS = api.events.qps;
    c.eventBurst = api.events.burst;
  }
  c.enableDebuggingHandlers = true;
  if (n.clusterDomain) c.clusterDomain = n.clusterDomain;
  if (n.clusterDNS.length > 0) c.clusterDNS = [...n.clusterDNS];
  c.nodeStatusUpdateFrequency = duration(n.nodeStatusUpdateFrequencyMs);
  c.nodeStatusReportFrequency = duration(n.nodeStatusReportFrequencyMs);
  c.nodeLeaseDurationSeconds = n.nodeLeaseDurationSeconds;
  if (n.cri) c.cgroupRoot = n.cri.cgroupRoot;
  if (n.maxPods) c.maxPods = n.maxPods;
  c.resolvConf = n.resolvConf;
  c.cpuCFSQuota = true;
  c.cpuCFSQuotaPeriod = duration(n.cpuCFSQuotaPeriodMs);
  // Image pulls run in parallel, each in its own pod's worker.
  c.serializeImagePulls = false;
  if (n.imageGC) {
    c.imageMinimumGCAge = duration(n.imageGC.minAgeMs);
    c.imageMaximumGCAge = duration(n.imageGC.maxAgeMs);
    c.imageGCHighThresholdPercent = n.imageGC.highThresholdPercent;
    c.imageGCLowThresholdPercent = n.imageGC.lowThresholdPercent;
  }
  if (n.volumeStatsAggPeriodMs !== undefined) c.volumeStatsAggPeriod = duration(n.volumeStatsAggPeriodMs);
  if (n.allowedUnsafeSysctls.length > 0) c.allowedUnsafeSysctls = [...n.allowedUnsafeSysctls];
  // Durations are structs in v1beta1, so a kubelet prints them even at 0s; the list only when set.
  if (n.shutdown) {
    c.shutdownGracePeriod = duration(n.shutdown.gracePeriodMs);
    c.shutdownGracePeriodCriticalPods = duration(n.shutdown.gracePeriodCriticalPodsMs);
    if (n.shutdown.byPodPriority.length > 0)
      c.shutdownGracePeriodByPodPriority = n.shutdown.byPodPriority.map((e) => ({
        priority: e.priority,
        shutdownGracePeriodSeconds: e.shutdownGracePeriodSeconds,
      }));
  }
  if (n.maxContainerRestartPeriodMs !== undefined)
    c.crashLoopBackOff = { maxContainerRestartPeriod: duration(n.maxContainerRestartPeriodMs) };
  if (n.taints.length > 0)
    c.registerWithTaints = n.taints.map((t) => ({
      key: t.key,
      ...(t.value ? { value: t.value } : {}),
      effect: t.effect,
    }));
  c.registerNode = true;
  c.containerRuntimeEndpoint = n.cri?.endpoint ?? '';
  return c;
}

/** The /configz body: `{"kubeletconfig":{...}}` as Go's json.Marshal writes it (compact, no newline). */
export function configzBody(n: NodeKubeletSettings, api: NodeApiSettings): string {
  return goJSONEscape(JSON.stringify({ [CONFIGZ_NAME]: kubeletConfiguration(n, api) }));
}

/** A list as pflag's string slices print it: `[a,b]`, items quoted as Go's encoding/csv quotes fields. */
export function stringSliceFlag(items: readonly string[]): string {
  const needsQuotes = (s: string): boolean => s === '\\.' || /[",\r\n]/.test(s) || /^\s/u.test(s);
  const csv = items.map((s) => (needsQuotes(s) ? `"${s.replaceAll('"', '""')}"` : s));
  return `[${csv.join(',')}]`;
}

/** The operator's flags with their values as /flagz prints them (lists as pflag's string slices do). */
export function operatorFlagValues(c: Config): Record<string, string> {
  return Object.fromEntries(
    (Object.keys(c) as (keyof Config)[]).map((k) => {
      const v = c[k];
      return [flagName(k), Array.isArray(v) ? stringSliceFlag(v) : String(v)];
    }),
  );
}

/** The kubelet flags a node would have been started with, under the kubelet's names. */
function nodeFlags(n: NodeKubeletSettings, api: NodeApiSettings): Record<string, string> {
  const f: Record<string, string> = {
    'node-ip': n.nodeIP,
    'hostname-override': n.nodeName,
    'cluster-dns': stringSliceFlag(n.clusterDNS),
    'cluster-domain': n.clusterDomain,
    'resolv-conf': n.resolvConf,
    'max-pods': String(n.maxPods),
    'container-runtime-endpoint': n.cri?.endpoint ?? '',
    'sync-frequency': duration(n.syncFrequencyMs),
    'node-status-update-frequency': duration(n.nodeStatusUpdateFrequencyMs),
    'node-labels': Object.entries(n.labels)
      .map(([k, v]) => `${k}=${v}`)
      .sort()
      .join(','),
    'register-with-taints': n.taints.map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`).join(','),
    'register-node': 'true',
    'allowed-unsafe-sysctls': stringSliceFlag(n.allowedUnsafeSysctls),
    'cpu-cfs-quota': 'true',
    'cpu-cfs-quota-period': duration(n.cpuCFSQuotaPeriodMs),
    ...(n.volumeStatsAggPeriodMs !== undefined
      ? { 'volume-stats-agg-period': duration(n.volumeStatsAggPeriodMs) }
      : {}),
    'serialize-image-pulls': 'false',
    'enable-server': 'true',
    'enable-debugging-handlers': 'true',
    address: api.address,
    port: String(api.port),
    'read-only-port': '0',
    'anonymous-auth': 'false',
    'authentication-token-webhook': 'true',
    'authentication-token-webhook-cache-ttl': duration(AUTHN_TTL_MS),
    'authorization-mode': 'Webhook',
    'authorization-webhook-cache-authorized-ttl': duration(AUTHZ_ALLOWED_TTL_MS),
    'authorization-webhook-cache-unauthorized-ttl': duration(AUTHZ_DENIED_TTL_MS),
    'client-ca-file': api.clientCAFile,
  };
  if (n.cri) f['cgroup-root'] = n.cri.cgroupRoot;
  if (api.serving?.mode === 'files') {
    f['tls-cert-file'] = api.serving.certFile;
    f['tls-private-key-file'] = api.serving.keyFile;
  }
  if (api.serving) f['rotate-server-certificates'] = String(api.serving.mode === 'csr');
  if (api.events === 'unlimited') f['event-qps'] = '0';
  else if (api.events) {
    f['event-qps'] = String(api.events.qps);
    f['event-burst'] = String(api.events.burst);
  }
  return f;
}

/** /flagz of a node: the operator's flags, with the node's kubelet flags over them. */
export function kubeletFlags(n: NodeKubeletSettings, api: NodeApiSettings): Record<string, string> {
  return { ...api.operatorFlags, ...nodeFlags(n, api) };
}

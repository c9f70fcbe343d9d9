/**
 * The kubelet's DNS configurer (pkg/kubelet/network/dns/dns.go): the resolv.conf a pod's sandbox gets, as the
 * CRI DNSConfig (servers, searches, options), from the pod's dnsPolicy and dnsConfig, the node's cluster DNS
 * settings and the node's own resolv.conf.
 *
 * Pure: the caller reads and parses the node's resolv.conf (`parseResolvConf`) and records the events returned;
 * nothing here does I/O. Where the kubelet walks a Go map (merged options) the order here is first appearance.
 */
import type { Pod, PodDNSConfig } from '../../api/core.js';
import { formatPod } from '../backoff.js';

/** The CRI DNSConfig: what the runtime writes into the sandbox's resolv.conf. */
export interface DNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

/** Limits from pkg/apis/core/validation (glibc's own limits, expanded since 1.28). */
export const MAX_DNS_NAMESERVERS = 3;
export const MAX_DNS_SEARCH_PATHS = 32;
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;
/** Longer search paths make some resolvers (glibc 2.28) abort, so they are dropped (DNS1123SubdomainMaxLength). */
export const MAX_DNS_SEARCH_PATH_LENGTH = 253;
/** ClusterFirst pods resolve short names through the cluster search path. */
export const DEFAULT_DNS_OPTIONS: readonly string[] = ['ndots:5'];

/** An event for the caller to record: on the pod, or on the node (the kubelet's nodeRef). */
export interface DNSEvent {
  object: 'pod' | 'node';
  type: 'Warning';
  reason: 'MissingClusterDNS' | 'DNSConfigForming' | 'CheckLimitsForResolvConf';
  message: string;
}

// ------------------------------------------------------------------------------------- resolv.conf

export interface ParsedResolvConf extends DNSConfig {
  /** Set when a line was malformed; the kubelet then refuses to build pod DNS from this file. */
  error?: string;
}

/**
 * parseResolvConf: `nameserver` lines accumulate (first address of each line); the last `search` line wins,
 * trailing dots trimmed so `a.` and `a` count once; the last `options` line wins. `#` starts a comment line.
 * Like the kubelet's parser, `domain` lines are ignored (the runtime's resolver would use them, the kubelet
 * does not carry them over). A `nameserver` with no address is an error, worded as upstream (trailing space
 * included); several errors aggregate as `[a, b]`.
 */
export function parseResolvConf(text: string): ParsedResolvConf {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) continue;
    const [keyword, ...rest] = fields;
    if (keyword === 'nameserver') {
      if (rest[0] !== undefined) servers.push(rest[0]);
      else errors.push('nameserver list is empty ');
    } else if (keyword === 'search') {
      searches = rest.map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    } else if (keyword === 'options') {
      options = rest;
    }
  }
  const out: ParsedResolvConf = { servers, searches, options };
  if (errors.length === 1) out.error = errors[0]!;
  else if (errors.length > 1) out.error = `[${errors.join(', ')}]`;
  return out;
}

// ----------------------------------------------------------------------------------------- policy

/** How the pod resolves: through the cluster DNS, like the node, or only as its dnsConfig says. */
export type PodDNSType = 'cluster' | 'host' | 'none';

/**
 * getPodDNSType: ClusterFirst is cluster DNS except on the host network, where it means Default;
 * ClusterFirstWithHostNet is cluster DNS everywhere. An unset policy is the API default, ClusterFirst; an
 * unknown one is treated as cluster DNS, as the kubelet does after logging it.
 */
export function podDNSType(pod: Pick<Pod, 'spec'>): PodDNSType {
  const policy: string = pod.spec.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      return pod.spec.hostNetwork ? 'host' : 'cluster';
    case 'Default':
      return 'host';
    default:
      return 'cluster';
  }
}

/** The node's side of the decision (the kubelet's flags). */
export interface DNSConfigurerOptions {
  /** --cluster-dns; empty = none configured. */
  clusterDNS: readonly string[];
  /** --cluster-domain; '' = no cluster search path. */
  clusterDomain: string;
  /** The parsed --resolv-conf file; absent when the flag is '' (no host resolver configuration). */
  hostResolvConf?: DNSConfig;
  /** The node's IPs, for the loopback nameserver used when there is no --resolv-conf. */
  nodeIPs?: readonly string[];
}

export interface PodDNSResult {
  config: DNSConfig;
  events: DNSEvent[];
}

const MISSING_CLUSTER_DNS =
  'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. ' +
  'Falling back to "Default" policy.';

/** The events for a cluster-DNS pod on a node without --cluster-dns: one on the node, one on the pod. */
export function missingClusterDNSEvents(pod: Pod): DNSEvent[] {
  return [
    { object: 'node', type: 'Warning', reason: 'MissingClusterDNS', message: MISSING_CLUSTER_DNS },
    {
      object: 'pod',
      type: 'Warning',
      reason: 'MissingClusterDNS',
      message: `pod: ${JSON.stringify(formatPod(pod))}. ${MISSING_CLUSTER_DNS}`,
    },
  ];
}

function omitDuplicates(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** `<ns>.svc.<domain>`, `svc.<domain>`, `<domain>`, then the node's searches, each once. */
function clusterFirstSearches(hostSearches: readonly string[], namespace: string, domain: string): string[] {
  if (domain === '') return [...hostSearches];
  return omitDuplicates([`${namespace}.svc.${domain}`, `svc.${domain}`, domain, ...hostSearches]);
}

/** mergeDNSOptions: by name, the pod's dnsConfig options overriding; `name:value` or a bare `name`. */
export function mergeDNSOptions(
  existing: readonly string[],
  podOptions: PodDNSConfig['options'] | undefined,
): string[] {
  const merged = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(':');
    if (i >= 0) merged.set(op.slice(0, i), op.slice(i + 1));
    else merged.set(op, '');
  }
  for (const op of podOptions ?? []) merged.set(op.name, op.value ?? '');
  return [...merged].map(([name, value]) => (value !== '' ? `${name}:${value}` : name));
}

/** appendDNSConfig: the pod's nameservers and searches appended without duplicates, options merged. */
function appendDNSConfig(base: DNSConfig, podConfig: PodDNSConfig): DNSConfig {
  return {
    servers: omitDuplicates([...base.servers, ...(podConfig.nameservers ?? [])]),
    searches: omitDuplicates([...base.searches, ...(podConfig.searches ?? [])]),
    options: mergeDNSOptions(base.options, podConfig.options),
  };
}

function fitNameservers(servers: string[], events: DNSEvent[]): string[] {
  if (servers.length <= MAX_DNS_NAMESERVERS) return servers;
  const kept = servers.slice(0, MAX_DNS_NAMESERVERS);
  events.push({
    object: 'pod',
    type: 'Warning',
    reason: 'DNSConfigForming',
    message:
      'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ' +
      kept.join(' '),
  });
  return kept;
}

/** formDNSSearchFitsLimits: at most 32 paths, none over 253 characters, the line at most 2048 characters. */
function fitSearches(searches: string[], events: DNSEvent[]): string[] {
  let exceeded = false;
  let out = searches;
  if (out.length > MAX_DNS_SEARCH_PATHS) {
    out = out.slice(0, MAX_DNS_SEARCH_PATHS);
    exceeded = true;
  }
  const fitting = out.filter((s) => s.length <= MAX_DNS_SEARCH_PATH_LENGTH);
  if (fitting.length !== out.length) exceeded = true;
  out = fitting;
  const lineLength = out.join(' ').length;
  if (lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
    // Drop whole paths from the end until the line fits.
    let cut = 0;
    let cutLength = 0;
    for (let i = out.length - 1; i >= 0; i--) {
      cutLength += out[i]!.length + 1;
      cut++;
      if (lineLength - cutLength <= MAX_DNS_SEARCH_LIST_CHARS) break;
    }
    out = out.slice(0, out.length - cut);
    exceeded = true;
  }
  if (exceeded) {
    events.push({
      object: 'pod',
      type: 'Warning',
      reason: 'DNSConfigForming',
      message:
        'Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ' +
        out.join(' '),
    });
  }
  return out;
}

/** Loopback nameservers when the node has no --resolv-conf: "use the nameserver on the local machine". */
function loopbackServers(nodeIPs: readonly string[]): string[] {
  const servers = nodeIPs.map((ip) => (ip.includes(':') ? '::1' : '127.0.0.1'));
  return servers.length > 0 ? servers : ['127.0.0.1'];
}

/**
 * GetPodDNS: the sandbox's DNS settings for `pod`, and the Warning events the kubelet would record.
 * - none: empty settings, then the pod's dnsConfig.
 * - cluster: the cluster DNS servers, the cluster search path before the node's searches, `ndots:5`. Without
 *   --cluster-dns the pod falls back to host, with a MissingClusterDNS event on the node and on the pod.
 * - host: the node's resolv.conf as it is; without --resolv-conf, a loopback nameserver per node IP (at least
 *   127.0.0.1) and the search path `.`.
 * The pod's dnsConfig is then appended, and the result cut to the resolver limits (DNSConfigForming events).
 */
export function getPodDNS(pod: Pod, opts: DNSConfigurerOptions): PodDNSResult {
  const events: DNSEvent[] = [];
  const host = opts.hostResolvConf;
  let config: DNSConfig = {
    servers: [...(host?.servers ?? [])],
    searches: [...(host?.searches ?? [])],
    options: [...(host?.options ?? [])],
  };
  let type = podDNSType(pod);
  if (type === 'none') {
    config = { servers: [], searches: [], options: [] };
  } else if (type === 'cluster') {
    if (opts.clusterDNS.length > 0) {
      config = {
        servers: [...opts.clusterDNS],
        searches: clusterFirstSearches(config.searches, pod.metadata.namespace ?? '', opts.clusterDomain),
        options: [...DEFAULT_DNS_OPTIONS],
      };
    } else {
      events.push(...missingClusterDNSEvents(pod));
      type = 'host';
    }
  }
  if (type === 'host' && host === undefined) {
    config.servers.push(...loopbackServers(opts.nodeIPs ?? []));
    config.searches = ['.'];
  }
  if (pod.spec.dnsConfig) config = appendDNSConfig(config, pod.spec.dnsConfig);
  config.servers = fitNameservers(config.servers, events);
  config.searches = fitSearches(config.searches, events);
  return { config, events };
}

/**
 * CheckLimitsForResolvConf: the node-level warning the kubelet records at start when the node's resolv.conf
 * would push ClusterFirst pods over the search limits (three paths are reserved for the cluster's when a
 * cluster domain is set). Undefined when the file is fine. `path` is the --resolv-conf path, for the message.
 */
export function checkLimitsForResolvConf(
  path: string,
  conf: ParsedResolvConf,
  clusterDomain: string,
): DNSEvent | undefined {
  const warn = (message: string): DNSEvent => ({
    object: 'node',
    type: 'Warning',
    reason: 'CheckLimitsForResolvConf',
    message,
  });
  if (conf.error !== undefined) return warn(conf.error);
  const domainCountLimit = MAX_DNS_SEARCH_PATHS - (clusterDomain !== '' ? 3 : 0);
  if (conf.searches.length > domainCountLimit) {
    return warn(
      `Resolv.conf file '${path}' contains search line consisting of more than ${domainCountLimit} domains!`,
    );
  }
  if (conf.searches.some((s) => s.length > MAX_DNS_SEARCH_PATH_LENGTH)) {
    return warn(
      `Resolv.conf file ${JSON.stringify(path)} contains a search path which length is more than allowed ` +
        `${MAX_DNS_SEARCH_PATH_LENGTH} chars!`,
    );
  }
  if (conf.searches.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS) {
    return warn(
      `Resolv.conf file '${path}' contains search line which length is more than allowed ` +
        `${MAX_DNS_SEARCH_LIST_CHARS} chars!`,
    );
  }
  return undefined;
}

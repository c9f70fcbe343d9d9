/**
 * Pod and host IPs for the API status (kubelet: sortPodIPs and the host-IP block of generateAPIPodStatus).
 */
import type { PodIP, PodStatus } from '../../api/core.js';

type Family = 4 | 6;

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** The IP family of an address, or undefined when it is not an IP. IPv6 is recognised loosely. */
export function ipFamily(ip: string): Family | undefined {
  if (IPV4.test(ip)) return 4;
  if (ip.includes(':') && /^[0-9a-fA-F:.]+$/.test(ip)) return 6;
  return undefined;
}

/**
 * At most two pod IPs: the first one of the node's primary family (IPv4 when the node has no IP), then the
 * first one of the other family. The runtime may report any number in any order; the API wants this one.
 */
export function sortPodIPs(
  podIPs: readonly string[] | undefined | null,
  nodeIPs: readonly string[] = [],
): string[] {
  const ips = (Array.isArray(podIPs) ? podIPs : [])
    .filter((ip): ip is string => typeof ip === 'string')
    .map((s) => s.trim());
  const primary: Family = nodeIPs[0] !== undefined && ipFamily(nodeIPs[0]) === 6 ? 6 : 4;
  const secondary: Family = primary === 4 ? 6 : 4;
  const out: string[] = [];
  const first = ips.find((ip) => ipFamily(ip) === primary);
  if (first !== undefined) out.push(first);
  const second = ips.find((ip) => ipFamily(ip) === secondary);
  if (second !== undefined) out.push(second);
  return out;
}

/**
 * Sets hostIP/hostIPs from the node's IPs (first two), and for host-network pods the pod IPs too: they
 * inherit the node IPs, are never replaced once set, but gain the node's secondary IP when the node
 * becomes dual-stack. Without node IPs nothing changes. Mutates `status`.
 */
export function applyHostIPs(status: PodStatus, nodeIPs: readonly string[], hostNetwork: boolean): void {
  const [first, second] = nodeIPs;
  if (first === undefined) return;
  status.hostIP = first;
  status.hostIPs = [{ ip: first }];
  if (second !== undefined) status.hostIPs.push({ ip: second });
  if (!hostNetwork) return;
  if (!status.podIP) {
    status.podIP = first;
    status.podIPs = [{ ip: first }];
  }
  const podIPs: PodIP[] = status.podIPs ?? [];
  if (second !== undefined && podIPs.length === 1 && ipFamily(podIPs[0]?.ip ?? '') !== ipFamily(second)) {
    status.podIPs = [...podIPs, { ip: second }];
  }
}

/**
 * Which sysctls a pod may set (kubelet: pkg/kubelet/sysctl safe_sysctls.go and allowlist.go, with the
 * namespace table of component-helpers/node/util/sysctl, v1.37). A sysctl is allowed when it is on the safe
 * list (namespaced and isolated, gated by the kernel version that namespaced it) or on the node's
 * `allowedUnsafeSysctls` (names or `prefix*` patterns, each known to be namespaced); a net sysctl is still
 * refused for a host-network pod and an IPC sysctl for a host-IPC pod, since it would change the node's.
 *
 * Pure: the allowlist is data built once per node; the verdicts are strings in the kubelet's words.
 */
import { KindError } from '../../util/errors.js';

/** The kubelet's admission reason for a pod with a sysctl it may not set. */
export const SysctlForbiddenReason = 'SysctlForbidden';

type Namespace = 'IPC' | 'Net';

/** Safe sysctls, with the kernel version that namespaced them (pkg/util/kernel constants) when it matters. */
const safeSysctls: readonly { name: string; kernel?: string }[] = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: '3.16' },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: '4.5' },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: '4.6' },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: '4.5' },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: '4.5' },
  { name: 'net.ipv4.tcp_rmem' },
  { name: 'net.ipv4.tcp_wmem' },
];

/** Sysctls known to be namespaced by name, then by prefix (`<prefix>.`). */
const nameToNamespace: ReadonlyMap<string, Namespace> = new Map([
  ['kernel.sem', 'IPC'],
  ['kernel.shmall', 'IPC'],
  ['kernel.shmmax', 'IPC'],
  ['kernel.shmmni', 'IPC'],
  ['kernel.shm_rmid_forced', 'IPC'],
  ['kernel.shm', 'IPC'],
  ['kernel.msgmax', 'IPC'],
  ['kernel.msgmnb', 'IPC'],
  ['kernel.msgmni', 'IPC'],
  ['kernel.msg', 'IPC'],
]);
const prefixToNamespace: ReadonlyMap<string, Namespace> = new Map([
  ['net', 'Net'],
  ['fs.mqueue', 'IPC'],
]);

/** apis/core validation SysctlMaxLength. */
const SysctlMaxLength = 253;
const segment = '[a-z0-9]([-_a-z0-9]*[a-z0-9])?';
/** policy validation SysctlContainSlashPatternFmt: dot or slash separated segments, the last may be `*`. */
const SysctlContainSlashPatternFmt = `(${segment}[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`;
const patternRegexp = new RegExp(`^${SysctlContainSlashPatternFmt}$`);

/**
 * A sysctl name in dot form (sysctl.d(5)): when the first separator is a slash, slashes and dots swap, so
 * `net/ipv4/conf/eno2.100/rp_filter` is `net.ipv4.conf.eno2/100.rp_filter`.
 */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

function namespaceOf(name: string): Namespace | undefined {
  const exact = nameToNamespace.get(name);
  if (exact) return exact;
  for (const [prefix, ns] of prefixToNamespace) if (name.startsWith(`${prefix}.`)) return ns;
  return undefined;
}

/** Go's %q of a plain string. */
const quote = (s: string): string => JSON.stringify(s);

/** Whether `a` (dotted numbers, e.g. `6.1.0-18-amd64`) is at least `b`, comparing the leading numbers. */
function kernelAtLeast(a: string, b: string): boolean {
  const nums = (v: string) => (/^\d+(\.\d+)*/.exec(v)?.[0] ?? '').split('.').map(Number);
  const x = nums(a);
  const y = nums(b);
  if (x.length === 0 || Number.isNaN(x[0])) return false;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}

/**
 * The safe sysctls on a node with this kernel (kubelet: SafeSysctlAllowlist). A sysctl namespaced only in a
 * later kernel is left out, as is every version-gated one when the version is unknown or unreadable.
 */
export function safeSysctlAllowlist(kernelVersion: string | undefined): string[] {
  return safeSysctls
    .filter(
      (s) =>
        s.kernel === undefined || (kernelVersion !== undefined && kernelAtLeast(kernelVersion, s.kernel)),
    )
    .map((s) => s.name);
}

/**
 * Names and `prefix*` patterns a node allows (kubelet: patternAllowlist), each mapped to the namespace that
 * makes it safe to set per pod.
 */
export class SysctlAllowlist {
  private readonly sysctls = new Map<string, Namespace>();
  private readonly prefixes = new Map<string, Namespace>();

  /**
   * Throws KindError('InvalidArgument') with the kubelet's words for a pattern that is not a sysctl pattern or
   * not known to be namespaced (kubelet: NewAllowlist, which fails the kubelet's start).
   */
  constructor(patterns: readonly string[]) {
    for (const p of patterns) {
      if (typeof p !== 'string' || p.length > SysctlMaxLength || !patternRegexp.test(p)) {
        throw new KindError(
          'InvalidArgument',
          `sysctl ${quote(String(p))} must have at most ${SysctlMaxLength} characters and match regex ${SysctlContainSlashPatternFmt}`,
        );
      }
      let name = normalizeSysctlName(p);
      const star = name.indexOf('*');
      if (star !== -1) name = name.slice(0, star);
      const ns = namespaceOf(name);
      if (!ns)
        throw new KindError('InvalidArgument', `the sysctls ${quote(name)} are not known to be namespaced`);
      (star !== -1 ? this.prefixes : this.sysctls).set(name, ns);
    }
  }

  /**
   * Why `sysctl` may not be set by a pod with these host namespaces (kubelet: validateSysctl), or undefined
   * when it may.
   */
  validate(sysctl: string, hostNetwork: boolean, hostIPC: boolean): string | undefined {
    const name = normalizeSysctlName(sysctl);
    const hostNamespace = (ns: Namespace): string | undefined =>
      (ns === 'IPC' && hostIPC) || (ns === 'Net' && hostNetwork)
        ? `${quote(name)} not allowed with host ${ns} enabled`
        : undefined;
    const exact = this.sysctls.get(name);
    if (exact) return hostNamespace(exact);
    for (const [prefix, ns] of this.prefixes) if (name.startsWith(prefix)) return hostNamespace(ns);
    return `${quote(name)} not allowlisted`;
  }
}

/**
 * The admission verdict on a pod's sysctls (kubelet: patternAllowlist.Admit): the first one refused gives
 * reason SysctlForbidden and `forbidden sysctl: <why>`.
 */
export function admitSysctls(
  allowlist: SysctlAllowlist,
  spec: {
    hostNetwork?: boolean;
    hostIPC?: boolean;
    securityContext?: { sysctls?: readonly { name: string }[] };
  },
): { admit: true } | { admit: false; reason: string; message: string } {
  for (const s of spec.securityContext?.sysctls ?? []) {
    const why = allowlist.validate(s.name, spec.hostNetwork === true, spec.hostIPC === true);
    if (why !== undefined) {
      return { admit: false, reason: SysctlForbiddenReason, message: `forbidden sysctl: ${why}` };
    }
  }
  return { admit: true };
}

/**
 * Odd VirtualNodes: a few dozen specs that pass the CRD and are each wrong or odd in one way (pod CIDRs the
 * simulated runtime cannot use or that another node has, broken behaviour profiles, CRI endpoints that are not
 * sockets, a nodeName already served, impossible directories, extreme capacities and heartbeats, ...).
 */
import type { Rng } from './rng.js';

export interface OddVirtualNode {
  name: string;
  what: string;
  spec: Record<string, unknown>;
  /**
   * Posted only once the others have their Ready condition: it takes every block the operator defaults pod
   * CIDRs from, so posted with them it would decide how they all end.
   */
  last?: true;
}

/**
 * A few dozen VirtualNode specs that pass the CRD (or nearly) and are each wrong or odd in one way. `taken`
 * names a node already served and `takenCIDR` its pod CIDR, for the ones that try to claim them.
 */
export function oddVirtualNodes(rng: Rng, taken: string, takenCIDR: string): OddVirtualNode[] {
  const sim = (sim: Record<string, unknown> = {}): Record<string, unknown> => ({ type: 'sim', sim });
  const cases: [string, Record<string, unknown>][] = [
    ['podCIDR /32', { runtime: sim({ podCIDR: '10.200.0.1/32' }) }],
    ['podCIDR /31', { runtime: sim({ podCIDR: '10.200.1.0/31' }) }],
    ['podCIDR IPv6', { runtime: sim({ podCIDR: 'fd00:1::/120' }) }],
    ['podCIDR of a served node', { runtime: sim({ podCIDR: takenCIDR }) }],
    [
      'profile: image key not a reference',
      { runtime: sim({ profile: { images: { 'NOT A REF!': { startLatencyMs: 1 } } } }) },
    ],
    ['profile: unknown field', { runtime: sim({ profile: { defaults: { bogus: 1 } } }) }],
    ['profile: negative latency', { runtime: sim({ profile: { defaults: { startLatencyMs: -5 } } }) }],
    ['profile: deep nesting', { runtime: sim({ profile: { defaults: nest(300) } }) }],
    [
      'profile: 3000 images',
      {
        runtime: sim({
          profile: {
            images: Object.fromEntries(
              Array.from({ length: 3000 }, (_, i) => [`registry.example/img${i}`, { startLatencyMs: i }]),
            ),
          },
        }),
      },
    ],
    [
      'profile: bad regexp',
      { runtime: sim({ profile: { defaults: { exec: [{ pattern: '([a-z', exitCode: 1 }] } } }) },
    ],
    [
      'profile: huge latency',
      { runtime: sim({ profile: { defaults: { startLatencyMs: 2147483647, pullLatencyMs: 2147483647 } } }) },
    ],
    [
      'capacity zero',
      { runtime: sim(), capacity: { cpu: '0', memory: 0, 'ephemeral-storage': '0', pods: 0 } },
    ],
    [
      'capacity huge',
      { runtime: sim(), capacity: { cpu: '8Ei', memory: '8Ei', 'ephemeral-storage': '8Ei', pods: 100000 } },
    ],
    [
      'capacity odd forms',
      { runtime: sim(), capacity: { cpu: '1e3', memory: '+.5Gi', 'ephemeral-storage': '0.000001' } },
    ],
    [
      'cri endpoint missing',
      { runtime: { type: 'cri', cri: { endpoint: `unix:///nonexistent/${rng.text(6)}.sock` } } },
    ],
    ['cri endpoint a regular file', { runtime: { type: 'cri', cri: { endpoint: 'unix:///etc/hostname' } } }],
    ['cri endpoint a directory', { runtime: { type: 'cri', cri: { endpoint: 'unix:///tmp' } } }],
    ['cri endpoint /dev/null', { runtime: { type: 'cri', cri: { endpoint: 'unix:///dev/null' } } }],
    ['nodeName of a served node', { runtime: sim(), nodeName: taken }],
    ['podsDir not creatable', { runtime: sim(), kubelet: { podsDir: '/dev/null/pods' } }],
    ['podsDir in /proc', { runtime: sim(), kubelet: { podsDir: '/proc/1/chaos-pods' } }],
    ['resolvConf missing', { runtime: sim(), kubelet: { resolvConf: '/nonexistent/resolv.conf' } }],
    ['clusterDNS IPv6 x3', { runtime: sim(), kubelet: { clusterDNS: ['::1', 'fd00::10', 'fe80::1'] } }],
    ['unsafe sysctls *', { runtime: sim(), kubelet: { allowedUnsafeSysctls: ['*', 'net.*', 'kernel.*'] } }],
    ['internalIP ::1', { runtime: sim(), internalIP: '::1' }],
    ['internalIP 0.0.0.0', { runtime: sim(), internalIP: '0.0.0.0' }],
    [
      'heartbeat extremes',
      {
        runtime: sim(),
        heartbeat: {
          leaseDurationSeconds: 3600,
          renewIntervalSeconds: 599,
          statusUpdateFrequencySeconds: 600,
          statusReportFrequencySeconds: 10,
        },
      },
    ],
    [
      'heartbeat fast',
      {
        runtime: sim(),
        heartbeat: { leaseDurationSeconds: 10, renewIntervalSeconds: 1, statusUpdateFrequencySeconds: 1 },
      },
    ],
    [
      '32 NoExecute taints',
      {
        runtime: sim(),
        taints: Array.from({ length: 32 }, (_, i) => ({
          key: `chaos.example/t${i}`,
          value: rng.text(10),
          effect: 'NoExecute',
        })),
      },
    ],
    [
      '64 labels, reserved ones',
      {
        runtime: sim(),
        labels: {
          'kubernetes.io/hostname': 'someone-else',
          'node-role.kubernetes.io/control-plane': '',
          ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`chaos.example/l${i}`, rng.text(63)])),
        },
      },
    ],
    ['unknown fields (pruned)', { runtime: sim(), bogus: { deep: [1, 2, 3] } }],
    ['name 253 characters', { runtime: sim() }],
    // Last: it covers every block the operator defaults pod CIDRs from.
    ['podCIDR 0.0.0.0/0', { runtime: sim({ podCIDR: '0.0.0.0/0' }) }],
  ];
  return cases.map(([what, spec], i) => ({
    ...(what === 'podCIDR 0.0.0.0/0' ? { last: true as const } : {}),
    name:
      what === 'name 253 characters'
        ? `vn-odd-${i}-${'x'.repeat(253 - `vn-odd-${i}-`.length)}`
        : `vn-odd-${i}`,
    what,
    spec,
  }));
}

function nest(depth: number): Record<string, unknown> {
  let o: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < depth; i++) o = { n: o };
  return o;
}

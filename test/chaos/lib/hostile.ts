/**
 * Hostile pods: specs that the API server accepts but that are odd in every way a user can make them odd,
 * from a seeded generator, so a failing run is reproduced by its seed (CHAOS_SEED=<n>).
 *
 * A pod starts as a busybox sleeper bound to a node and gets one to four mutations from the catalogue below;
 * its `mutations` name them, so a pod the operator mishandles points at what did it.
 */
import { SimBehaviourAnnotation } from '../../../src/runtime/sim/profile.js';
import type { Rng } from './rng.js';

type Json = Record<string, unknown>;

/** A pod as plain JSON: hostile input may use any field the API has, typed or not in src/api. */
export interface HostilePod {
  metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
  spec: Json & { containers: Json[] };
}

interface Mutation {
  name: string;
  apply(rng: Rng, pod: HostilePod): void;
}

const main = (pod: HostilePod): Json => pod.spec.containers[0]!;
const label = (rng: Rng, n: number): string =>
  `${rng.text(1, 'abcdefghijklmnopqrstuvwxyz')}${rng.text(n - 1)}`;
const anyPort = (rng: Rng): number => rng.pick([1, 22, 80, 8080, 65535, rng.int(1, 65535)]);

function probe(rng: Rng, kind: 'liveness' | 'readiness' | 'startup'): Record<string, unknown> {
  const handler = rng.pick([
    () => ({
      exec: {
        command: rng.pick([['false'], ['sh', '-c', `exit ${rng.int(0, 255)}`], ['true'], [rng.unicode(20)]]),
      },
    }),
    () => ({
      httpGet: {
        port: anyPort(rng),
        path: `/${rng.text(rng.int(0, 200), 'ab/%?=&.~-')}`,
        scheme: rng.pick(['HTTP', 'HTTPS']),
        httpHeaders: Array.from({ length: rng.int(0, 20) }, () => ({
          name: `X-${label(rng, 8)}`,
          value: rng.unicode(30),
        })),
      },
    }),
    () => ({ tcpSocket: { port: anyPort(rng) } }),
    () => ({ grpc: { port: anyPort(rng), service: rng.unicode(10) } }),
  ])();
  return {
    ...handler,
    initialDelaySeconds: rng.pick([0, 1, 3600, 2147483647]),
    periodSeconds: rng.pick([1, 2, 3600, 2147483647]),
    timeoutSeconds: rng.pick([1, 30, 2147483647]),
    failureThreshold: rng.pick([1, 3, 1000000]),
    ...(kind === 'readiness' ? { successThreshold: rng.pick([1, 5, 1000]) } : {}),
    ...(kind !== 'readiness' && rng.chance(0.5) ? { terminationGracePeriodSeconds: rng.pick([1, 1e9]) } : {}),
  };
}

/** Every way a pod gets odd; each keeps the pod valid for the API server (or nearly: rejects are counted). */
const MUTATIONS: Mutation[] = [
  {
    name: 'huge-env',
    apply: (rng, pod) => {
      main(pod).env = Array.from({ length: rng.int(100, 800) }, (_, i) => ({
        name: `V${i}_${rng.text(rng.int(1, 40), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789')}`,
        value: rng.chance(0.3) ? rng.unicode(rng.int(0, 400)) : rng.text(rng.int(0, 400)),
      }));
    },
  },
  {
    name: 'env-refs',
    apply: (rng, pod) => {
      const refs = [
        () => ({ configMapKeyRef: { name: `missing-${rng.text(5)}`, key: 'k', optional: rng.chance(0.5) } }),
        () => ({ secretKeyRef: { name: `missing-${rng.text(5)}`, key: 'k', optional: rng.chance(0.5) } }),
        () => ({ fieldRef: { fieldPath: `metadata.annotations['${label(rng, 10)}']` } }),
        () => ({
          fieldRef: {
            fieldPath: rng.pick(['status.podIP', 'status.hostIPs', 'spec.nodeName', 'metadata.uid']),
          },
        }),
        () => ({
          resourceFieldRef: {
            resource: rng.pick(['limits.memory', 'requests.cpu', 'limits.ephemeral-storage']),
            divisor: rng.pick(['1', '1m', '1Mi', '1Ei']),
          },
        }),
      ];
      main(pod).env = Array.from({ length: rng.int(1, 30) }, (_, i) => ({
        name: `R${i}`,
        valueFrom: rng.pick(refs)(),
      }));
      if (rng.chance(0.5))
        main(pod).envFrom = [
          {
            prefix: rng.text(5),
            configMapRef: { name: `missing-${rng.text(5)}`, optional: rng.chance(0.5) },
          },
          { secretRef: { name: `missing-${rng.text(5)}`, optional: true } },
        ];
    },
  },
  {
    name: 'odd-probes',
    apply: (rng, pod) => {
      const c = main(pod);
      if (rng.chance(0.7)) c.readinessProbe = probe(rng, 'readiness');
      if (rng.chance(0.5)) c.livenessProbe = probe(rng, 'liveness');
      if (rng.chance(0.4)) c.startupProbe = probe(rng, 'startup');
    },
  },
  {
    name: 'bad-image',
    apply: (rng, pod) => {
      const c = main(pod);
      c.image = rng.pick([
        `registry.invalid/${rng.text(8)}:${rng.text(3)}`,
        `busybox@sha256:${rng.text(64, '0123456789abcdef')}`,
        `Upper/Case:${rng.text(3)}`,
        `${rng.text(200)}`,
        `localhost:1/${rng.text(10)}`,
        `registry.invalid:65535/${'a/'.repeat(30)}x`,
      ]);
      c.imagePullPolicy = rng.pick(['Always', 'IfNotPresent', 'Never']);
    },
  },
  {
    name: 'absurd-timing',
    apply: (rng, pod) => {
      pod.spec.terminationGracePeriodSeconds = rng.pick([0, 1, 2147483647, 1e12]);
      if (rng.chance(0.5)) pod.spec.activeDeadlineSeconds = rng.pick([1, 2, 1e12]);
    },
  },
  {
    name: 'unicode-metadata',
    apply: (rng, pod) => {
      pod.metadata.annotations = {
        ...pod.metadata.annotations,
        ...Object.fromEntries(
          Array.from({ length: rng.int(1, 50) }, () => [
            `${label(rng, 5)}.example/${label(rng, 20)}`,
            rng.unicode(rng.int(0, 2000)),
          ]),
        ),
      };
      pod.metadata.labels = {
        ...pod.metadata.labels,
        ...Object.fromEntries(
          Array.from({ length: rng.int(1, 60) }, () => [
            `${label(rng, 8)}.io/${label(rng, rng.int(1, 63))}`,
            rng.chance(0.3) ? '' : `${label(rng, 1)}${rng.text(rng.int(0, 61), 'abcXYZ09-_.')}z`,
          ]),
        ),
      };
    },
  },
  {
    name: 'deep-volumes',
    apply: (rng, pod) => {
      const n = rng.int(20, 150);
      const volumes: Json[] = [];
      for (let i = 0; i < n; i++) {
        const name = `v${i}`;
        volumes.push(
          rng.pick([
            () => ({
              name,
              emptyDir: rng.chance(0.5)
                ? {}
                : { medium: 'Memory', sizeLimit: rng.pick(['1', '1Ei', '64Mi']) },
            }),
            () => ({ name, configMap: { name: `missing-${rng.text(4)}`, optional: rng.chance(0.5) } }),
            () => ({ name, secret: { secretName: `missing-${rng.text(4)}`, optional: rng.chance(0.7) } }),
            () => ({
              name,
              downwardAPI: {
                items: Array.from({ length: rng.int(1, 20) }, (_, j) => ({
                  path: `${'d/'.repeat(rng.int(0, 20))}f${j}`,
                  fieldRef: {
                    fieldPath: rng.pick(['metadata.labels', 'metadata.annotations', 'metadata.name']),
                  },
                })),
              },
            }),
            () => ({
              name,
              projected: {
                sources: Array.from({ length: rng.int(1, 10) }, (_, j) =>
                  rng.chance(0.5)
                    ? { downwardAPI: { items: [{ path: `p${j}`, fieldRef: { fieldPath: 'metadata.uid' } }] } }
                    : {
                        configMap: {
                          name: `missing-${rng.text(4)}`,
                          optional: true,
                          items: [{ key: 'k', path: `c${j}` }],
                        },
                      },
                ),
              },
            }),
          ])(),
        );
      }
      pod.spec.volumes = volumes;
      main(pod).volumeMounts = volumes.map((v, i) => ({
        name: v.name as string,
        mountPath: `/m/${'x/'.repeat(rng.int(0, 30))}${i}`,
        readOnly: rng.chance(0.5),
        ...(rng.chance(0.2) ? { subPath: `${rng.text(3)}/${rng.text(5, 'abc-_.漢字🦄ｆ')}` } : {}),
      }));
    },
  },
  {
    name: 'init-and-sidecars',
    apply: (rng, pod) => {
      pod.spec.restartPolicy = rng.pick(['Always', 'OnFailure', 'Never']);
      pod.spec.initContainers = Array.from({ length: rng.int(1, 6) }, (_, i) => ({
        name: `init-${i}`,
        image: 'busybox',
        command: rng.pick([
          ['true'],
          ['false'],
          ['sh', '-c', `exit ${rng.int(0, 3)}`],
          ['sleep', String(rng.int(0, 3))],
          ['sleep', '3600'],
        ]),
        ...(rng.chance(0.4) ? { restartPolicy: 'Always' } : {}),
      }));
    },
  },
  {
    name: 'many-containers',
    apply: (rng, pod) => {
      const n = rng.int(2, 40);
      pod.spec.containers = Array.from({ length: n }, (_, i) => ({
        name: `c${i}-${rng.text(4)}`,
        image: 'busybox',
        command: rng.pick([
          ['sleep', '3600'],
          ['sh', '-c', `exit ${rng.int(0, 255)}`],
          ['true'],
          [rng.unicode(10)],
        ]),
        ports: Array.from({ length: rng.int(0, 5) }, (_, j) => ({
          containerPort: rng.int(1, 65535),
          protocol: rng.pick(['TCP', 'UDP', 'SCTP']),
          name: `p${i}x${j}`,
        })),
      }));
    },
  },
  {
    name: 'resources',
    apply: (rng, pod) => {
      const q = rng.pick<Record<string, string>>([
        { cpu: '100000', memory: '1Ei' },
        { cpu: '1m', memory: '1' },
        { cpu: '0', memory: '0' },
        { cpu: '3', memory: '4Gi', 'ephemeral-storage': '1Pi' },
        { cpu: '999999999', memory: '999999999999999' },
      ]);
      main(pod).resources = { requests: q, limits: q };
    },
  },
  {
    name: 'security-context',
    apply: (rng, pod) => {
      pod.spec.securityContext = {
        runAsUser: rng.pick([0, 65534, 2147483647]),
        runAsGroup: rng.pick([0, 2147483647]),
        fsGroup: rng.pick([1, 2147483647]),
        supplementalGroups: Array.from({ length: rng.int(0, 64) }, () => rng.int(0, 2147483647)),
        ...(rng.chance(0.5)
          ? {
              sysctls: [
                {
                  name: rng.pick([
                    'kernel.msgmax',
                    'kernel.shm_rmid_forced',
                    'net.ipv4.ip_forward',
                    'vm.swappiness',
                  ]),
                  value: String(rng.int(0, 100000)),
                },
              ],
            }
          : {}),
        seccompProfile: rng.pick([
          { type: 'Unconfined' },
          { type: 'RuntimeDefault' },
          { type: 'Localhost', localhostProfile: `missing/${rng.text(5)}.json` },
        ]),
      };
      main(pod).securityContext = {
        privileged: rng.chance(0.3),
        readOnlyRootFilesystem: rng.chance(0.5),
        capabilities: { add: ['SYS_ADMIN', 'NET_ADMIN', `${rng.text(6).toUpperCase()}`], drop: ['ALL'] },
        ...(rng.chance(0.3)
          ? { appArmorProfile: { type: 'Localhost', localhostProfile: `missing-${rng.text(4)}` } }
          : {}),
      };
    },
  },
  {
    name: 'dns-and-hosts',
    apply: (rng, pod) => {
      pod.spec.dnsPolicy = rng.pick(['None', 'Default', 'ClusterFirst', 'ClusterFirstWithHostNet']);
      pod.spec.dnsConfig = {
        nameservers: ['1.2.3.4', '::1', '255.255.255.255'].slice(
          0,
          pod.spec.dnsPolicy === 'None' ? 3 : rng.int(0, 3),
        ),
        searches: Array.from({ length: rng.int(0, 32) }, () => `${label(rng, 10)}.example`),
        options: Array.from({ length: rng.int(0, 20) }, () => ({ name: label(rng, 8), value: rng.text(4) })),
      };
      pod.spec.hostAliases = Array.from({ length: rng.int(0, 200) }, (_, i) => ({
        ip: rng.pick(['127.0.0.1', '::1', `10.${i % 256}.0.1`]),
        hostnames: Array.from({ length: rng.int(1, 5) }, () => `${label(rng, 12)}.local`),
      }));
      pod.spec.hostname = label(rng, rng.int(1, 63));
      pod.spec.subdomain = label(rng, rng.int(1, 63));
      pod.spec.setHostnameAsFQDN = rng.chance(0.5);
    },
  },
  {
    name: 'scheduling-mismatch',
    apply: (rng, pod) => {
      pod.spec.nodeSelector = { [`${label(rng, 5)}.io/${label(rng, 5)}`]: label(rng, 5) };
      pod.spec.tolerations = Array.from({ length: rng.int(0, 30) }, () => ({
        key: label(rng, 6),
        operator: 'Exists',
        effect: rng.pick(['NoSchedule', 'NoExecute']),
      }));
    },
  },
  {
    name: 'lifecycle-hooks',
    apply: (rng, pod) => {
      main(pod).lifecycle = {
        postStart: rng.pick([
          { exec: { command: ['false'] } },
          { httpGet: { port: anyPort(rng), path: '/nope' } },
          { exec: { command: ['sh', '-c', 'exit 7'] } },
        ]),
        preStop: rng.pick([
          { exec: { command: ['sleep', '3600'] } },
          { httpGet: { port: anyPort(rng) } },
          { sleep: { seconds: rng.pick([0, 1, 5]) } },
        ]),
      };
    },
  },
  {
    name: 'odd-command',
    apply: (rng, pod) => {
      const c = main(pod);
      c.command = rng.pick([
        () => Array.from({ length: rng.int(100, 2000) }, () => rng.text(rng.int(0, 20))),
        () => [
          'sh',
          '-c',
          Array.from({ length: rng.int(100, 3000) }, () =>
            rng.pick(['true', 'echo x', 'sleep 0', 'exit 0', ':']),
          ).join('; '),
        ],
        () => ['sh', '-c', `${'('.repeat(rng.int(1, 500))}true${')'.repeat(rng.int(0, 500))}`],
        () => ['sleep', rng.pick(['-1', '1e99', 'NaN', 'infinity', '99999999999999999999d'])],
        () => ['sh', '-c', rng.unicode(rng.int(1, 3000))],
        () => [rng.text(rng.int(1000, 20000))],
      ])();
      if (rng.chance(0.3)) c.args = [rng.unicode(rng.int(0, 5000))];
      c.workingDir = rng.pick(['/', '/nonexistent/deep/dir', `/${rng.text(100)}`]);
      c.terminationMessagePath = rng.pick(['/dev/termination-log', `/tmp/${rng.text(20)}`, '/proc/self/mem']);
      c.terminationMessagePolicy = rng.pick(['File', 'FallbackToLogsOnError']);
      c.stdin = rng.chance(0.3);
      c.tty = rng.chance(0.3);
    },
  },
  {
    name: 'restart-policy-exit',
    apply: (rng, pod) => {
      pod.spec.restartPolicy = rng.pick(['Always', 'OnFailure', 'Never']);
      main(pod).command = ['sh', '-c', `sleep ${rng.int(0, 2)}; exit ${rng.int(0, 255)}`];
    },
  },
  {
    name: 'host-namespaces',
    apply: (rng, pod) => {
      pod.spec.hostNetwork = rng.chance(0.5);
      pod.spec.hostPID = rng.chance(0.5);
      pod.spec.hostIPC = rng.chance(0.5);
      pod.spec.shareProcessNamespace = pod.spec.hostPID !== true && rng.chance(0.5);
      pod.spec.enableServiceLinks = rng.chance(0.5);
      pod.spec.hostUsers = rng.chance(0.8);
    },
  },
  {
    name: 'readiness-gates',
    apply: (rng, pod) => {
      pod.spec.readinessGates = Array.from({ length: rng.int(1, 10) }, () => ({
        conditionType: `${label(rng, 5)}.example/${label(rng, 10)}`,
      }));
    },
  },
  {
    name: 'foreign-os',
    apply: (rng, pod) => {
      pod.spec.os = { name: rng.pick(['windows', 'linux']) };
    },
  },
  {
    name: 'sim-behaviour',
    apply: (rng, pod) => {
      const value = rng.pick([
        () => ': : not yaml : [',
        () =>
          'a: &a [1,2,3]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
        () => JSON.stringify({ run: { exitAfterMs: rng.int(0, 3000), exitCode: rng.int(0, 255) } }),
        () => JSON.stringify({ pullError: rng.unicode(200) }),
        () => JSON.stringify({ startLatencyMs: rng.pick([1, 10_000_000]), bogus: true }),
        () => JSON.stringify({ run: { exitAfterMs: -1 } }),
        () =>
          JSON.stringify({
            usage: {
              cpu: { expr: `${'('.repeat(200)}t${')'.repeat(200)}` },
              memory: { expr: 'min(64Mi + t * 100Mi, 1Ei)' },
            },
          }),
        () => JSON.stringify({ usage: { memory: { ramp: { from: '1', to: '1Ei', durationSeconds: 1 } } } }),
        () =>
          JSON.stringify({
            logs: Array.from({ length: 500 }, (_, i) => ({ line: rng.unicode(100), afterMs: i })),
          }),
        () =>
          JSON.stringify({
            exec: [{ argv: ['x'], delayMs: 2147483647 }],
            ports: { '8080': { fails: true } },
          }),
        () => `{"run": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      ])();
      pod.metadata.annotations = { ...pod.metadata.annotations, [SimBehaviourAnnotation]: value };
    },
  },
];

export const MUTATION_NAMES = MUTATIONS.map((m) => m.name);

/** A hostile pod: the sleeper on `node`, with one to four mutations; `mutations` names them. */
export function hostilePod(rng: Rng, name: string, node: string): { pod: HostilePod; mutations: string[] } {
  const pod: HostilePod = {
    metadata: { name, labels: { chaos: 'hostile' } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
    },
  };
  const chosen = new Set<Mutation>();
  const n = rng.int(1, 4);
  while (chosen.size < n) chosen.add(rng.pick(MUTATIONS));
  for (const m of chosen) m.apply(rng, pod);
  return { pod, mutations: [...chosen].map((m) => m.name) };
}

/** A pod name: mostly short, sometimes near the 253 limit (Events and hostnames derive from it). */
export function hostilePodName(rng: Rng, i: number): string {
  const base = `h${i}`;
  if (!rng.chance(0.1)) return `${base}-${rng.text(6)}`;
  return `${base}-${rng.text(rng.int(60, 253 - base.length - 1))}`;
}

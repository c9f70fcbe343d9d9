/**
 * VirtualNode (kubelet-operator.dev/v1alpha1), the operator's own API. The CRD (crds/virtualnode.yaml)
 * rejects malformed objects at the API server; this schema checks again inside the operator, because an
 * object may predate the CRD's validation or come from a relaxed CRD. A spec that fails here gets a Ready=False
 * condition naming the field, and the node is not started; nothing crashes.
 */
import { z } from 'zod';
import type { ObjectMeta } from './core.js';
import { parseGoDuration } from '../util/duration.js';
import { isSimPodCIDR } from '../util/ipv4.js';
import { validateShutdownSettings } from './shutdownsettings.js';

export const GROUP = 'kubelet-operator.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'virtualnodes';
export const FINALIZER = 'kubelet-operator.dev/drain';

const quantity = z.union([
  z.number().int().nonnegative(),
  z
    .string()
    .regex(/^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE]\+?[0-9]+))?$/, 'not a quantity'),
]);

const dnsSubdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'not a DNS subdomain');

/** An eviction setting's map: signal name to value, as the kubelet's configuration holds it. */
const evictionMap = z.record(z.string().max(64), z.string().max(64));

export const VirtualNodeSpecSchema = z
  .object({
    nodeName: dnsSubdomain.optional(),
    labels: z.record(z.string(), z.string().max(63)).default({}),
    taints: z
      .array(
        z.object({
          key: z.string().min(1).max(316),
          value: z.string().max(63).optional(),
          effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
        }),
      )
      .max(32)
      .default([]),
    capacity: z
      .object({
        cpu: quantity.default('4'),
        memory: quantity.default('16Gi'),
        'ephemeral-storage': quantity.default('100Gi'),
        pods: z.number().int().min(0).max(100_000).default(110),
      })
      .default({ cpu: '4', memory: '16Gi', 'ephemeral-storage': '100Gi', pods: 110 }),
    internalIP: z.ipv4().or(z.ipv6()).optional(),
    /**
     * Simulated devices (a sim node's in-process device plugin per resource, src/kubelet/cm/devicemanager/):
     * `count` devices `<name>-0`... of the extended resource, the last `unhealthy` of them reported Unhealthy.
     * They go through the node's device manager as a real plugin's would.
     */
    devices: z
      .array(
        z
          .object({
            resource: z
              .string()
              .max(253)
              .regex(
                /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
                'an extended resource name (vendor-domain/resourcetype)',
              )
              .refine(
                (r) => !/(^|\.)kubernetes\.io\//.test(r),
                'an extended resource may not be in the kubernetes.io domain',
              ),
            count: z.number().int().min(0).max(1024),
            unhealthy: z.number().int().min(0).max(1024).default(0),
          })
          .strict(),
      )
      .max(16)
      .default([]),
    /**
     * The node's host is shutting down: with a shutdown grace period configured (kubelet.shutdownGracePeriod
     * or shutdownGracePeriodByPodPriority) the node refuses new pods, turns NotReady and terminates its pods
     * as a kubelet does on a host shutdown, then stays NotReady until this is cleared.
     */
    shutdown: z.boolean().default(false),
    runtime: z.discriminatedUnion('type', [
      z.object({
        type: z.literal('cri'),
        cri: z.object({
          endpoint: z.string().regex(/^unix:\/\/\/\S*[^/\s]$/, 'must be unix:///absolute/path'),
          cgroupRoot: z.string().startsWith('/').default('/kubelet-operator'),
          logRoot: z.string().startsWith('/').default('/var/log/pods'),
          podNetwork: z.enum(['host', 'cni']).default('host'),
          /**
           * The Kubernetes Node whose containerd this VirtualNode drives. With --shard-leases only a replica
           * on that Node (its --shard-host) serves it; unset, any replica may.
           */
          host: dnsSubdomain.optional(),
        }),
      }),
      z.object({
        type: z.literal('sim'),
        sim: z
          .object({
            /** Unset: the operator picks a free block per node (status.podCIDR). */
            podCIDR: z
              .string()
              .refine(isSimPodCIDR, 'the simulated runtime needs an IPv4 CIDR from /8 to /30')
              .optional(),
            profile: z.record(z.string(), z.unknown()).optional(),
            /**
             * The simulated host's swap (its SwapTotal), reported as the Node's `nodeInfo.swap.capacity`
             * (NodeSwap); unset or 0: no swap, as on a host without it. cri nodes report their host's.
             */
            swapCapacity: quantity.optional(),
            /**
             * A disk of the simulated host's own for the runtime's images (the kubelet's imagefs), of
             * `capacity`; unset, images share the node's disk (`capacity.ephemeral-storage`). `containerFs`:
             * where containers' writable layers live, with the images (`imageFs`, default) or on the node's
             * disk (`nodeFs`: the runtime names a container filesystem of its own, KubeletSeparateDiskGC).
             */
            imageFs: z
              .object({
                capacity: quantity,
                containerFs: z.enum(['imageFs', 'nodeFs']).default('imageFs'),
              })
              .strict()
              .optional(),
          })
          .default({}),
      }),
    ]),
    kubelet: z
      .object({
        /** `<podsDir>/<pod UID>/{volumes,containers,etc-hosts}`; default `<state dir>/nodes/<node>/pods`. */
        podsDir: z.string().startsWith('/').optional(),
        /** Cluster DNS servers for dnsPolicy ClusterFirst; default the operator's --cluster-dns. */
        clusterDNS: z.array(z.ipv4().or(z.ipv6())).max(3).optional(),
        /** Default the operator's --cluster-domain (cluster.local). */
        clusterDomain: dnsSubdomain.optional(),
        /** The node's resolv.conf for dnsPolicy Default; default /etc/resolv.conf. */
        resolvConf: z.string().startsWith('/').optional(),
        /** Sysctls beyond the safe set that pods may set (kubelet --allowed-unsafe-sysctls; `*` patterns). */
        allowedUnsafeSysctls: z
          .array(z.string().regex(/^[a-z0-9_.*/-]+$/, 'not a sysctl name or pattern'))
          .max(64)
          .default([]),
        /**
         * kubelet config `crashLoopBackOff` (KubeletCrashLoopBackOffMax, on): the longest back-off between
         * restarts of a crashing container, 1..300 s; default the kubelet's 300 s. A shorter one than the
         * initial 10 s is also the first delay.
         */
        crashLoopBackOff: z
          .object({ maxContainerRestartPeriodSeconds: z.number().int().min(1).max(300).optional() })
          .strict()
          .optional(),
        /**
         * kubelet config `cpuCFSQuotaPeriod` (CustomCPUCFSQuotaPeriod, GA): the CFS period of container and pod
         * cgroup quotas, a Go duration from 1ms to 1s; default the kubelet's 100ms.
         */
        cpuCFSQuotaPeriod: z
          .string()
          .max(64)
          .superRefine((s, ctx) => {
            let ms: number;
            try {
              ms = parseGoDuration(s);
            } catch (err) {
              ctx.addIssue({ code: 'custom', message: (err as Error).message });
              return;
            }
            if (ms < 1 || ms > 1000)
              ctx.addIssue({
                code: 'custom',
                message: `invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) ${s} must be between 1ms and 1sec, inclusive`,
              });
          })
          .optional(),
        /**
         * `Request`: projected service-account tokens are TokenRequests bound to the pod, as a kubelet's.
         * `Simulated`: an unsigned placeholder is written instead (no API request per pod). Default: Request on
         * cri, Simulated on sim.
         */
        serviceAccountTokens: z.enum(['Request', 'Simulated']).optional(),
        /**
         * The kubelet's graceful node shutdown (src/kubelet/nodeshutdown/): Go durations (default 0s, the
         * feature off), or grace periods by pod priority instead. The node shuts down when its VirtualNode is
         * deleted or `spec.shutdown` is set. Checked with the kubelet's rules (the spec's refinement below).
         */
        shutdownGracePeriod: z.string().max(64).optional(),
        shutdownGracePeriodCriticalPods: z.string().max(64).optional(),
        shutdownGracePeriodByPodPriority: z
          .array(
            z
              .object({
                priority: z
                  .number()
                  .int()
                  .min(-(2 ** 31))
                  .max(2 ** 31 - 1),
                shutdownGracePeriodSeconds: z.number().int().min(0).max(86400),
              })
              .strict(),
          )
          .max(32)
          .optional(),
        /**
         * The kubelet's eviction settings, as its configuration spells them (signal -> "100Mi" or "10%", grace
         * periods as Go durations). Checked with the kubelet's own rules when the node starts: a bad value
         * is reported (Warning Event InvalidEvictionSettings on the VirtualNode) and the defaults are used.
         */
        evictionHard: evictionMap.optional(),
        evictionSoft: evictionMap.optional(),
        evictionSoftGracePeriod: evictionMap.optional(),
        evictionMinimumReclaim: evictionMap.optional(),
        /** How long a pressure condition stays after it was last seen (Go duration; default 5m0s). */
        evictionPressureTransitionPeriod: z.string().max(64).optional(),
        /** The longest grace period a soft eviction grants, in seconds (default 0). */
        evictionMaxPodGracePeriod: z.number().int().min(0).max(86400).optional(),
        /**
         * The kubelet's volumeStatsAggPeriod (Go duration): how often pods' volumes are measured for the
         * Summary and the emptyDir sizeLimit check. Default 1m0s (also for 0s); negative: no volume stats.
         */
        volumeStatsAggPeriod: z.string().max(64).optional(),
        /**
         * The kubelet's image garbage collection (src/kubelet/images/imagegc.ts): percentages of the image
         * filesystem (default 85 and 80; low below high), and Go durations (default 2m0s and 0s, off). Checked
         * with the kubelet's rules when the node starts: a refused combination is a Warning Event
         * InvalidImageGCSettings on the VirtualNode and the defaults run.
         */
        imageGCHighThresholdPercent: z.number().int().min(0).max(100).optional(),
        imageGCLowThresholdPercent: z.number().int().min(0).max(100).optional(),
        imageMinimumGCAge: z.string().max(64).optional(),
        imageMaximumGCAge: z.string().max(64).optional(),
        /**
         * The kubelet's CPU manager (src/kubelet/cm/cpumanager/): `none` (default) or `static`, its options,
         * reconcile period (Go duration, default 10s) and the CPUs kept for the system (reservedSystemCPUs, a
         * cpuset, or the cpu of kubeReserved + systemReserved). Checked when the node starts, as a kubelet
         * checks them: a refused setting stops the node's start.
         */
        cpuManagerPolicy: z.string().max(64).optional(),
        cpuManagerPolicyOptions: z.record(z.string().max(64), z.string().max(64)).optional(),
        cpuManagerReconcilePeriod: z.string().max(64).optional(),
        reservedSystemCPUs: z.string().max(256).optional(),
        kubeReserved: z.record(z.string().max(64), quantity).optional(),
        systemReserved: z.record(z.string().max(64), quantity).optional(),
        /** The kubelet's topology manager: none (default), best-effort, restricted, single-numa-node. */
        topologyManagerPolicy: z.string().max(64).optional(),
        /** container (default) or pod. */
        topologyManagerScope: z.string().max(64).optional(),
        topologyManagerPolicyOptions: z.record(z.string().max(64), z.string().max(64)).optional(),
        /**
         * A sim node's CPU topology (a cri node reads its host's): sockets, NUMA nodes per socket, cores per
         * NUMA node, threads per core, uncore (L3) caches per NUMA node. Default: one socket of single-thread
         * cores, one per cpu of capacity.
         */
        cpuTopology: z
          .object({
            sockets: z.number().int().min(1).max(16),
            numaNodesPerSocket: z.number().int().min(1).max(16),
            coresPerNUMANode: z.number().int().min(1).max(512),
            threadsPerCore: z.number().int().min(1).max(8),
            uncoreCachesPerNUMANode: z.number().int().min(1).max(64).optional(),
          })
          .strict()
          .optional(),
        /**
         * KubeletEnsureSecretPulledImages: when a pod must show credentials for an image already on the node
         * (src/kubelet/images/pullcredentials.ts). Default NeverVerifyPreloadedImages. Checked with the
         * kubelet's rules when the node starts: a refused pair is a Warning Event and the defaults run.
         */
        imagePullCredentialsVerificationPolicy: z.string().max(64).optional(),
        /** Images (`registry/path` or `registry/prefix/*`) exempt under NeverVerifyAllowlistedImages. */
        preloadedImagesVerificationAllowlist: z.array(z.string().max(512)).max(256).optional(),
        /**
         * kubelet --image-credential-provider-config and --image-credential-provider-bin-dir: a
         * CredentialProviderConfig file and the directory of its plugins, on the operator's host. Read when
         * the node starts; a config the kubelet would refuse is a Warning Event and no plugin runs.
         */
        imageCredentialProviderConfigPath: z.string().startsWith('/').max(4096).optional(),
        imageCredentialProviderBinDir: z.string().startsWith('/').max(4096).optional(),
      })
      .strict()
      .default({ allowedUnsafeSysctls: [] }),
    heartbeat: z
      .object({
        leaseDurationSeconds: z.number().int().min(10).max(3600).default(40),
        renewIntervalSeconds: z.number().int().min(1).max(600).default(10),
        statusUpdateFrequencySeconds: z.number().int().min(1).max(600).default(10),
        statusReportFrequencySeconds: z.number().int().min(10).max(3600).default(300),
      })
      .default({
        leaseDurationSeconds: 40,
        renewIntervalSeconds: 10,
        statusUpdateFrequencySeconds: 10,
        statusReportFrequencySeconds: 300,
      })
      .refine((h) => h.renewIntervalSeconds < h.leaseDurationSeconds, {
        message: 'renewIntervalSeconds must be less than leaseDurationSeconds',
        path: ['renewIntervalSeconds'],
      }),
  })
  .strict()
  .superRefine((spec, ctx) => {
    // The kubelet's config validation of the shutdown fields, which span several of them.
    for (const message of validateShutdownSettings(spec.kubelet))
      ctx.addIssue({ code: 'custom', message, path: ['kubelet'] });
  });

export type VirtualNodeSpec = z.infer<typeof VirtualNodeSpecSchema>;

export interface VirtualNodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface VirtualNodeStatus {
  observedGeneration?: number;
  nodeName?: string;
  internalIP?: string;
  /** The pod CIDR of a simulated node (from spec, or defaulted by the operator). */
  podCIDR?: string;
  lastHeartbeatTime?: string;
  runtime?: { name?: string; version?: string };
  pods?: { total?: number; running?: number; pending?: number };
  conditions?: VirtualNodeCondition[];
}

export interface VirtualNode {
  apiVersion: `${typeof GROUP}/${typeof VERSION}`;
  kind: 'VirtualNode';
  metadata: ObjectMeta;
  /** Raw as stored; parse with `parseVirtualNodeSpec` before use. */
  spec: unknown;
  status?: VirtualNodeStatus;
}

export type ParsedSpec = { ok: true; spec: VirtualNodeSpec } | { ok: false; message: string };

/** Validates and defaults a spec; on failure the message names each bad field as `spec.<path>: <problem>`. */
export function parseVirtualNodeSpec(raw: unknown): ParsedSpec {
  const r = VirtualNodeSpecSchema.safeParse(raw ?? {});
  if (r.success) return { ok: true, spec: r.data };
  const message = r.error.issues
    .map(
      (i) =>
        `spec${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${i.message}`,
    )
    .join('; ');
  return { ok: false, message };
}

/** The Node name a VirtualNode registers: spec.nodeName, else its own name. */
export function nodeNameOf(
  vn: Pick<VirtualNode, 'metadata'>,
  spec: Pick<VirtualNodeSpec, 'nodeName'>,
): string {
  return spec.nodeName ?? vn.metadata.name ?? '';
}

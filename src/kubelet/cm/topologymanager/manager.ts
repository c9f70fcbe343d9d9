/**
 * The topology manager (pkg/kubelet/cm/topologymanager/topology_manager.go, scope*.go): at admission it asks
 * every hint provider (the CPU manager; the device and memory managers plug in through the same
 * `HintProvider`) where each container (scope `container`) or the whole pod (scope `pod`) could be placed,
 * merges the hints under its policy, refuses the pod with TopologyAffinityError when the policy says so, and
 * otherwise lets each provider allocate with the chosen affinity, which it keeps for them to read. Pure.
 */
import type { Container, Pod } from '../../../api/core.js';
import type { CPUTopology } from '../cpumanager/topology.js';
import {
  mergeByPolicy,
  NUMAInfo,
  TOPOLOGY_POLICIES,
  topologyPolicyOptions,
  PREFER_CLOSEST_NUMA_NODES,
  type ProviderHints,
  type TopologyHint,
  type TopologyPolicyName,
  type TopologyPolicyOptions,
  type TopologyScopeName,
} from './policy.js';

/** A refusal the kubelet's way: its reason (Type()) and message. */
export type ResourceAdmitResult = { admit: true } | { admit: false; reason: string; message: string };

export const TOPOLOGY_AFFINITY_ERROR = 'TopologyAffinityError';
export const TOPOLOGY_AFFINITY_MESSAGE = 'Resources cannot be allocated with Topology locality';

/** What a resource manager offers the topology manager (HintProvider). `allocate` throws to refuse. */
export interface HintProvider {
  getTopologyHints(pod: Pod, container: Container): ProviderHints;
  getPodTopologyHints(pod: Pod): ProviderHints;
  allocate(pod: Pod, container: Container): void;
}

export interface TopologyManagerConfig {
  policy: string;
  scope: string;
  options: Readonly<Record<string, string>>;
}

/** An error from a provider's allocate as the pod's refusal (admission.GetPodAdmitResult). */
export function admitResultOf(err: unknown): ResourceAdmitResult {
  const e = err as { reason?: unknown; message?: unknown };
  if (err instanceof Error && typeof e.reason === 'string')
    return { admit: false, reason: e.reason, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return {
    admit: false,
    reason: 'UnexpectedAdmissionError',
    message: `Allocate failed due to ${message}, which is unexpected`,
  };
}

export class TopologyManager {
  private readonly providers: HintProvider[] = [];
  private readonly hints = new Map<string, Map<string, TopologyHint>>();
  readonly policy: TopologyPolicyName;
  readonly scope: TopologyScopeName;
  private readonly opts: TopologyPolicyOptions;
  private readonly numa: NUMAInfo;

  /** NewManager: throws the kubelet's errors for an unknown policy, scope or option, or too many NUMA nodes. */
  constructor(config: TopologyManagerConfig, topology: CPUTopology) {
    if (!(TOPOLOGY_POLICIES as readonly string[]).includes(config.policy))
      throw new Error(`unknown policy: "${config.policy}"`);
    this.policy = config.policy as TopologyPolicyName;
    const nodes = topology.details.numaNodes().list();
    if (this.policy === 'none') {
      this.scope = 'container';
      this.opts = topologyPolicyOptions({});
      this.numa = new NUMAInfo(nodes, new Map());
      return;
    }
    this.opts = topologyPolicyOptions(config.options);
    if (this.opts.preferClosestNUMA && nodes.some((n) => !topology.numaDistances.has(n)))
      throw new Error(
        `cannot discover NUMA topology: the "${PREFER_CLOSEST_NUMA_NODES}" option needs NUMA distances, and the node has none`,
      );
    this.numa = new NUMAInfo(nodes, topology.numaDistances);
    if (nodes.length > this.opts.maxAllowableNUMANodes)
      throw new Error(`unsupported on machines with more than ${this.opts.maxAllowableNUMANodes} NUMA Nodes`);
    if (config.scope !== 'container' && config.scope !== 'pod')
      throw new Error(`unknown scope: "${config.scope}"`);
    this.scope = config.scope;
  }

  addHintProvider(p: HintProvider): void {
    this.providers.push(p);
  }

  /** Store.GetAffinity. */
  getAffinity(podUID: string, container: string): TopologyHint | undefined {
    return this.hints.get(podUID)?.get(container);
  }

  /** Forgets the hints of pods that are gone. */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of [...this.hints.keys()]) if (!uids.has(uid)) this.hints.delete(uid);
  }

  private setHint(pod: Pod, container: string, hint: TopologyHint): void {
    const uid = pod.metadata.uid as string;
    let m = this.hints.get(uid);
    if (!m) this.hints.set(uid, (m = new Map()));
    m.set(container, hint);
  }

  private allocateAll(pod: Pod, container: Container): ResourceAdmitResult | undefined {
    for (const p of this.providers) {
      try {
        p.allocate(pod, container);
      } catch (err) {
        return admitResultOf(err);
      }
    }
    return undefined;
  }

  private merge(providers: ProviderHints[]): { hint: TopologyHint; admit: boolean } {
    return mergeByPolicy(this.policy as Exclude<TopologyPolicyName, 'none'>, this.numa, providers, this.opts);
  }

  /** Admit (lifecycle.PodAdmitHandler). */
  admit(pod: Pod): ResourceAdmitResult {
    const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
    const refused: ResourceAdmitResult = {
      admit: false,
      reason: TOPOLOGY_AFFINITY_ERROR,
      message: TOPOLOGY_AFFINITY_MESSAGE,
    };
    if (this.policy === 'none') {
      for (const c of containers) {
        const r = this.allocateAll(pod, c);
        if (r) return r;
      }
      return { admit: true };
    }
    if (this.scope === 'pod') {
      const { hint, admit } = this.merge(this.providers.map((p) => p.getPodTopologyHints(pod)));
      if (!admit) return refused;
      for (const c of containers) {
        this.setHint(pod, c.name, hint);
        const r = this.allocateAll(pod, c);
        if (r) return r;
      }
      return { admit: true };
    }
    for (const c of containers) {
      const { hint, admit } = this.merge(this.providers.map((p) => p.getTopologyHints(pod, c)));
      if (!admit) return refused;
      this.setHint(pod, c.name, hint);
      const r = this.allocateAll(pod, c);
      if (r) return r;
    }
    return { admit: true };
  }
}

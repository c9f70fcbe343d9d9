/**
 * How the one node API server of a process finds the node that serves a request: every running
 * ManagedNode registers a NodeApiTarget; requests for a pod go to the node the pod is bound to, others to
 * the node whose InternalIP the client dialled.
 */
import type { Pod } from '../../api/core.js';
import type { Summary } from '../../kubelet/stats/types.js';
import type { Runtime } from '../../runtime/types.js';
import type { NodeKubeletSettings } from './configz.js';

/** What the node API needs from one served node. Methods read caches; none blocks. */
export interface NodeApiTarget {
  readonly nodeName: string;
  readonly internalIP: string;
  readonly runtime: Runtime;
  /** Pods bound to this node, from the informer cache (not copies: do not mutate). */
  pods(): readonly Pod[];
  /** A pod bound to this node, or undefined. */
  pod(namespace: string, name: string): Pod | undefined;
  /** `/stats/summary`, `/metrics/resource` and `/metrics/probes`; absent: those paths answer 404. */
  readonly stats?: NodeStatsSource;
  /** The node's kubelet settings as in force now, for `/configz` and `/flagz`; absent: those answer 404. */
  kubeletSettings?(): NodeKubeletSettings;
  /** The node's log directory, served on `/logs/` (the kubelet's /var/log); absent: `/logs/` answers 404. */
  readonly logDir?: string;
  /** When this node's kubelet started (ms since the epoch), `/statusz`'s start; default the process's. */
  readonly startTime?: number;
}

/** What the node API serves about resource usage and probes (src/kubelet/stats, src/kubelet/prober/metrics.ts). */
export interface NodeStatsSource {
  summary(opts: { fs: boolean }): Promise<Summary>;
  probeMetrics(): string;
}

export interface NodeLookup {
  nodeForPod(namespace: string, name: string): { node: NodeApiTarget; pod: Pod } | undefined;
  /** The node advertising this address (the local address of the connection), else undefined. */
  nodeByAddress(address: string): NodeApiTarget | undefined;
  nodes(): NodeApiTarget[];
}

/** Strips the IPv4-mapped IPv6 prefix node reports for dual-stack sockets. */
export function normalizeAddress(a: string | undefined): string {
  return (a ?? '').replace(/^::ffff:/, '');
}

export class NodeApiRegistry implements NodeLookup {
  private readonly byName = new Map<string, NodeApiTarget>();
  private readonly listeners = new Set<() => void>();

  /** Adds a node; the returned function removes it (only if it is still the registered one). */
  register(t: NodeApiTarget): () => void {
    this.byName.set(t.nodeName, t);
    this.changed();
    return () => {
      if (this.byName.get(t.nodeName) === t) {
        this.byName.delete(t.nodeName);
        this.changed();
      }
    };
  }

  /** Calls `fn` after every register and unregister (serving certificates follow the nodes); returns the unsubscribe. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  nodes(): NodeApiTarget[] {
    return [...this.byName.values()];
  }

  nodeForPod(namespace: string, name: string): { node: NodeApiTarget; pod: Pod } | undefined {
    for (const node of this.byName.values()) {
      const pod = node.pod(namespace, name);
      if (pod) return { node, pod };
    }
    return undefined;
  }

  nodeByAddress(address: string): NodeApiTarget | undefined {
    const a = normalizeAddress(address);
    for (const node of this.byName.values()) if (node.internalIP === a) return node;
    return undefined;
  }
}

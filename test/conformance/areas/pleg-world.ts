/**
 * The fake runtime behind the PLEG cases: a set of pods with container and sandbox records, which the
 * PLEG lists (`getPods`) and inspects (`getPodStatus`), plus the small grammars the step cases use.
 *
 * Inspected status of a pod: one container record per listed container (name = ID), the listed
 * sandboxes (running/ready = ready, anything else = not ready), `ips` from the relist's `podStatus` (none
 * by default), and container resources set by `inspected status has <field> <value>`. A container that a
 * watch condition names but the listing lacks appears in the inspected status only, as running.
 */
import type {
  ContainerState,
  KubeContainerStatus,
  PodUID,
  RuntimePodStatus,
} from '../../../src/kubelet/container/types.js';
import type { ListedContainer } from '../../../src/kubelet/pleg/events.js';
import type { PodLister, RuntimePod, WatchCondition } from '../../../src/kubelet/pleg/generic.js';
import { Uninterpretable } from '../types.js';
import { show } from '../compare.js';
import { readList, readObj, readString, readToken } from './prober-read.js';

export const RESOURCE_FIELDS = ['cpuLimit', 'cpuRequest', 'memoryLimit', 'memoryRequest'] as const;
export type ResourceField = (typeof RESOURCE_FIELDS)[number];

/** A runtime container record that also reports its applied resources (kubecontainer.Status.Resources). */
type ContainerWithResources = KubeContainerStatus & { resources?: Partial<Record<ResourceField, string>> };

const CONTAINER_STATES = ['created', 'running', 'exited', 'unknown'] as const;
const SANDBOX_STATES = [...CONTAINER_STATES, 'ready', 'notready'] as const;

interface WorldPod {
  uid: string;
  containers: ListedContainer[];
  sandboxes: ListedContainer[];
  resources: Partial<Record<ResourceField, string>>;
  /** Container names referenced by watch conditions. */
  watched: Set<string>;
}

function readRecords(v: unknown, what: string, sandbox: boolean): ListedContainer[] {
  if (v === undefined) return [];
  return readList(v, what).map((item, i) => {
    const o = readObj(item, `${what}[${i}]`, ['id', 'state']);
    const id = readString(o.id, `${what}[${i}].id`);
    const token = readToken(o.state, sandbox ? SANDBOX_STATES : CONTAINER_STATES, `${what}[${i}].state`);
    const state: ContainerState = token === 'ready' ? 'running' : token === 'notready' ? 'exited' : token;
    return { id, state };
  });
}

export class FakeRuntime implements PodLister {
  private pods = new Map<string, WorldPod>();
  /** Pods whose inspection fails during the current relist. */
  failing = new Set<string>();
  /** IPs every inspected status reports during the current relist. */
  ips: string[] = [];
  /** Pod UIDs inspected since the last `resetInspections`. */
  inspections: string[] = [];

  /** Replaces the listing with `pods: [{pod, containers?, sandboxes?}]`, keeping what the steps set. */
  setListing(v: unknown, what: string): void {
    const next = new Map<string, WorldPod>();
    for (const [i, item] of readList(v, what).entries()) {
      const o = readObj(item, `${what}[${i}]`, ['pod', 'containers', 'sandboxes']);
      const uid = readString(o.pod, `${what}[${i}].pod`);
      const old = this.pods.get(uid);
      next.set(uid, {
        uid,
        containers: readRecords(o.containers, `${what}[${i}].containers`, false),
        sandboxes: readRecords(o.sandboxes, `${what}[${i}].sandboxes`, true),
        resources: old?.resources ?? {},
        watched: old?.watched ?? new Set(),
      });
    }
    this.pods = next;
  }

  /** Makes sure the runtime has the pod (with no records unless a listing gave some). */
  ensurePod(uid: string): WorldPod {
    let p = this.pods.get(uid);
    if (!p) {
      p = { uid, containers: [], sandboxes: [], resources: {}, watched: new Set() };
      this.pods.set(uid, p);
    }
    return p;
  }

  has(uid: string): boolean {
    return this.pods.has(uid);
  }

  /** Container and sandbox IDs the runtime currently reports for a pod. */
  recordIDs(uid: string): { containers: string[]; sandboxes: string[] } | undefined {
    const p = this.pods.get(uid);
    return p && { containers: p.containers.map((c) => c.id), sandboxes: p.sandboxes.map((s) => s.id) };
  }

  /**
   * Applies a `runtime:` description: clauses separated by ';', each one of `no change`,
   * `no container state change`, `inspected status has <field> <value>` (every pod).
   */
  applyProse(v: unknown, what: string): void {
    const text = readString(v, what);
    for (const raw of text.split(';')) {
      const clause = raw.trim();
      if (clause === 'no change' || clause === 'no container state change') continue;
      const m = /^inspected status has (\w+) (\S+)$/.exec(clause);
      if (m) {
        const field = readToken(m[1], RESOURCE_FIELDS, `${what} (field)`);
        for (const p of this.pods.values()) p.resources[field] = m[2]!;
        continue;
      }
      throw new Uninterpretable(`${what}: unknown runtime description ${show(clause)}`);
    }
  }

  /**
   * Compiles `status.<container>.<field> == <value>` (or `!=`) into a watch condition over the inspected
   * status, and remembers the container so the pod's inspected status includes it.
   */
  compileCondition(uid: string, v: unknown, what: string): WatchCondition {
    const text = readString(v, what);
    const m = /^status\.([^.\s]+)\.(\w+)\s*(==|!=)\s*(\S+)$/.exec(text.trim());
    if (!m) throw new Uninterpretable(`${what}: unknown condition ${show(text)}`);
    const [, container, rawField, op, value] = m as unknown as [string, string, string, string, string];
    const field = readToken(rawField, RESOURCE_FIELDS, `${what} (field)`);
    this.ensurePod(uid).watched.add(container);
    return (status) => {
      const c = status.containers.find((x) => x.name === container) as ContainerWithResources | undefined;
      const actual = c?.resources?.[field];
      return op === '==' ? actual === value : actual !== value;
    };
  }

  getPods(): Promise<readonly RuntimePod[]> {
    return Promise.resolve(
      [...this.pods.values()].map((p) => ({
        uid: p.uid as PodUID,
        name: p.uid,
        namespace: 'default',
        containers: p.containers.map((c) => ({ ...c })),
        sandboxes: p.sandboxes.map((s) => ({ ...s })),
      })),
    );
  }

  getPodStatus(uid: PodUID): Promise<RuntimePodStatus> {
    this.inspections.push(uid);
    if (this.failing.has(uid)) return Promise.reject(new Error(`cannot inspect pod ${uid}`));
    const p = this.pods.get(uid);
    const resources = p && Object.keys(p.resources).length > 0 ? { ...p.resources } : undefined;
    const record = (id: string, name: string, state: ContainerState): ContainerWithResources => ({
      id: id as KubeContainerStatus['id'],
      name,
      state,
      restartCount: 0,
      hash: '',
      ...(resources ? { resources } : {}),
    });
    const containers = (p?.containers ?? []).map((c) => record(c.id, c.id, c.state));
    for (const name of p?.watched ?? []) {
      if (!containers.some((c) => c.name === name)) containers.push(record(name, name, 'running'));
    }
    return Promise.resolve({
      uid,
      name: uid,
      namespace: 'default',
      containers,
      sandboxes: (p?.sandboxes ?? []).map((s) => ({
        id: s.id as RuntimePodStatus['sandboxes'][number]['id'],
        state: s.state === 'running' ? ('ready' as const) : ('notready' as const),
        attempt: 0,
        ip: null,
        netns: 'pod' as const,
      })),
      ips: [...this.ips],
    });
  }
}

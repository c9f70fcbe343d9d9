/**
 * Container garbage collection (kubelet: kuberuntime_gc.go). Only objects carrying this node's ManagedByLabel
 * are ever looked at, so a runtime shared with other agents (or other VirtualNodes) is safe.
 *
 * - Dead containers (not running, older than minAge) are grouped per (pod UID, container name), newest first.
 *   All of them go when the pod's content may be removed; otherwise the newest `maxPerPodContainer` stay
 *   (default 1: the last run of each container, which restart counts, logs and init progress rely on). An
 *   optional node-wide `maxContainers` then trims the oldest. A container in an unknown state is killed
 *   before it is removed.
 * - Sandboxes that are not ready and hold no container are removed, except the newest of a pod that still
 *   exists. Ready sandboxes are never touched here (killing pods is the pod workers' job).
 * - When a removed pod has nothing left, its log directory and cgroup go too.
 */
import { ManagedByLabel, PodNameLabel, PodNamespaceLabel, PodUIDLabel } from '../../../runtime/labels.js';
import { errorMessage } from '../../../util/errors.js';
import type { ManagerContext } from './context.js';
import { killContainer, removeContainer } from './killcontainer.js';
import { removePodLeftovers } from './removeleftovers.js';
import { removePodSandbox } from './sandboxes.js';

export interface GarbageCollectOptions {
  /** True when every runtime object of the pod may go (the pod was deleted, or is unknown to the node). */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** Objects created less than this long ago are kept (kubelet MinAge; default 0). */
  minAgeMs?: number;
  /** Dead instances kept per (pod, container) (kubelet MaxPerPodContainer; default 1; negative = no limit). */
  maxPerPodContainer?: number;
  /** Dead containers kept on the node (kubelet MaxContainers; default -1 = no limit). */
  maxContainers?: number;
  /**
   * False until every pod source has been listed once: a pod missing from an incomplete view is not yet known
   * to be deleted, so nothing of it is removed for that reason (default true).
   */
  allSourcesReady?: boolean;
}

export interface GarbageCollectResult {
  removedContainers: string[];
  removedSandboxes: string[];
  /** One line per failed removal; a failure never stops the rest. */
  errors: string[];
}

interface DeadContainer {
  id: string;
  name: string;
  createdAt: bigint;
  unknown: boolean;
  /**
   * Created but never started: the replacement a sync is about to start. It is not dead, so it never
   * counts toward (or is trimmed by) the per-container and node-wide limits; whole-pod removal takes it.
   */
  created: boolean;
}

const newestFirst = (a: { createdAt: bigint }, b: { createdAt: bigint }): number =>
  a.createdAt === b.createdAt ? 0 : a.createdAt > b.createdAt ? -1 : 1;

export async function garbageCollect(
  ctx: ManagerContext,
  opts: GarbageCollectOptions,
): Promise<GarbageCollectResult> {
  const result: GarbageCollectResult = { removedContainers: [], removedSandboxes: [], errors: [] };
  const minAgeNs = BigInt(Math.max(0, Math.floor(opts.minAgeMs ?? 0))) * 1_000_000n;
  const newestGCTime = BigInt(Math.floor(ctx.clock.now())) * 1_000_000n - minAgeNs;
  const maxPer = opts.maxPerPodContainer ?? 1;
  const maxContainers = opts.maxContainers ?? -1;
  const allSourcesReady = opts.allSourcesReady ?? true;
  const removable = (uid: string): boolean => allSourcesReady && opts.shouldPodContentBeRemoved(uid);
  const selector = { labelSelector: { [ManagedByLabel]: ctx.node.nodeName } };

  // ---- containers
  const units = new Map<string, DeadContainer[]>();
  for (const c of await ctx.runtime.listContainers(selector)) {
    if (c.state === 'running' || c.createdAt > newestGCTime) continue;
    const uid = c.labels[PodUIDLabel] ?? '';
    const key = JSON.stringify([uid, c.metadata.name]);
    let list = units.get(key);
    if (!list) units.set(key, (list = []));
    list.push({
      id: c.id,
      name: c.metadata.name,
      createdAt: c.createdAt,
      unknown: c.state === 'unknown',
      created: c.state === 'created',
    });
  }
  for (const list of units.values()) list.sort(newestFirst);

  const removeOldest = async (list: DeadContainer[], count: number): Promise<DeadContainer[]> => {
    const keep = list.length - count;
    for (let i = list.length - 1; i >= keep; i--) {
      const c = list[i]!;
      try {
        if (c.unknown) {
          // It might still run: stop it before removal.
          await killContainer(
            ctx,
            undefined,
            c.id,
            c.name,
            'Container is in unknown state, try killing it before removal',
            'Unknown',
          );
        }
        await removeContainer(ctx, c.id);
        result.removedContainers.push(c.id);
      } catch (err) {
        result.errors.push(`failed to remove container ${c.id}: ${errorMessage(err)}`);
      }
    }
    // Counted as removed either way, so that one stuck container does not make GC too aggressive.
    return list.slice(0, keep);
  };

  for (const [key, list] of units) {
    const [uid] = JSON.parse(key) as [string, string];
    if (removable(uid)) {
      await removeOldest(list, list.length);
      units.delete(key);
    }
  }
  // From here on only dead containers are trimmed (see DeadContainer.created).
  for (const [key, list] of units)
    units.set(
      key,
      list.filter((c) => !c.created),
    );
  if (maxPer >= 0) {
    for (const [key, list] of units) {
      if (list.length > maxPer) units.set(key, await removeOldest(list, list.length - maxPer));
    }
  }
  const total = (): number => [...units.values()].reduce((n, l) => n + l.length, 0);
  if (maxContainers >= 0 && total() > maxContainers) {
    const perUnit = Math.max(1, Math.floor(maxContainers / Math.max(1, units.size)));
    for (const [key, list] of units) {
      if (list.length > perUnit) units.set(key, await removeOldest(list, list.length - perUnit));
    }
    const left = total();
    if (left > maxContainers) {
      await removeOldest([...units.values()].flat().sort(newestFirst), left - maxContainers);
    }
  }

  // ---- sandboxes
  const withContainers = new Set((await ctx.runtime.listContainers(selector)).map((c) => c.podSandboxId));
  const byPod = new Map<
    string,
    { id: string; createdAt: bigint; active: boolean; name: string; namespace: string }[]
  >();
  for (const sb of await ctx.runtime.listPodSandbox(selector)) {
    const uid = sb.labels[PodUIDLabel] ?? sb.metadata.uid;
    let list = byPod.get(uid);
    if (!list) byPod.set(uid, (list = []));
    list.push({
      id: sb.id,
      createdAt: sb.createdAt,
      active: sb.state === 'ready' || withContainers.has(sb.id) || sb.createdAt > newestGCTime,
      name: sb.labels[PodNameLabel] ?? sb.metadata.name,
      namespace: sb.labels[PodNamespaceLabel] ?? sb.metadata.namespace,
    });
  }
  for (const [uid, list] of byPod) {
    list.sort(newestFirst);
    const gone = removable(uid);
    // A pod that still exists keeps its newest sandbox, dead or not.
    const candidates = gone ? list : list.slice(1);
    let left = list.length;
    for (const sb of candidates.reverse()) {
      if (sb.active) continue;
      try {
        await removePodSandbox(ctx, sb.id);
        result.removedSandboxes.push(sb.id);
        left--;
      } catch (err) {
        result.errors.push(`failed to remove sandbox ${sb.id}: ${errorMessage(err)}`);
      }
    }
    if (gone && left === 0 && list[0]) {
      try {
        await removePodLeftovers(ctx, list[0].namespace, list[0].name, uid);
      } catch (err) {
        result.errors.push(`failed to clean up pod ${uid}: ${errorMessage(err)}`);
      }
    }
  }
  return result;
}

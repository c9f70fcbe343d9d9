/**
 * The eviction manager of one node (kubelet: managerImpl.Start, synchronize, evictPod, waitForPodsCleanup):
 * every monitoring interval it reads the node's Summary, runs one `synchronize` round of the pure core,
 * keeps its state, and acts on the decision. The node's pressure conditions and admission read what the
 * last round found.
 *
 * Invariants: one round at a time (a round that waits for an evicted pod to be cleaned up delays the next);
 * at most one pod is evicted per round for a threshold (every offender for local storage), as the kubelet;
 * after stop() no round starts and a round in flight evicts nothing more.
 */
import type { Pod } from '../../../api/core.js';
import type { Clock, TimerHandle } from '../../../util/clock.js';
import { errorMessage } from '../../../util/errors.js';
import type { Summary } from '../../stats/types.js';
import { admitUnderPressure, type EvictionAdmitResult } from '../admit.js';
import {
  initialEvictionState,
  needsPodStats,
  podStatsNeededRegardless,
  reclaimResolved,
  synchronize,
  type EvictionConfig,
  type EvictionState,
} from '../manager.js';
import type { PodEviction } from '../message.js';
import type { FsLayout, NodeReclaim } from '../rank.js';
import { configForLayout } from '../settings.js';
import type { PressureCondition } from '../signals.js';

/** The kubelet's evictionMonitoringPeriod. */
export const EvictionMonitoringPeriodMs = 10_000;
/** How long a round waits for an evicted pod to be cleaned up (kubelet: podCleanupTimeout). */
export const PodCleanupTimeoutMs = 30_000;
/** How often it looks meanwhile (kubelet: podCleanupPollFreq). */
export const PodCleanupPollMs = 1_000;

export interface EvictionManagerDeps {
  /** With filesystemLayout, the thresholds as configured; the layout's containerfs ones come at detection. */
  config: EvictionConfig;
  /**
   * The node's filesystem layout (kubelet HasDedicatedImageFs, HasDedicatedContainerFs), asked before the
   * first round and again each round until it answers (no round runs before). Absent: `config` as given.
   */
  filesystemLayout?: () => Promise<FsLayout>;
  clock: Clock;
  /**
   * The node's stats Summary now (the stats provider's, filesystems included); with `pods` false the node's
   * figures alone (no pod's stats, no CPU).
   */
  summary: (opts: { pods: boolean }) => Promise<Summary>;
  /** The pods admitted and not terminal (kubelet: GetActivePods). */
  activePods: () => readonly Pod[];
  /**
   * Kills the pod with the eviction's grace period; once stopped its status is Failed/Evicted with the
   * message (and the condition). Must not block: the manager waits with `podCleanedUp`.
   */
  killPod: (eviction: PodEviction) => void;
  /** Whether an evicted pod's containers are stopped and its resources released. */
  podCleanedUp: (pod: Pod) => boolean;
  /** Runs one node-level reclaim; false when this node cannot (then the manager goes on to pods). */
  nodeReclaim: (kind: NodeReclaim) => Promise<boolean>;
  /** Records an Event about a pod; `annotations` are the Event's. */
  recordPod: (
    pod: Pod,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    annotations?: Record<string, string>,
  ) => void;
  /** Records an Event about the Node. */
  recordNode: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** The kubelet's eviction metrics, when the node has a metrics registry. */
  metrics?: EvictionMetrics;
  /** Called after a round whose node conditions differ from the round before. */
  onPressureChange?: (conditions: readonly PressureCondition[]) => void;
  logger: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  monitoringPeriodMs?: number;
}

/** `kubelet_evictions` and `kubelet_eviction_stats_age_seconds`, by eviction signal. */
export interface EvictionMetrics {
  evicted(signal: string): void;
  statsAge(signal: string, seconds: number): void;
}

export class EvictionManager {
  private state: EvictionState = initialEvictionState;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  /** Node-level reclaims already logged as not possible here (each logged once). */
  private readonly unsupportedLogged = new Set<NodeReclaim>();
  /** The config for the node's filesystem layout; undefined until the layout is known. */
  private config: EvictionConfig | undefined;

  constructor(private readonly d: EvictionManagerDeps) {
    if (!d.filesystemLayout) this.config = d.config;
  }

  /** The config this node's rounds run with (its filesystem layout's), once known. */
  effectiveConfig(): EvictionConfig | undefined {
    return this.config;
  }

  /** The layout once, as the kubelet's first synchronize detects it; a failure skips the round. */
  private async configForRound(): Promise<EvictionConfig | undefined> {
    if (this.config) return this.config;
    let layout: FsLayout;
    try {
      layout = await this.d.filesystemLayout!();
    } catch (err) {
      this.d.logger.warn('eviction manager: failed to get HasDedicatedImageFs', { err: errorMessage(err) });
      return undefined;
    }
    const { config, warnings } = configForLayout(this.d.config, layout);
    // The kubelet logs its containerfs warnings as one error and goes on with the replaced thresholds.
    for (const w of warnings)
      this.d.logger.warn('eviction manager: found conflicting containerfs eviction. Ignoring.', { err: w });
    this.d.logger.info('eviction manager: filesystem detection', {
      dedicatedImageFs: layout.dedicatedImageFs,
      splitImageFs: layout.splitContainerImageFs,
    });
    this.config = config;
    return config;
  }

  /** The pressure conditions the last round found (also while a round runs). */
  nodeConditions(): readonly PressureCondition[] {
    return this.state.nodeConditions;
  }

  /** The eviction manager's admit handler. */
  admit(pod: Pod): EvictionAdmitResult {
    return admitUnderPressure(pod, this.state.nodeConditions);
  }

  start(): void {
    if (this.stopped || this.timer) return;
    const arm = (ms: number): void => {
      this.timer = this.d.clock.setTimer(ms, () => {
        if (this.stopped) return;
        this.running = this.synchronizeOnce().finally(() => {
          this.running = undefined;
          arm(this.d.monitoringPeriodMs ?? EvictionMonitoringPeriodMs);
        });
      });
    };
    arm(0);
  }

  /** Stops the loop; resolves when a round in flight has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.timer?.cancel();
    await this.running;
  }

  /** One round: synchronize, then act. Never throws. */
  async synchronizeOnce(): Promise<void> {
    const config = await this.configForRound();
    if (!config || this.stopped) return;
    let summary: Summary;
    let activePods: readonly Pod[];
    try {
      // The pods' stats only when this round may read them: known at once (a pod with a local storage limit,
      // last round's thresholds), or else from the node's figures (a threshold met now).
      activePods = this.d.activePods();
      const pods = podStatsNeededRegardless({ config, state: this.state, activePods });
      summary = await this.d.summary({ pods });
      activePods = this.d.activePods();
      if (!pods && needsPodStats({ config, state: this.state, summary, activePods })) {
        summary = await this.d.summary({ pods: true });
        activePods = this.d.activePods();
      }
    } catch (err) {
      this.d.logger.warn('eviction manager: failed to get summary stats', { err: errorMessage(err) });
      return;
    }
    if (this.stopped) return;
    const before = this.state.nodeConditions;
    const result = synchronize({
      config,
      state: this.state,
      summary,
      activePods,
      now: this.d.clock.now(),
    });
    this.state = result.state;
    if (!sameConditions(before, result.nodeConditions)) this.d.onPressureChange?.(result.nodeConditions);

    if (result.localStorage.length > 0) {
      for (const e of result.localStorage) this.evict(e);
      await this.waitForCleanup(result.localStorage.map((e) => e.pod));
      return;
    }
    const reclaim = result.reclaim;
    if (!reclaim) return;
    this.d.logger.info('eviction manager: attempting to reclaim', { resource: reclaim.resource });
    this.d.recordNode(reclaim.event.type, reclaim.event.reason, reclaim.event.message);
    if (reclaim.nodeReclaim.length > 0 && (await this.reclaimNodeLevel(reclaim.nodeReclaim))) {
      try {
        if (reclaimResolved(result.thresholds, await this.d.summary({ pods: false }))) {
          this.d.logger.info('eviction manager: able to reduce resource pressure without evicting pods', {
            resource: reclaim.resource,
          });
          return;
        }
      } catch (err) {
        this.d.logger.warn('eviction manager: failed to get summary stats after reclaim', {
          err: errorMessage(err),
        });
      }
    }
    if (this.stopped) return;
    if (!reclaim.eviction) {
      this.d.logger.info('eviction manager: unable to evict any pods from the node', {
        resource: reclaim.resource,
      });
      return;
    }
    // The kubelet records how old the stats behind each threshold acted on are, once pods are ranked.
    const now = this.d.clock.now();
    for (const t of result.thresholds) {
      const observed = result.state.lastObservations.get(t.signal)?.time;
      if (observed) this.d.metrics?.statsAge(t.signal, Math.max(0, now - observed) / 1000);
    }
    this.evict(reclaim.eviction);
    await this.waitForCleanup([reclaim.eviction.pod]);
  }

  /** Runs each reclaim; true when at least one ran (so a fresh Summary may show relief). */
  private async reclaimNodeLevel(kinds: readonly NodeReclaim[]): Promise<boolean> {
    let ran = false;
    for (const kind of kinds) {
      try {
        if (await this.d.nodeReclaim(kind)) {
          ran = true;
        } else if (!this.unsupportedLogged.has(kind)) {
          this.unsupportedLogged.add(kind);
          this.d.logger.info('eviction manager: node-level reclaim not available on this node', { kind });
        }
      } catch (err) {
        this.d.logger.warn('eviction manager: node-level reclaim failed', { kind, err: errorMessage(err) });
      }
    }
    return ran;
  }

  private evict(e: PodEviction): void {
    const pod = e.pod;
    this.d.recordPod(pod, e.event.type, e.event.reason, e.event.message, e.event.annotations);
    this.d.logger.info('eviction manager: evicting pod', {
      pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
      message: e.status.message,
      gracePeriodSeconds: e.gracePeriodSeconds,
    });
    this.d.killPod(e);
    this.d.metrics?.evicted(e.signal);
  }

  /** kubelet waitForPodsCleanup: until every pod is cleaned up, at most PodCleanupTimeoutMs. */
  private async waitForCleanup(pods: readonly Pod[]): Promise<void> {
    const until = this.d.clock.now() + PodCleanupTimeoutMs;
    while (!this.stopped) {
      if (pods.every((p) => this.d.podCleanedUp(p))) return;
      if (this.d.clock.now() >= until) {
        this.d.logger.warn('eviction manager: timed out waiting for pods to be cleaned up', {
          pods: pods.map((p) => `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`),
        });
        return;
      }
      try {
        await this.d.clock.sleep(PodCleanupPollMs, this.abort.signal);
      } catch {
        return;
      }
    }
  }
}

function sameConditions(a: readonly PressureCondition[], b: readonly PressureCondition[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

/**
 * The node shutdown manager of one node (kubelet: nodeshutdown managerImpl and podManager.killPods). The
 * kubelet learns of a shutdown from logind; a VirtualNode's "host" shuts down when the VirtualNode is deleted
 * or its `spec.shutdown` is set, and `shutdown()` is that event (`cancel()` the cancellation). Then: the
 * `Shutdown` Event on the Node, the node status synced at once (Ready=False, "node is shutting down"), new
 * pods refused, and the active pods killed group by group (manager.ts), each group given its grace period
 * before the next starts.
 *
 * Invariants: one shutdown is processed at a time, as the kubelet's single event loop; a cancellation that
 * arrives while one is processed takes effect when it ends (the kubelet reads the next event only then);
 * with no configuration (the feature off) every method is a no-op and the node is never shutting down;
 * after stop() no kill is sent.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../../../api/core.js';
import type { Clock } from '../../../util/clock.js';
import { errorMessage } from '../../../util/errors.js';
import { shutdownEnabled, type ShutdownConfig } from '../config.js';
import { decodeShutdownState, encodeShutdownState, type ShutdownState } from '../state.js';
import {
  admitWhileShuttingDown,
  ExceededGracePeriodMessage,
  ExceededGracePeriodReason,
  groupWait,
  killsExceeded,
  NodeShutdownEventReason,
  podShutdownStatus,
  ShutdownCancelledMessage,
  ShutdownDetectedMessage,
  shutdownPlan,
  shutdownStatusErrors,
  type AdmitResult,
  type PodShutdown,
  type PodShutdownStatus,
} from '../manager.js';
import { replaceFile } from '../../../util/replacefile.js';

/** How often a group's pods are looked at while the manager waits for them. */
export const ShutdownPollMs = 500;

export interface NodeShutdownManagerDeps {
  config: ShutdownConfig;
  clock: Clock;
  /** The pods admitted and not terminal (kubelet: GetActivePods). */
  activePods: () => readonly Pod[];
  /** Kills the pod with its grace period; once stopped its status is `status`'s. Must not block. */
  killPod: (p: PodShutdown, status: PodShutdownStatus) => void;
  /** Whether the pod's containers are stopped (the kill has completed). */
  podStopped: (pod: Pod) => boolean;
  /** Whether the pod is stopped and its volumes are unmounted (kubelet WaitForAllPodsUnmount). */
  podCleanedUp: (pod: Pod) => boolean;
  recordPod: (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) => void;
  recordNode: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Writes the node status now (kubelet syncNodeStatus); must not block. */
  syncNodeStatus: () => void;
  logger: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  pollMs?: number;
  /**
   * kubelet_graceful_shutdown_{start,end}_time_seconds: a shutdown's start (the end set back to 0) and its end,
   * in seconds since the epoch; none without metrics.
   */
  metrics?: { started(epochSeconds: number): void; ended(epochSeconds: number): void };
  /**
   * The state file (`<root>/graceful_node_shutdown_state`): the last shutdown's times, written as it starts
   * and ends and read back into the gauges at start (with metrics only, as the kubelet's).
   */
  stateFile?: string;
}

/** The kubelet's timestamp of the gauges: whole seconds since the epoch. */
const epochSeconds = (ms: number): number => Math.floor(ms / 1000);

const podName = (pod: Pod): string => `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;

export class NodeShutdownManager {
  private shuttingDownNow = false;
  private processing: Promise<void> | undefined;
  private processed = false;
  private cancelPending = false;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly d: NodeShutdownManagerDeps) {
    if (this.enabled()) {
      const c = d.config;
      d.logger.info('creating node shutdown manager', {
        shutdownGracePeriodRequestedMs: c.shutdownGracePeriodMs,
        shutdownGracePeriodCriticalPodsMs: c.shutdownGracePeriodCriticalPodsMs,
        shutdownGracePeriodByPodPriority: c.groups,
      });
      this.restoreMetrics();
    }
  }

  /** kubelet setMetrics: the gauges as the state file left them (a missing file leaves them alone). */
  private restoreMetrics(): void {
    const { metrics, stateFile } = this.d;
    if (!metrics || !stateFile) return;
    let state: ShutdownState;
    try {
      state = decodeShutdownState(readFileSync(stateFile, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.d.logger.warn('Failed to load graceful shutdown state', {
          err: errorMessage(err),
          path: stateFile,
        });
      return;
    }
    if (state.startMs !== undefined) metrics.started(epochSeconds(state.startMs));
    if (state.endMs !== undefined) metrics.ended(epochSeconds(state.endMs));
  }

  /** Writes the state file whole (a temporary file renamed over it); a failure is logged, as the kubelet's. */
  private storeState(state: ShutdownState): Promise<void> {
    const { metrics, stateFile } = this.d;
    if (!metrics || !stateFile) return Promise.resolve();
    return mkdir(path.dirname(stateFile), { recursive: true })
      .then(() => replaceFile(stateFile, encodeShutdownState(state), 0o644))
      .catch((err: unknown) =>
        this.d.logger.warn('Failed to store graceful shutdown state', {
          err: errorMessage(err),
          path: stateFile,
        }),
      );
  }

  /** The configuration it runs with. */
  get config(): ShutdownConfig {
    return this.d.config;
  }

  /** Whether the node has a shutdown manager (kubelet: not the stub). */
  enabled(): boolean {
    return shutdownEnabled(this.d.config);
  }

  /** Whether the node is shutting down now (kubelet ShutdownStatus() != nil). */
  shuttingDown(): boolean {
    return this.shuttingDownNow;
  }

  /** The node's readiness errors from the shutdown manager: "node is shutting down", or none. */
  readinessErrors(): readonly string[] {
    return shutdownStatusErrors(this.shuttingDownNow);
  }

  /** The manager's admit handler (the kubelet's last). */
  admit(): AdmitResult {
    return admitWhileShuttingDown(this.shuttingDownNow);
  }

  /**
   * Whether the shutdown has been carried out: every group's pods stopped or their time up. True when the
   * feature is off (there is nothing to wait for).
   */
  completed(): boolean {
    return !this.enabled() || (this.shuttingDownNow && this.processed);
  }

  /** The host is shutting down. Starts processing once; again only after a cancellation. */
  shutdown(): void {
    if (!this.enabled() || this.stopped) return;
    this.cancelPending = false;
    if (this.shuttingDownNow) return;
    this.d.logger.info('shutdown manager detected new shutdown event', { event: 'shutdown' });
    this.d.recordNode('Normal', NodeShutdownEventReason, ShutdownDetectedMessage);
    this.shuttingDownNow = true;
    this.processed = false;
    this.d.syncNodeStatus();
    this.processing = this.processShutdownEvent().finally(() => {
      this.processing = undefined;
      this.processed = true;
      if (this.cancelPending) this.cancel();
    });
  }

  /** The shutdown was called off: the node admits pods and turns Ready again (pods already killed stay so). */
  cancel(): void {
    if (!this.enabled() || this.stopped || !this.shuttingDownNow) return;
    if (this.processing) {
      this.cancelPending = true;
      return;
    }
    this.cancelPending = false;
    this.d.logger.info('shutdown manager detected new shutdown event', { event: 'cancelled' });
    this.d.recordNode('Normal', NodeShutdownEventReason, ShutdownCancelledMessage);
    this.shuttingDownNow = false;
    this.processed = false;
    this.d.syncNodeStatus();
  }

  /** Stops processing; resolves when a shutdown in flight has stopped sending kills. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.processing;
  }

  /** kubelet processShutdownEvent and killPods: the groups in order, each waited for. Never throws. */
  private async processShutdownEvent(): Promise<void> {
    this.d.logger.info('shutdown manager processing shutdown event');
    const started = this.d.clock.now();
    const stored = this.storeState({ startMs: started });
    this.d.metrics?.started(epochSeconds(started));
    try {
      for (const group of shutdownPlan(this.d.config.groups, this.d.activePods())) {
        if (this.stopped) return;
        // No pod in this range: no wait for it either.
        if (group.pods.length === 0) continue;
        const killedAt = this.d.clock.now();
        for (const p of group.pods) {
          this.d.logger.info('shutdown manager killing pod with gracePeriod', {
            pod: podName(p.pod),
            gracePeriod: p.gracePeriodSeconds,
          });
          this.d.killPod(p, podShutdownStatus(p.pod));
        }
        const reported = new Set<string>();
        for (;;) {
          const now = this.d.clock.now();
          for (const late of killsExceeded(group.pods, killedAt, now, this.d.podStopped, reported)) {
            reported.add(late.pod.metadata.uid ?? '');
            this.d.recordPod(late.pod, 'Warning', ExceededGracePeriodReason, ExceededGracePeriodMessage);
            this.d.logger.info('shutdown manager failed killing pod', {
              pod: podName(late.pod),
              err: 'timeout waiting to kill pod',
            });
          }
          const step = groupWait(
            killedAt,
            group.shutdownGracePeriodSeconds,
            now,
            group.pods.every((p) => this.d.podCleanedUp(p.pod)),
            this.d.pollMs ?? ShutdownPollMs,
          );
          if (step.next === 'done') {
            this.d.logger.info('done waiting for all pods in group to terminate', {
              gracePeriod: group.shutdownGracePeriodSeconds,
              priority: group.priority,
            });
            break;
          }
          if (step.next === 'timedOut') {
            this.d.logger.info('shutdown manager pod killing time out', {
              gracePeriod: group.shutdownGracePeriodSeconds,
              priority: group.priority,
            });
            break;
          }
          await this.d.clock.sleep(step.ms, this.abort.signal);
        }
      }
    } catch (err) {
      if (!this.stopped)
        this.d.logger.warn('shutdown manager failed to process shutdown event', { err: errorMessage(err) });
    } finally {
      const ended = this.d.clock.now();
      // After the start's write, so the end's is the one that stays.
      await stored;
      await this.storeState({ startMs: started, endMs: ended });
      this.d.metrics?.ended(epochSeconds(ended));
      this.d.logger.info('shutdown manager completed processing shutdown event', {
        durationMs: ended - started,
      });
    }
  }
}

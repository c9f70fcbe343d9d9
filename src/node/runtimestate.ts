/**
 * What a node knows about its container runtime (kubelet: runtime.go runtimeState, refreshed by
 * updateRuntimeUp): the last status check, the runtime handlers and features that check reported, the
 * runtime's version, and the health checks (PLEG) that make the runtime unusable. One per node; its readers are the node status setters (Ready and the version fields), the
 * VirtualNode status, and the sync loop's gate on pod work. The node status loop refreshes it before every
 * status computation, so the node and its pods never disagree about the runtime.
 */
import type {
  Runtime,
  RuntimeCondition,
  RuntimeFeatures,
  RuntimeHandler,
  RuntimeVersion,
} from '../runtime/types.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorMessage } from '../util/errors.js';
import { silentLogger, type NodeLogger } from './api.js';

export const RUNTIME_NOT_CHECKED = 'container runtime status check may not have completed yet';
export const RUNTIME_DOWN = 'container runtime is down';

/** What a runtime status check found: not yet done, the call failed, or the runtime's conditions. */
export type RuntimeCheck =
  | { state: 'unchecked' }
  | { state: 'failed'; error: string }
  | { state: 'ok'; conditions: RuntimeCondition[] };

function conditionString(c: RuntimeCondition | undefined, type: string): string {
  // The kubelet prints the CRI condition with %v: "RuntimeReady=false reason:X message:Y".
  return c
    ? `${c.type}=${String(c.status)} reason:${c.reason} message:${c.message}`
    : `${type}=false reason:ConditionMissing message:runtime reported no ${type} condition`;
}

/**
 * The answer when nothing is wrong, one shared frozen array: the sync loop asks before every input it
 * handles (thousands a second on a busy process) and a healthy node then allocates nothing.
 */
const NO_ERRORS: readonly string[] = Object.freeze([]);

/** Errors that make the runtime unusable for pods, in the kubelet's wording (runtimeErrors without health). */
export function runtimeCheckErrors(check: RuntimeCheck): readonly string[] {
  if (check.state === 'unchecked') return [RUNTIME_NOT_CHECKED];
  if (check.state === 'failed') return [RUNTIME_DOWN];
  const runtimeReady = check.conditions.find((c) => c.type === 'RuntimeReady');
  return runtimeReady?.status
    ? NO_ERRORS
    : [`container runtime not ready: ${conditionString(runtimeReady, 'RuntimeReady')}`];
}

/**
 * The Ready condition's errors in the kubelet's order and wording (runtime_state.go and updateRuntimeUp):
 * runtime, then health checks (PLEG and friends), then network. A network that is not ready does not count
 * when the node's pods use the host network, since no pod then needs the runtime's network.
 */
export function readinessErrors(
  check: RuntimeCheck,
  hostNetwork: boolean,
  healthErrors: readonly string[],
): string[] {
  const errors = [...runtimeCheckErrors(check), ...healthErrors];
  if (check.state === 'ok' && !hostNetwork) {
    const networkReady = check.conditions.find((c) => c.type === 'NetworkReady');
    if (!networkReady?.status) {
      errors.push(`container runtime network not ready: ${conditionString(networkReady, 'NetworkReady')}`);
    }
  }
  return errors;
}

/** Rejects with DeadlineExceeded if `p` takes longer than `ms` on `clock`. */
export function withTimeout<T>(p: Promise<T>, ms: number, clock: Clock, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = clock.setTimer(ms, () =>
      reject(new KindError('DeadlineExceeded', `${what}: no answer within ${ms} ms`)),
    );
    p.then(
      (v) => {
        t.cancel();
        resolve(v);
      },
      (err: unknown) => {
        t.cancel();
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

export interface RuntimeStateOptions {
  nodeName: string;
  runtime: Pick<Runtime, 'version' | 'status' | 'updatePodCIDR'>;
  clock: Clock;
  /** Deadline of each runtime call (default 5 s). */
  timeoutMs?: number;
  /** Extra errors, e.g. "PLEG is not healthy: ..."; empty when healthy. */
  healthChecks?: () => readonly string[];
  logger?: NodeLogger;
}

/** Invariants: one refresh in flight at a time (callers share it); a failed version call keeps the last one. */
export class RuntimeState {
  private check: RuntimeCheck = { state: 'unchecked' };
  private handlers: readonly RuntimeHandler[] = [];
  private features: RuntimeFeatures | undefined;
  private runtimeVersion: RuntimeVersion | undefined;
  private refreshing: Promise<void> | undefined;
  private lastOk: number | undefined;
  /** The pod CIDR last handed to the runtime (kubelet runtimeState.podCIDR). */
  private appliedPodCIDR = '';
  private readonly timeoutMs: number;
  private readonly logger: NodeLogger;

  constructor(private readonly o: RuntimeStateOptions) {
    this.timeoutMs = o.timeoutMs ?? 5_000;
    this.logger = o.logger ?? silentLogger;
  }

  /** kubelet updateRuntimeUp: asks the runtime for its status and version. Never rejects. */
  update(): Promise<void> {
    this.refreshing ??= Promise.all([this.refreshVersion(), this.refreshStatus()]).then(
      () => {
        this.refreshing = undefined;
      },
      () => {
        this.refreshing = undefined;
      },
    );
    return this.refreshing;
  }

  /**
   * kubelet updatePodCIDR: hands the Node's pod CIDR to the runtime when it differs from the one handed last;
   * true when it changed. A runtime without addressing of the control plane's (sim) takes none. Never
   * rejects: a failure is logged and tried again on the next status round, as the kubelet does.
   */
  async updatePodCIDR(podCIDR: string): Promise<boolean> {
    if (podCIDR === '' || podCIDR === this.appliedPodCIDR) return false;
    const { runtime } = this.o;
    if (!runtime.updatePodCIDR) return false;
    try {
      await withTimeout(
        runtime.updatePodCIDR(podCIDR),
        this.timeoutMs,
        this.o.clock,
        'runtime pod CIDR update',
      );
    } catch (err) {
      this.logger.warn('handing the pod CIDR to the container runtime failed', {
        node: this.o.nodeName,
        podCIDR,
        error: errorMessage(err),
      });
      return false;
    }
    this.logger.info('pod CIDR handed to the container runtime', { node: this.o.nodeName, podCIDR });
    this.appliedPodCIDR = podCIDR;
    return true;
  }

  get podCIDR(): string {
    return this.appliedPodCIDR;
  }

  /** Only the version (registration, before the first status check). Never rejects. */
  refreshVersion(): Promise<void> {
    return withTimeout(this.o.runtime.version(), this.timeoutMs, this.o.clock, 'runtime version').then(
      (v) => {
        this.runtimeVersion = v;
      },
      (err: unknown) => {
        // The kubelet asks every time; on failure it keeps what it had.
        this.logger.warn('container runtime version check failed', {
          node: this.o.nodeName,
          error: errorMessage(err),
        });
      },
    );
  }

  private async refreshStatus(): Promise<void> {
    try {
      const status = await withTimeout(
        this.o.runtime.status(),
        this.timeoutMs,
        this.o.clock,
        'runtime status',
      );
      this.check = { state: 'ok', conditions: status.conditions };
      // As the kubelet's updateRuntimeUp: each answer replaces them; a failed check keeps the last.
      this.handlers = status.handlers;
      this.features = status.features;
      this.lastOk = this.o.clock.now();
    } catch (err) {
      this.check = { state: 'failed', error: errorMessage(err) };
      this.logger.warn('container runtime status check failed', {
        node: this.o.nodeName,
        error: errorMessage(err),
      });
    }
  }

  /** The runtime handlers the last answered status reported (kubelet runtimeState.runtimeHandlers). */
  runtimeHandlers(): readonly RuntimeHandler[] {
    return this.handlers;
  }

  /** The runtime features the last answered status reported; undefined when it reported none. */
  runtimeFeatures(): RuntimeFeatures | undefined {
    return this.features;
  }

  get lastCheck(): RuntimeCheck {
    return this.check;
  }

  get version(): RuntimeVersion | undefined {
    return this.runtimeVersion;
  }

  /** Clock time of the last status check that answered. */
  get lastSuccess(): number | undefined {
    return this.lastOk;
  }

  healthErrors(): readonly string[] {
    if (!this.o.healthChecks) return NO_ERRORS;
    try {
      return this.o.healthChecks();
    } catch (err) {
      return [`health check failed: ${errorMessage(err)}`];
    }
  }

  /** kubelet runtimeErrors: why pods cannot be synced now (runtime, then health checks); empty when they can. */
  runtimeErrors(): readonly string[] {
    const runtime = runtimeCheckErrors(this.check);
    const health = this.healthErrors();
    if (health.length === 0) return runtime;
    return runtime.length === 0 ? health : [...runtime, ...health];
  }

  /** The node's Ready errors: runtimeErrors plus the network unless pods use the host network. */
  readinessErrors(hostNetwork: boolean): string[] {
    return readinessErrors(this.check, hostNetwork, this.healthErrors());
  }

  /** RuntimeReady as last checked, with the reason when it is not (for the VirtualNode status). */
  runtimeReady(): { ready: boolean; message: string | undefined } {
    const errors = runtimeCheckErrors(this.check);
    if (this.check.state === 'failed') return { ready: false, message: this.check.error };
    return { ready: errors.length === 0, message: errors[0] };
  }
}

/**
 * Shutdown order of a pod's containers when it has sidecars (kubelet: kuberuntime_termination_order.go).
 */
import { isRestartableInitContainer, type Pod } from '../../api/core.js';
import type { ManagerContext } from './shell/context.js';

/**
 * Shutdown order of a pod with sidecars (kubelet: terminationOrdering): regular containers stop first; each
 * running sidecar waits for every regular container and for the sidecars after it, within its grace period.
 */
export class TerminationOrdering {
  private readonly terminated = new Map<string, { done: Promise<void>; resolve: () => void }>();
  private readonly prereqs = new Map<string, Promise<void>[]>();

  constructor(
    pod: Pod,
    runningNames: readonly string[],
    private readonly clock: ManagerContext['clock'],
  ) {
    const running = new Set(runningNames);
    const channel = (name: string): Promise<void> => {
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      this.terminated.set(name, { done, resolve });
      // Nothing waits on a container that is not running.
      if (!running.has(name)) resolve();
      return done;
    };
    const main = pod.spec.containers.map((c) => channel(c.name));
    let later: string | undefined;
    for (const ic of [...(pod.spec.initContainers ?? [])].reverse()) {
      channel(ic.name);
      if (!isRestartableInitContainer(ic)) continue;
      const deps = [...main];
      if (later !== undefined) deps.push(this.terminated.get(later)!.done);
      this.prereqs.set(ic.name, deps);
      later = ic.name;
    }
  }

  /** Waits until `name` may stop, at most `graceSeconds`; returns the seconds waited. */
  async waitForTurn(name: string, graceSeconds: number): Promise<number> {
    if (graceSeconds <= 0) return 0;
    const deps = this.prereqs.get(name) ?? [];
    if (deps.length === 0) return 0;
    const start = this.clock.now();
    const stop = new AbortController();
    await Promise.race([
      Promise.all(deps),
      this.clock.sleep(graceSeconds * 1000, stop.signal).catch(() => undefined),
    ]);
    stop.abort();
    return (this.clock.now() - start) / 1000;
  }

  containerTerminated(name: string): void {
    this.terminated.get(name)?.resolve();
  }
}

/**
 * Container lifecycle hooks (kubelet: pkg/kubelet/lifecycle/handlers.go, handlerRunner.Run): postStart and
 * preStop handlers of type exec (through the runtime's ExecSync), httpGet (through an injected getter) and
 * sleep (on the injected clock). A failure yields the kubelet's message, which the caller logs and uses as the
 * start failure's message; events never carry it (it may contain secrets).
 */
import type { Container, ContainerPort, LifecycleHandler, Pod } from '../../../api/core.js';
import type { Runtime } from '../../../runtime/types.js';
import type { Clock } from '../../../util/clock.js';
import { errorMessage, KindError } from '../../../util/errors.js';
import { formatPod } from '../../backoff.js';

/** Performs an HTTP GET; rejects on a transport failure. The status code does not decide success (kubelet). */
export type HookHttpGet = (
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
) => Promise<{ status: number }>;

export interface HookRunnerDeps {
  /** `capabilities.probePort`, when the runtime has it, answers httpGet hooks without the network (sim). */
  runtime: Pick<Runtime, 'execSync'> & { capabilities?: Pick<Runtime['capabilities'], 'probePort'> };
  clock: Pick<Clock, 'sleep'>;
  httpGet: HookHttpGet;
  /** Time limit of an httpGet hook request. */
  httpTimeoutMs: number;
}

export interface HookInvocation {
  containerId: string;
  pod: Pod;
  container: Pick<Container, 'name' | 'ports'>;
  handler: LifecycleHandler;
  /** The pod's primary IP: the host of an httpGet hook without `host`. */
  podIP: string;
  /** Aborting ends a sleep hook early (as the kubelet's context does). */
  signal?: AbortSignal;
}

export type HookOutcome = { ok: true } | { ok: false; error: Error; message: string };

/** The User-Agent the kubelet's lifecycle HTTP requests carry (`kube-lifecycle/<major>.<minor>`). */
export const LifecycleUserAgent = 'kube-lifecycle/1.33';

/** Go's `%v` of a string slice: `[a b c]`. */
function goList(items: readonly string[]): string {
  return `[${items.join(' ')}]`;
}

/** Resolves a port reference: a number, a numeric string, or a named port of the container. */
export function resolvePort(port: number | string, ports: readonly ContainerPort[] | undefined): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (ports ?? []).find((p) => p.name === port);
  if (named) return named.containerPort;
  throw new KindError('InvalidArgument', `couldn't find port: ${port} in container ports`, { port });
}

/** The URL of an httpGet handler (kubelet httpprobe.NewRequestForHTTPGetAction). */
export function hookURL(
  action: NonNullable<LifecycleHandler['httpGet']>,
  container: Pick<Container, 'ports'>,
  podIP: string,
): string {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  const host = action.host || podIP;
  if (!host) throw new KindError('Unavailable', 'failed to find networking container: the pod has no IP');
  const port = resolvePort(action.port, container.ports);
  const hostPort = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
  let path = action.path ?? '';
  if (path !== '' && !path.startsWith('/')) path = `/${path}`;
  return `${scheme}://${hostPort}${path}`;
}

function hookHeaders(action: NonNullable<LifecycleHandler['httpGet']>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of action.httpHeaders ?? []) headers[h.name] = h.value;
  const has = (name: string): boolean =>
    Object.keys(headers).some((k) => k.toLowerCase() === name.toLowerCase());
  if (!has('User-Agent')) headers['User-Agent'] = LifecycleUserAgent;
  if (!has('Accept')) headers.Accept = '*/*';
  return headers;
}

/**
 * Runs one lifecycle handler. Never throws: a failure comes back with the kubelet's message
 * (`Exec lifecycle hook ([cmd]) for Container "c" in Pod "p_ns(uid)" failed - error: ..., message: "..."`, and
 * the HTTP and Sleep equivalents).
 */
export async function runLifecycleHandler(deps: HookRunnerDeps, inv: HookInvocation): Promise<HookOutcome> {
  const { handler, container, pod } = inv;
  const where = `for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))}`;
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    let output = '';
    try {
      // Timeout 0: the kubelet runs hooks without an exec deadline.
      const r = await deps.runtime.execSync(inv.containerId, cmd, 0);
      output = r.stdout.toString() + r.stderr.toString();
      if (r.exitCode === 0) return { ok: true };
      const error = new KindError(
        'Unknown',
        `command '${cmd.join(' ')}' exited with ${r.exitCode}: ${r.stderr.toString()}`,
        {
          exitCode: r.exitCode,
        },
      );
      return {
        ok: false,
        error,
        message: `Exec lifecycle hook (${goList(cmd)}) ${where} failed - error: ${error.message}, message: ${JSON.stringify(output)}`,
      };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      return {
        ok: false,
        error,
        message: `Exec lifecycle hook (${goList(cmd)}) ${where} failed - error: ${errorMessage(err)}, message: ${JSON.stringify(output)}`,
      };
    }
  }
  if (handler.httpGet) {
    const action = handler.httpGet;
    try {
      const url = hookURL(action, container, inv.podIP);
      const answer = deps.runtime.capabilities?.probePort;
      if (answer) {
        // The runtime's made-up network (the simulated one): its pod IPs lead nowhere real. As for a real GET,
        // only a failure to connect fails the hook; an HTTP error status does not.
        const out = answer(inv.containerId, resolvePort(action.port, container.ports), 'http');
        if (out.result === 'failure' && out.output.startsWith('dial ')) {
          throw new Error(`Get ${JSON.stringify(url)}: ${out.output}`);
        }
        return { ok: true };
      }
      await deps.httpGet(url, hookHeaders(action), deps.httpTimeoutMs);
      return { ok: true };
    } catch (err) {
      return {
        ok: false,
        error: err instanceof Error ? err : new Error(String(err)),
        message: `HTTP lifecycle hook (${action.path ?? ''}) ${where} failed - error: ${errorMessage(err)}`,
      };
    }
  }
  if (handler.sleep) {
    const seconds = handler.sleep.seconds;
    try {
      await deps.clock.sleep(seconds * 1000, inv.signal);
      return { ok: true };
    } catch {
      const error = new KindError('Unavailable', 'container terminated before sleep hook finished');
      return {
        ok: false,
        error,
        message: `Sleep lifecycle hook (${seconds}) ${where} failed - error: ${error.message}`,
      };
    }
  }
  const error = new KindError('InvalidArgument', `invalid handler: ${JSON.stringify(handler)}`);
  return { ok: false, error, message: `Cannot run handler: ${error.message}` };
}

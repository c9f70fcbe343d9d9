/**
 * The probe runner (kubelet: pkg/kubelet/prober/prober.go): the shell half of the prober. It picks the
 * protocol for a probe (exec.ts, http.ts, tcp.ts, grpc.ts), lets the runtime answer network probes when its
 * capabilities say it does (RuntimeCapabilities.probePort: the simulated runtime's pod IPs do not exist),
 * and turns the outcome into the kubelet's events and the worker's result.
 *
 * Outcomes and wording follow the kubelet:
 * - a failure records a Warning `Unhealthy` event `<Type> probe failed: <output>`; a warning (an HTTP
 *   redirect that was not followed) records `ProbeWarning` `<Type> probe warning: <output>` and counts as
 *   success;
 * - an execution error (the probe could not be run: unknown container, bad port) is retried up to three
 *   times, then recorded as `<Type> probe errored: <error>` and rejected, so the worker throws the result
 *   away.
 */
import type { Container, ContainerStatus, Pod, Probe } from '../../../api/core.js';
import type { Runtime, RuntimeCapabilities } from '../../../runtime/types.js';
import { errorMessage, KindError } from '../../../util/errors.js';
import { containerFieldPath, containerSpec, type EventRecorderFunc } from '../../container/ref.js';
import { timingField, type ProbeOutcome } from '../doprobe.js';
import { execProbe } from '../exec.js';
import { grpcProbe, grpcProbeAnswer } from './grpc.js';
import { httpProbe, httpProbeAnswer, probeHeaders, probeURL } from './http.js';
import { resolveProbePort, type ProbeExecution } from '../probe.js';
import { containerIDKey } from '../results.js';
import { tcpProbe } from './tcp.js';
import type { ProbeMetricResult } from '../metrics.js';
import type { ProbeType } from '../types.js';
import type { ProbeRunner } from '../worker.js';

/** Attempts of one probe execution when it errors (kubelet: maxProbeRetries). */
export const MaxProbeRetries = 3;

export interface ProbeRunnerDeps {
  /** Runs exec probes; its capabilities say whether it answers network probes itself. */
  runtime: Pick<Runtime, 'execSync'> & { readonly capabilities: Pick<RuntimeCapabilities, 'probePort'> };
  /** Records events about the pod (kubelet wording); must not throw or block. */
  record: EventRecorderFunc;
  /** Called once per finished probe, for metrics (kubelet: prober_probe_total). */
  onProbe?: (probeType: ProbeType, result: ProbeMetricResult, pod: Pod, container: string) => void;
  logger?: { info(msg: string, meta?: Record<string, unknown>): void };
}

/** The capitalised probe type the kubelet's messages use (`Liveness probe failed: ...`). */
export function probeTypeTitle(t: ProbeType): string {
  return t.charAt(0).toUpperCase() + t.slice(1);
}

function noPodIP(): KindError {
  return new KindError('Unavailable', 'the pod has no IP to probe yet');
}

/**
 * One execution of `probe` against the container; throws or rejects when the probe cannot be run at all. A
 * runtime that answers port probes itself answers at once, without a promise (probes run by the thousand a
 * second on a large sim fleet).
 */
function runProbeOnce(
  deps: ProbeRunnerDeps,
  probe: Probe,
  pod: Pod,
  container: Container,
  runtimeId: string,
): ProbeExecution | Promise<ProbeExecution> {
  const timeoutSeconds = timingField(probe, 'timeoutSeconds', 1); // probeTiming's, without the object
  const timeoutMs = timeoutSeconds * 1000;
  const podIP = pod.status?.podIP ?? '';
  const answer = deps.runtime.capabilities.probePort;
  if (probe.exec) return execProbe(deps.runtime, runtimeId, probe.exec.command ?? [], timeoutSeconds);
  if (probe.httpGet) {
    const port = resolveProbePort(probe.httpGet.port, container.ports);
    const host = probe.httpGet.host || podIP;
    const url = probeURL(probe.httpGet, host || '0.0.0.0', port);
    if (answer) return httpProbeAnswer(url, answer(runtimeId, port, 'http'));
    if (!host) throw noPodIP();
    return httpProbe(url, probeHeaders(probe.httpGet), timeoutMs);
  }
  if (probe.tcpSocket) {
    const port = resolveProbePort(probe.tcpSocket.port, container.ports);
    const host = probe.tcpSocket.host || podIP;
    if (answer) return answer(runtimeId, port, 'tcp');
    if (!host) throw noPodIP();
    return tcpProbe(host, port, timeoutMs);
  }
  if (probe.grpc) {
    const port = resolveProbePort(probe.grpc.port, undefined);
    if (answer) return grpcProbeAnswer(podIP, port, timeoutMs, answer(runtimeId, port, 'tcp'));
    if (!podIP) throw noPodIP();
    return grpcProbe(podIP, port, probe.grpc.service ?? '', timeoutMs);
  }
  throw new KindError('InvalidArgument', `missing probe handler for container ${container.name}`);
}

/**
 * Records `<Type> probe <what>` about the container. Its wording and field path are made only here, when an
 * event is recorded, not on every probe.
 */
function probeEvent(
  deps: ProbeRunnerDeps,
  pod: Pod,
  probeType: ProbeType,
  container: string,
  reason: string,
  what: string,
): void {
  try {
    const message = `${probeTypeTitle(probeType)} probe ${what}`;
    deps.record(pod, 'Warning', reason, message, containerFieldPath(pod, container));
  } catch {
    // Events are best effort; a recorder problem must not change the probe's outcome.
  }
}

/**
 * The ProbeRunner for the prober manager: runs the probe (retrying execution errors up to three times),
 * records the kubelet's events, and resolves to the worker's outcome. Rejects only on an execution error.
 */
export function createProbeRunner(deps: ProbeRunnerDeps): ProbeRunner {
  return async (
    probe: Probe,
    pod: Pod,
    containerStatus: ContainerStatus,
    containerID: string,
    probeType: ProbeType,
  ): Promise<ProbeOutcome> => {
    const name = containerStatus.name;
    const container = containerSpec(pod, name);
    // Made only when needed: an error captures a stack trace, which on every probe was a cost of its own.
    let lastError: unknown;
    let execution: ProbeExecution | undefined;
    if (container) {
      for (let attempt = 0; attempt < MaxProbeRetries && !execution; attempt++) {
        try {
          const once = runProbeOnce(deps, probe, pod, container, containerIDKey(containerID));
          execution = once instanceof Promise ? await once : once;
        } catch (err) {
          lastError = err;
        }
      }
    }
    if (!execution) {
      lastError ??= new KindError('NotFound', `container ${name} is not in the pod spec`);
      probeEvent(deps, pod, probeType, name, 'Unhealthy', `errored: ${errorMessage(lastError)}`);
      deps.onProbe?.(probeType, 'unknown', pod, name);
      deps.logger?.info('probe errored', { probeType, container: name, err: errorMessage(lastError) });
      throw lastError;
    }
    switch (execution.result) {
      case 'success':
        deps.onProbe?.(probeType, 'successful', pod, name);
        return 'success';
      case 'warning':
        probeEvent(deps, pod, probeType, name, 'ProbeWarning', `warning: ${execution.output}`);
        deps.onProbe?.(probeType, 'successful', pod, name);
        return 'warning';
      case 'failure':
        probeEvent(deps, pod, probeType, name, 'Unhealthy', `failed: ${execution.output}`);
        deps.onProbe?.(probeType, 'failed', pod, name);
        return 'failure';
      case 'unknown':
        deps.onProbe?.(probeType, 'unknown', pod, name);
        return 'failure';
      default: {
        const never: never = execution.result;
        throw new KindError('Internal', `unknown probe result ${String(never)}`);
      }
    }
  };
}

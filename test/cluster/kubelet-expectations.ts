/**
 * What a real kubelet (Kubernetes 1.33+) writes for a pod, as assertions: the Events of
 * pkg/kubelet/events, pkg/kubelet/images/image_manager.go, pkg/kubelet/kuberuntime (Created, Started, Killing,
 * BackOff) and pkg/kubelet/prober (Unhealthy), with the kubelet as source and the container as fieldPath; and
 * the status fields generateAPIPodStatus sets (conditions with their reasons, IPs, QoS class, start time).
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { CoreEvent } from '../../src/kube/events.js';

/** A Go time.Duration truncated to milliseconds, as `%v` prints it: `0s`, `734ms`, `1.204s`, `1m2.5s`. */
const GO_DURATION = String.raw`(?:0s|[1-9]\d{0,2}ms|(?:\d+h)?(?:\d+m)?\d+(?:\.\d{1,3})?s)`;
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The kubelet's event messages, by reason. */
export const kubeletMessage = {
  pulling: (image: string): string => `Pulling image "${image}"`,
  // KubeletEnsureSecretPulledImages (on in v1.37) adds that the pod may use it.
  alreadyPresent: (image: string): string =>
    `Container image "${image}" already present on machine and can be accessed by the pod`,
  created: (container: string): string => `Created container: ${container}`,
  started: (container: string): string => `Started container ${container}`,
  stopping: (container: string): string => `Stopping container ${container}`,
  livenessRestart: (container: string): string =>
    `Container ${container} failed liveness probe, will be restarted`,
  unhealthy: (probe: 'Liveness' | 'Readiness' | 'Startup', output: string): string =>
    `${probe} probe failed: ${output}`,
  backOff: (container: string, pod: Pod): string =>
    `Back-off restarting failed container ${container} in pod ${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
  /** The waiting state's message while in crash-loop back-off (kuberuntime_manager.go doBackOff). */
  crashLoopWaiting: (backOff: string, container: string, pod: Pod): string =>
    `back-off ${backOff} restarting failed container=${container} pod=${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
};

/** `Successfully pulled image "<image>" in <d> (<d> including waiting). Image size: <n> bytes.` */
export function PULLED_FRESH(image: string): RegExp {
  return new RegExp(
    `^Successfully pulled image ${escape(JSON.stringify(image))} in ${GO_DURATION} \\(${GO_DURATION} including waiting\\)\\. Image size: \\d+ bytes\\.$`,
  );
}

/**
 * Finds the Event of `reason` whose message matches, and checks it is the kubelet's: its type, source
 * `{component: kubelet, host: <node>}`, reporting component and instance, and the container's fieldPath.
 */
export function expectKubeletEvent(
  events: readonly CoreEvent[],
  want: {
    reason: string;
    message: string | RegExp;
    type?: 'Normal' | 'Warning';
    node: string;
    container?: string;
    initContainer?: boolean;
  },
): CoreEvent {
  const matches = (m: string): boolean =>
    typeof want.message === 'string' ? m === want.message : want.message.test(m);
  const ev = events.find((e) => e.reason === want.reason && matches(e.message));
  const seen = events.map((e) => `${e.reason}: ${e.message}`).join('\n  ');
  expect(ev, `a ${want.reason} event "${String(want.message)}" among:\n  ${seen}`).to.not.equal(undefined);
  expect(ev!.type, `${want.reason} type`).to.equal(want.type ?? 'Normal');
  expect(ev!.source, `${want.reason} source`).to.deep.equal({ component: 'kubelet', host: want.node });
  expect(ev!.reportingComponent, `${want.reason} reportingComponent`).to.equal('kubelet');
  expect(ev!.reportingInstance, `${want.reason} reportingInstance`).to.equal(want.node);
  expect(ev!.involvedObject.kind).to.equal('Pod');
  if (want.container !== undefined) {
    const field = want.initContainer ? 'initContainers' : 'containers';
    expect(ev!.involvedObject.fieldPath, `${want.reason} fieldPath`).to.equal(
      `spec.${field}{${want.container}}`,
    );
  }
  return ev!;
}

type ConditionWant = readonly [status: 'True' | 'False', reason?: string, message?: string];

/** The pod's conditions are exactly these (type -> status, reason, message; absent reason = none). */
export function expectPodConditions(pod: Pod, want: Record<string, ConditionWant>): void {
  const got = Object.fromEntries(
    (pod.status?.conditions ?? []).map((c) => [
      c.type,
      [c.status, c.reason, c.message].filter((v, i) => i === 0 || v !== undefined),
    ]),
  );
  const expected = Object.fromEntries(Object.entries(want).map(([t, w]) => [t, [...w]]));
  expect(got, `conditions of ${pod.metadata.name}`).to.deep.equal(expected);
}

/** A Running, Ready pod without init containers: every condition True, no reason. */
export const READY_CONDITIONS: Record<string, ConditionWant> = {
  PodReadyToStartContainers: ['True'],
  Initialized: ['True'],
  Ready: ['True'],
  ContainersReady: ['True'],
  PodScheduled: ['True'],
};

/** A pod whose containers ran to completion (its sandbox is gone): phase Succeeded or Failed. */
export function terminalConditions(phase: 'Succeeded' | 'Failed'): Record<string, ConditionWant> {
  const reason = phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed';
  return {
    PodReadyToStartContainers: ['False'],
    // Only a Succeeded pod says why it is initialized; a Failed one is, because a container started.
    Initialized: phase === 'Succeeded' ? ['True', 'PodCompleted'] : ['True'],
    Ready: ['False', reason],
    ContainersReady: ['False', reason],
    PodScheduled: ['True'],
  };
}

/** hostIP(s) = the node's InternalIP, podIP(s) as given (singular and plural agree), QoS class, startTime. */
export function expectPodStatusBasics(
  pod: Pod,
  want: { hostIP: string; podIP: string | RegExp; qosClass?: string },
): void {
  const s = pod.status!;
  expect(s.hostIP, 'hostIP').to.equal(want.hostIP);
  expect(s.hostIPs, 'hostIPs').to.deep.equal([{ ip: want.hostIP }]);
  if (typeof want.podIP === 'string') expect(s.podIP, 'podIP').to.equal(want.podIP);
  else expect(s.podIP, 'podIP').to.match(want.podIP);
  expect(s.podIPs, 'podIPs').to.deep.equal([{ ip: s.podIP }]);
  expect(s.qosClass, 'qosClass').to.equal(want.qosClass ?? 'BestEffort');
  expect(s.startTime, 'startTime').to.be.a('string');
  const start = Date.parse(s.startTime!);
  expect(start, 'startTime not in the future').to.be.at.most(Date.now() + 1000);
  expect(start, 'startTime not before the pod was created').to.be.at.least(
    Date.parse(pod.metadata.creationTimestamp!) - 1000,
  );
}

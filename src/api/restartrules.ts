/**
 * Whether a container that exited comes back, by its own restart policy and rules or else by the pod's
 * (ContainerRestartRules; the kubelet reads them through pkg/api/v1/pod/util.go). Pure and total: fields of
 * an unexpected shape are skipped as the kubelet skips values it does not know.
 */
import { podRestartPolicy, type Container, type ContainerRestartRule, type PodSpec } from './core.js';

type RestartFields = Pick<Container, 'restartPolicy' | 'restartPolicyRules'>;

function exitCodeListed(values: unknown, exitCode: number): boolean {
  return Array.isArray(values) && values.some((v) => v === exitCode);
}

/**
 * The first rule whose exit-code requirement `exitCode` meets, in the container's order. A rule without
 * `exitCodes`, or with an operator other than `In`/`NotIn`, never matches.
 */
export function findMatchingRestartRule(
  c: RestartFields,
  exitCode: number,
): ContainerRestartRule | undefined {
  const rules: unknown = c.restartPolicyRules;
  if (!Array.isArray(rules)) return undefined;
  for (const rule of rules as unknown[]) {
    if (typeof rule !== 'object' || rule === null) continue;
    const on: unknown = (rule as ContainerRestartRule).exitCodes;
    if (typeof on !== 'object' || on === null) continue;
    const { operator, values } = on as { operator?: unknown; values?: unknown };
    const listed = exitCodeListed(values, exitCode);
    if ((operator === 'In' && listed) || (operator === 'NotIn' && !listed))
      return rule as ContainerRestartRule;
  }
  return undefined;
}

/**
 * Whether a container that exited with `exitCode` is to be started again. With a container-level
 * `restartPolicy`: a matching `Restart` or `RestartAllContainers` rule (RestartAllContainersOnContainerExits,
 * on in v1.37: the whole pod restarts, this container with it) restarts it; otherwise (no match, or another
 * action) the container's policy decides. Without one, rules are not read and the pod's policy decides (unset is Always; an
 * unknown container or pod policy falls through to the next level, an unknown pod policy means restart).
 */
export function containerShouldRestart(
  c: RestartFields,
  spec: Pick<PodSpec, 'restartPolicy'>,
  exitCode: number,
): boolean {
  if (c.restartPolicy !== undefined && c.restartPolicy !== null) {
    const action = findMatchingRestartRule(c, exitCode)?.action;
    if (action === 'Restart' || action === 'RestartAllContainers') return true;
    switch (c.restartPolicy) {
      case 'Always':
        return true;
      case 'OnFailure':
        return exitCode !== 0;
      case 'Never':
        return false;
      default:
        break;
    }
  }
  switch (podRestartPolicy(spec)) {
    case 'OnFailure':
      return exitCode !== 0;
    case 'Never':
      return false;
    default:
      return true;
  }
}

/** Whether a rule of `c` that `exitCode` matches first asks to restart the whole pod in place. */
export function restartsAllContainers(c: RestartFields, exitCode: number): boolean {
  return findMatchingRestartRule(c, exitCode)?.action === 'RestartAllContainers';
}

/**
 * Whether the pod may restart all its containers in place: some init or regular container has a
 * `RestartAllContainers` rule (kubelet: podutil.AllContainersCouldRestart). Such a pod gets the
 * AllContainersRestarting condition, and its containers may leave a terminated state.
 */
export function allContainersCouldRestart(spec: Pick<PodSpec, 'initContainers' | 'containers'>): boolean {
  const hasRule = (c: RestartFields): boolean =>
    Array.isArray(c.restartPolicyRules) &&
    c.restartPolicyRules.some(
      (r: unknown) =>
        typeof r === 'object' && r !== null && (r as ContainerRestartRule).action === 'RestartAllContainers',
    );
  return (spec.initContainers ?? []).some(hasRule) || (spec.containers ?? []).some(hasRule);
}

/**
 * Whether a container that is not (or not yet) exited with a code may run again, as the kubelet judges a
 * running container failing a probe or an init container in an unknown state: the container's own policy
 * if set (anything but `Never`), else the pod's (anything but `Never`). Rules are not read: there is no
 * exit code to match.
 */
export function mayRestartWithoutExitCode(c: RestartFields, spec: Pick<PodSpec, 'restartPolicy'>): boolean {
  if (c.restartPolicy !== undefined && c.restartPolicy !== null) return c.restartPolicy !== 'Never';
  return podRestartPolicy(spec) !== 'Never';
}

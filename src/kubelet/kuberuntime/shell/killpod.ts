/**
 * Killing a pod (kubelet: kuberuntime_manager.go killPodWithSyncResult): every running container stopped in
 * parallel, each with its preStop hook and grace period (sidecars after the regular containers, when the pod
 * has any), then every sandbox. Failures are results, never thrown; what is already gone counts as stopped.
 */
import type { Pod } from '../../../api/core.js';
import { isRestartableInitContainer } from '../../../api/core.js';
import { errorMessage } from '../../../util/errors.js';
import type { RuntimePodStatus } from '../../container/types.js';
import type { ManagerContext } from './context.js';
import { killContainer } from './killcontainer.js';
import { TerminationOrdering } from '../terminationorder.js';
import { stopPodSandbox } from './sandboxes.js';
import { failResult, SyncResultBuilder, type PodSyncResult } from './syncresult.js';

/**
 * `pod` may be undefined (the API object is gone): the specs are then restored from the containers' labels.
 * `gracePeriodOverride` replaces the pod's grace period when set.
 */
export async function killPodWithSyncResult(
  ctx: ManagerContext,
  pod: Pod | undefined,
  running: RuntimePodStatus,
  gracePeriodOverride: number | undefined,
): Promise<PodSyncResult> {
  const b = new SyncResultBuilder();
  const containers = running.containers.filter((c) => c.state === 'running');
  const ordering =
    pod && (pod.spec.initContainers ?? []).some(isRestartableInitContainer)
      ? new TerminationOrdering(
          pod,
          containers.map((c) => c.name),
          ctx.clock,
        )
      : undefined;
  const podIP = running.ips[0] ?? (pod?.spec.hostNetwork ? ctx.node.nodeIP : '');
  await Promise.all(
    containers.map(async (c) => {
      const r = b.add('KillContainer', c.name);
      try {
        await killContainer(ctx, pod, c.id, c.name, '', 'Unknown', {
          ...(gracePeriodOverride !== undefined ? { gracePeriodOverride } : {}),
          ...(ordering ? { ordering } : {}),
          podIP,
        });
      } catch (err) {
        failResult(r, 'KillContainerError', errorMessage(err));
        ctx.logger.warn('Kill container failed', {
          pod: `${running.namespace}/${running.name}`,
          container: c.name,
          err: errorMessage(err),
        });
      }
    }),
  );
  const r = b.add('KillPodSandbox', running.uid);
  for (const sb of running.sandboxes) {
    try {
      await stopPodSandbox(ctx, sb.id);
    } catch (err) {
      failResult(r, 'KillPodSandboxError', errorMessage(err));
      ctx.logger.warn('Failed to stop sandbox', { sandboxID: sb.id, err: errorMessage(err) });
    }
  }
  return b.build({ podUID: running.uid });
}

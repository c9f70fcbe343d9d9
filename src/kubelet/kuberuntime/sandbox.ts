/**
 * Whether a pod needs a new sandbox (kubelet: kuberuntime/util.PodSandboxChanged). Pure.
 */
import type { Pod } from '../../api/core.js';
import type { RuntimePodStatus, SandboxID } from '../container/types.js';

export interface SandboxChange {
  /** True when the pod must get a new sandbox (and the old one, if any, be killed). */
  changed: boolean;
  /** The attempt number the next sandbox gets, or the current one's when nothing changes. */
  attempt: number;
  /** The sandbox to reuse or to kill; "" when there is none (or it must not be reused at all). */
  sandboxID: SandboxID | '';
}

/**
 * Decides on the newest sandbox record (records are newest first). The first matching rule wins:
 * no sandbox; several ready sandboxes; newest not ready; wrong network namespace mode; a pod-network
 * sandbox whose runtime reported network status without an IP; otherwise keep it.
 */
export function podSandboxChanged(pod: Pod, status: Pick<RuntimePodStatus, 'sandboxes'>): SandboxChange {
  const sandboxes = status.sandboxes;
  const first = sandboxes[0];
  if (!first) return { changed: true, attempt: 0, sandboxID: '' };

  const next = first.attempt + 1;
  const readyCount = sandboxes.filter((s) => s.state === 'ready').length;
  if (readyCount > 1) return { changed: true, attempt: next, sandboxID: first.id };
  if (first.state !== 'ready') return { changed: true, attempt: next, sandboxID: first.id };

  const hostNetwork = pod.spec.hostNetwork === true;
  const wantNetns = hostNetwork ? 'node' : 'pod';
  if (first.netns !== wantNetns) return { changed: true, attempt: next, sandboxID: '' };

  // ip === null means the runtime reported no network status at all; only an empty IP counts here.
  if (!hostNetwork && first.ip === '') return { changed: true, attempt: next, sandboxID: first.id };

  return { changed: false, attempt: first.attempt, sandboxID: first.id };
}

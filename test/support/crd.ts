/** The VirtualNode CRD on a test control plane. */
import path from 'node:path';
import { kubectl, REPO_ROOT, type ControlPlane } from './controlplane.js';

/** Applies crds/virtualnode.yaml and waits until it is Established and served; throws with kubectl's words if not. */
export async function applyCrd(cp: Pick<ControlPlane, 'kubeconfigPath'>): Promise<void> {
  const crd = await kubectl(cp, ['apply', '-f', path.join(REPO_ROOT, 'crds/virtualnode.yaml')]);
  if (crd.code !== 0) throw new Error(`applying the CRD failed: ${crd.stderr}`);
  await waitForCrd(cp);
}

/** Waits until the VirtualNode CRD (applied by whatever means) is Established and served. */
export async function waitForCrd(cp: Pick<ControlPlane, 'kubeconfigPath'>): Promise<void> {
  // Polled rather than `kubectl wait`: that fails at once ("accessor error") while a just-created CRD has no
  // status.conditions yet.
  const established = Date.now() + 60_000;
  for (;;) {
    const got = await kubectl(cp, [
      'get',
      'crd/virtualnodes.kubelet-operator.dev',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Established")].status}',
    ]);
    if (got.code === 0 && got.stdout.trim() === 'True') break;
    if (Date.now() > established)
      throw new Error(`the CRD was not Established: ${got.code === 0 ? got.stdout : got.stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // Established comes a moment before the resource's storage serves lists (429 "storage is
  // (re)initializing"); an operator started in between would begin with a list back-off.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = await kubectl(cp, ['get', 'virtualnodes.kubelet-operator.dev', '-o', 'name']);
    if (list.code === 0) return;
    if (Date.now() > deadline) throw new Error(`virtualnodes are not served: ${list.stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

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
  const wait = await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/virtualnodes.kubelet-operator.dev',
  ]);
  if (wait.code !== 0) throw new Error(`the CRD was not Established: ${wait.stderr}`);
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

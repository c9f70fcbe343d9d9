// The operator as users run it: its image (scripts/image.sh) loaded into a cri VirtualNode's containerd and
// installed with `kubectl apply -k manifests/overlays/local`. Used by `npm run up -- --in-cluster` and by
// test/cluster/incluster.test.ts.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../test/support/controlplane.js';

/** The overlay that runs the operator on our own cri VirtualNodes, from the image's local tag. */
export const LOCAL_OVERLAY = path.join(REPO_ROOT, 'manifests/overlays/local');
/** The example VirtualNode the in-cluster operator serves (it carries no served-by label). */
export const EXAMPLE_SIM_VIRTUAL_NODE = path.join(REPO_ROOT, 'manifests/examples/virtualnode-sim.yaml');
export const OPERATOR_NAMESPACE = 'kubelet-operator-system';

/**
 * Runs `scripts/image.sh <args>` (`build`, or `import <containerd socket>`) quietly; resolves with its stdout,
 * rejects with the tail of its output when it fails.
 */
export function runImageScript(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(REPO_ROOT, 'scripts/image.sh'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`scripts/image.sh ${args.join(' ')} failed (exit ${code}):\n${err.trim()}`));
    });
  });
}

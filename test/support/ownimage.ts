/** An image of a test's own, for image GC tests: nothing else uses it, so removing it harms no other test. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const OCI_SH = fileURLToPath(new URL('../../scripts/lib/oci.sh', import.meta.url));
const run = promisify(execFile);

/**
 * Builds `ref` (busybox's root, a config of its own, so an image ID of its own) as an OCI layout tar in
 * `dir`, for `ctr images import`; returns the tar's path.
 */
export async function buildOwnImage(dir: string, ref: string, createdBy: string): Promise<string> {
  const script = `set -euo pipefail
source "${OCI_SH}"
cd "${dir}"
make_rootfs rootfs
read -r diff digest size < <(make_layer rootfs layer)
LAYER_FILE=layer.tar.gz OCI_CREATED_BY=${createdBy} build_image own.tar "${ref}" "$digest" "$size" "$diff" '"Cmd":["sh","-c","echo ${createdBy}"]'`;
  await run('bash', ['-c', script], { maxBuffer: 16 * 1024 * 1024 });
  return path.join(dir, 'own.tar');
}

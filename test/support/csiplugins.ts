/**
 * The CSI node plugins the plugin manager's tests run as host processes: node-driver-registrar and the hostpath
 * driver, built once by scripts/csi-plugins.sh (pinned tags, vendored sources) and cached outside the repo.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/csi-plugins.sh');

export interface CSIPluginBinaries {
  registrar: string;
  hostpath: string;
}

let cached: Promise<CSIPluginBinaries> | undefined;

/** The two binaries' paths; rejects with the script's message when they cannot be built here. */
export function csiPluginBinaries(): Promise<CSIPluginBinaries> {
  cached ??= promisify(execFile)('bash', [SCRIPT], { maxBuffer: 1 << 20, timeout: 20 * 60_000 }).then(
    ({ stdout }) => {
      const [registrar, hostpath] = stdout.trim().split('\n');
      if (!registrar || !hostpath)
        throw new Error(`scripts/csi-plugins.sh printed ${JSON.stringify(stdout)}`);
      return { registrar, hostpath };
    },
  );
  return cached;
}

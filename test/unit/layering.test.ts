/**
 * The layering of src/ (eslint.config.js): a folder imports values only from the layers below it, types from
 * anywhere; the kubelet's pure folders import no I/O module. Checked through ESLint itself on snippets placed in each folder, so a rule that stops matching
 * (a regex, a glob, a depth) fails here rather than letting an import back up through.
 */
import { expect } from 'chai';
import { ESLint } from 'eslint';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('src layering (eslint no-restricted-imports)', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: ROOT });
  const restricted = async (file: string, code: string): Promise<string[]> => {
    const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  const refused: [string, string][] = [
    ['src/util/x.ts', "import { getPodQOS } from '../kubelet/qos.js';"],
    ['src/util/prometheus/x.ts', "import { parseVirtualNodeSpec } from '../../api/virtualnode.js';"],
    ['src/api/x.ts', "import { shutdownConfigFrom } from '../kubelet/nodeshutdown/config.js';"],
    ['src/runtime/sim/x.ts', "import { getPodQOS } from '../../kubelet/qos.js';"],
    ['src/node/x.ts', "import { getPodQOS } from '../kubelet/qos.js';"],
    ['src/kubelet/x.ts', "import { NodeApiServer } from '../server/nodeapi/server.js';"],
    ['src/kubelet/podcertificate/x.ts', "import { derLength } from '../../server/nodeapi/csr.js';"],
    ['src/kubelet/volume/x.ts', "import { Metrics } from '../../metrics.js';"],
    ['src/server/nodeapi/x.ts', "import { main } from '../../main.js';"],
    ['src/server/nodeapi/x.ts', "import { statsProviderFor } from '../../app/nodestats.js';"],
    ['src/operator/x.ts', "import { kubeletNodeFactory } from '../app/kubeletnode.js';"],
    // The kubelet outside its shell/ folders: no I/O module, and the layering still holds there.
    ['src/kubelet/status/x.ts', "import { readFile } from 'node:fs/promises';"],
    ['src/kubelet/kuberuntime/x.ts', "import { readFile } from 'node:fs/promises';"],
    ['src/kubelet/x.ts', "import { connect } from 'node:net';"],
    ['src/kubelet/cm/dra/x.ts', "import * as grpc from '@grpc/grpc-js';"],
    ['src/kubelet/pleg/x.ts', "import { CriRuntime } from '../../runtime/cri/index.js';"],
    ['src/kubelet/allocation/x.ts', "import { Kubelet } from '../shell/kubelet.js';"],
    ['src/kubelet/kuberuntime/x.ts', "import { KubeGenericRuntimeManager } from './shell/manager.js';"],
    ['src/kubelet/eviction/x.ts', "import { EvictionManager } from './shell/loop.js';"],
    ['src/kubelet/status/x.ts', "import { KubeClient } from '../../kube/client.js';"],
    ['src/kubelet/container/x.ts', "import * as grpc from '@grpc/grpc-js';"],
    ['src/kubelet/status/x.ts', "import { NodeApiServer } from '../../server/nodeapi/server.js';"],
  ];
  for (const [file, code] of refused) {
    it(`refuses in ${file}: ${code}`, async () => {
      expect(await restricted(file, `${code}\nexport const used = 1;\n`)).to.have.length(1);
    });
  }

  const allowed: [string, string][] = [
    ['src/kubelet/x.ts', "import type { NodeApiServer } from '../server/nodeapi/server.js';"],
    ['src/kubelet/volume/x.ts', "import { getPodQOS } from '../qos.js';"],
    ['src/kubelet/eviction/x.ts', "import { KindError } from '../../util/errors.js';"],
    ['src/node/x.ts', "import { KindError } from '../util/errors.js';"],
    ['src/server/nodeapi/x.ts', "import { flagName } from '../../config.js';"],
    ['src/operator/x.ts', "import { getPodQOS } from '../kubelet/qos.js';"],
    ['src/app/x.ts', "import { NodeApiRegistry } from '../server/nodeapi/registry.js';"],
    ['src/kubelet/status/x.ts', "import type { KubeClient } from '../../kube/client.js';"],
    ['src/kubelet/status/x.ts', "import { getPodQOS } from '../qos.js';"],
    ['src/kubelet/kuberuntime/shell/x.ts', "import { readFile } from 'node:fs/promises';"],
    [
      'src/kubelet/shell/x.ts',
      "import { KubeGenericRuntimeManager } from '../kuberuntime/shell/manager.js';",
    ],
    ['src/kubelet/cm/dra/shell/x.ts', "import * as grpc from '@grpc/grpc-js';"],
    ['src/kubelet/kuberuntime/x.ts', "import type { KubeGenericRuntimeManager } from './shell/manager.js';"],
  ];
  for (const [file, code] of allowed) {
    it(`allows in ${file}: ${code}`, async () => {
      expect(await restricted(file, `${code}\nexport const used = 1;\n`)).to.deep.equal([]);
    });
  }
});

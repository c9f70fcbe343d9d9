/**
 * Image garbage collection (issue #56) in the whole cluster: a containerd-backed VirtualNode `cri-gc` on a
 * containerd of its own (image GC on the suite's shared containerd would remove images the other scenarios
 * need and that cannot be pulled here), served by an operator of its own whose collector runs every 2 s.
 * Above `imageGCHighThresholdPercent` (1 %: this disk is always fuller) the collector removes an unused image
 * of the test's own once it is older than `imageMinimumGCAge`, keeps the image its running pod uses, and says
 * FreeDiskSpaceFailed on the Node when it cannot reach the low mark (0 %).
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CoreEvent } from '../../src/kube/events.js';
import type { Operator } from '../../src/operator.js';
import { RealClock } from '../../src/util/clock.js';
import { createVirtualNode, startOperator, waitNodeReady } from '../../scripts/lib/cluster.js';
import { startContainerd, type TestContainerd } from '../support/containerd.js';
import { eventually } from '../support/eventually.js';
import { isGone, testLogger } from '../support/operator.js';
import { buildOwnImage } from '../support/ownimage.js';
import { removeStateDir } from '../support/statedir.js';
import { CRI_TAINT, HEARTBEAT, NS, type ClusterEnv } from './env.js';

const NODE = 'cri-gc';
const SERVED_BY = 'imagegc';
const OWN_IMAGE = 'registry.example/cluster-gc-victim:1';
const VN_PATH = '/apis/kubelet-operator.dev/v1alpha1/virtualnodes';

export function imageGCScenario(getEnv: () => ClusterEnv): void {
  describe('image garbage collection', () => {
    const env = (): ClusterEnv => getEnv();
    let scratch = '';
    let ctd: TestContainerd | undefined;
    let operator: Operator | undefined;
    let ownTar = '';

    const images = async (): Promise<string[]> => {
      const r = await ctd!.ctr(['images', 'ls', '-q']);
      if (r.code !== 0) throw new Error(`ctr images ls: ${r.stderr}`);
      return r.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('sha256:'));
    };

    before(async function () {
      this.timeout(5 * 60_000);
      scratch = await mkdtemp(path.join(tmpdir(), 'ko-cluster-gc-'));
      ownTar = await buildOwnImage(scratch, OWN_IMAGE, 'cluster-imagegc');
      ctd = await startContainerd();
      operator = await startOperator({
        client: env().client,
        clock: new RealClock(),
        logger: testLogger(),
        servedBy: SERVED_BY,
        statusPeriodMs: 2000,
        stateDir: path.join(scratch, 'state'),
        imageGCPeriodMs: 2_000,
      });
    });

    after(async function () {
      this.timeout(3 * 60_000);
      await env()
        .k(['delete', 'pod', 'gc-user', '--ignore-not-found', '--grace-period=1'])
        .catch(() => undefined);
      await env()
        .client.request({ method: 'DELETE', path: `${VN_PATH}/${NODE}` })
        .catch(() => undefined);
      // Its node's drain and shutdown need the operator and containerd: they stop once it is gone.
      await eventually(() => isGone(env().client, `${VN_PATH}/${NODE}`), 60_000, `${NODE} gone`).catch(
        () => undefined,
      );
      await operator?.stop();
      await ctd?.stop();
      await removeStateDir(path.join(scratch, 'state')).catch(() => undefined);
      await rm(scratch, { recursive: true, force: true });
    });

    it("above the high threshold a cri node's collector removes an unused image, keeps its pod's, and says FreeDiskSpaceFailed", async () => {
      await createVirtualNode(env().client, NODE, SERVED_BY, {
        internalIP: '127.0.0.9',
        labels: { 'cluster-test/pool': 'imagegc' },
        taints: [CRI_TAINT],
        runtime: {
          type: 'cri',
          cri: {
            endpoint: ctd!.endpoint,
            cgroupRoot: ctd!.cgroupParentPrefix,
            logRoot: path.join(scratch, 'logs'),
            podNetwork: 'host',
          },
        },
        heartbeat: HEARTBEAT,
        // Long enough for the pod to start using busybox before busybox could be collected.
        kubelet: { imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0, imageMinimumGCAge: '20s' },
      });
      await waitNodeReady(env().client, NODE);
      await env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'gc-user', namespace: NS },
        spec: {
          hostNetwork: true,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          tolerations: [
            { key: CRI_TAINT.key, operator: 'Equal', value: CRI_TAINT.value, effect: 'NoSchedule' },
          ],
          nodeSelector: { 'cluster-test/pool': 'imagegc' },
          containers: [
            { name: 'app', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
          ],
        },
      });
      await eventually(
        async () => ((await env().pod('gc-user')).status?.phase === 'Running' ? true : undefined),
        60_000,
        'gc-user Running',
      );
      const imported = await ctd!.ctr(['images', 'import', ownTar]);
      if (imported.code !== 0) throw new Error(`ctr images import: ${imported.stderr}`);
      const importedAt = Date.now();
      expect(await images()).to.include(OWN_IMAGE);

      await eventually(
        async () => ((await images()).includes(OWN_IMAGE) ? undefined : true),
        90_000,
        `${OWN_IMAGE} removed by the image GC`,
        1_000,
      );
      expect(Date.now() - importedAt, 'not before imageMinimumGCAge').to.be.greaterThan(18_000);
      expect(await images()).to.include('docker.io/library/busybox:latest');
      expect((await env().pod('gc-user')).status?.phase).to.equal('Running');
      const failed = await eventually(
        async () =>
          (
            await env().get<{ items: CoreEvent[] }>(
              `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${NODE}`)}`,
            )
          ).items.find((e) => e.reason === 'FreeDiskSpaceFailed'),
        30_000,
        'FreeDiskSpaceFailed on the Node',
      );
      expect(failed.type).to.equal('Warning');
      expect(failed.message).to.match(
        /^Insufficient free disk space on the node's image filesystem \(\d+% of [\d.]+ [KMGT]iB used\)\. Failed to free sufficient space by deleting unused images \(freed \d+ bytes\)\./,
      );
      console.log(`      image GC: ${OWN_IMAGE} removed ${Date.now() - importedAt} ms after its import`);
    });
  });
}

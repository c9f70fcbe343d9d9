/**
 * The kubelet's image garbage collection on a real containerd through a real v1.37 kube-apiserver: the node's
 * image GC reads the image filesystem as containerd's ImageFsInfo names it (statfs of its mountpoint, this
 * machine's disk), and
 * - above imageGCHighThresholdPercent (1%: this disk is always fuller), removes the unused images older than
 *   imageMinimumGCAge (an image of our own, imported for the test), keeps the one a running pod uses, and
 *   says FreeDiskSpaceFailed with the kubelet's message on the Node when that cannot reach the low mark (0%);
 * - with imageMaximumGCAge (and the high mark out of reach), removes an image unused for longer than the age,
 *   once the node's collector has run that long, and not before.
 *
 * containerd 1.6 reports no `pinned` (the CRI field is newer), so, as a kubelet on it would, the collector
 * treats its pause image as any unused image; the test imports it again after the space round for the pods
 * that follow. Root on Linux is required (containerd).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CriRuntime } from '../../src/runtime/cri/index.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { buildOwnImage } from '../support/ownimage.js';

const NODE = 'vn-imagegc';
const NS = 'imagegc-e2e';
const VICTIM = 'registry.example/imagegc-victim:1';
const run = promisify(execFile);
describe('image garbage collection on containerd (real apiserver, cri runtime)', function () {
  this.timeout(8 * 60_000);
  let env: CriNodeEnv | undefined;
  let scratch: string | undefined;
  let victimTar: string;

  const images = async (): Promise<string[]> => {
    const r = await env!.ctd.ctr(['images', 'ls', '-q']);
    if (r.code !== 0) throw new Error(`ctr images ls: ${r.stderr}`);
    return r.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('sha256:'));
  };
  const importImage = async (tar: string): Promise<void> => {
    const r = await env!.ctd.ctr(['images', 'import', tar]);
    if (r.code !== 0) throw new Error(`ctr images import ${tar}: ${r.stderr}`);
  };

  before(async function () {
    this.timeout(20 * 60_000);
    scratch = await mkdtemp(path.join(tmpdir(), 'ko-imagegc-'));
    victimTar = await buildOwnImage(scratch, VICTIM, 'imagegc-e2e');
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      imageGCPeriodMs: 2_000,
      // Long enough for the busybox pod to start using its image before busybox could be collected.
      spec: {
        kubelet: { imageGCHighThresholdPercent: 1, imageGCLowThresholdPercent: 0, imageMinimumGCAge: '20s' },
      },
    });
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('above the high threshold: the unused image goes, the one a running pod uses stays, FreeDiskSpaceFailed says why', async () => {
    await env!.createPod('user', {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'app', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
      ],
    });
    await env!.waitPod('user', (s) => s.phase === 'Running', 'user Running');
    // Whether containerd pins its sandbox image (CRI Image.pinned, containerd 1.7 and later).
    const cri = new CriRuntime({ endpoint: env!.ctd.endpoint });
    const pausePinned = (await cri.listImages()).some(
      (i) => i.repoTags.includes(env!.ctd.images.pause) && i.pinned === true,
    );
    await cri.close();
    await importImage(victimTar);
    const importedAt = Date.now();
    expect(await images()).to.include(VICTIM);

    await eventually(
      async () => ((await images()).includes(VICTIM) ? undefined : true),
      90_000,
      `${VICTIM} removed by the image GC`,
      1_000,
    );
    // Not before its minimum age (first detected after the import, at most one 2 s period late).
    expect(Date.now() - importedAt).to.be.greaterThan(18_000);
    const left = await images();
    expect(left).to.include('docker.io/library/busybox:latest');
    expect((await env!.getPod('user')).status?.phase).to.equal('Running');

    const failed = await eventually(
      async () =>
        (await eventsOf(env!.client, 'default', NODE)).find((e) => e.reason === 'FreeDiskSpaceFailed'),
      30_000,
      'FreeDiskSpaceFailed on the Node',
    );
    expect(failed.type).to.equal('Warning');
    expect(failed.message).to.match(
      /^Insufficient free disk space on the node's image filesystem \(\d+% of [\d.]+ [KMGT]iB used\)\. Failed to free sufficient space by deleting unused images \(freed \d+ bytes\)\. Investigate disk usage, as it could be used by active images, logs, volumes, or other data\.$/,
    );
    // A pinned sandbox image stays; one the runtime does not pin (containerd 1.6) is an unused image like any
    // other, as for a kubelet (images of sandboxes are not containers' images). Put it back for what follows.
    expect(left.includes(env!.ctd.images.pause), `pause pinned: ${pausePinned}`).to.equal(pausePinned);
    if (!pausePinned) {
      const dir = await mkdtemp(path.join(scratch!, 'pause-'));
      await run('bash', [
        path.resolve(fileURLToPath(new URL('../../scripts/containerd.sh', import.meta.url))),
        'images',
        dir,
      ]);
      await importImage(path.join(dir, 'pause.tar'));
    }
  });

  it('imageMaximumGCAge: an image unused for longer than the age goes once the collector has run that long, whatever the disk', async () => {
    // The high mark out of reach: only the age removes images now. The node restarts with the new settings
    // (its collector's clock starts anew); the running pod is adopted.
    await env!.k([
      'patch',
      'virtualnode',
      NODE,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: {
          kubelet: {
            imageGCHighThresholdPercent: 100,
            imageGCLowThresholdPercent: 99,
            imageMinimumGCAge: '1s',
            imageMaximumGCAge: '15s',
          },
        },
      }),
    ]);
    await importImage(victimTar);
    const importedAt = Date.now();
    await new Promise((r) => setTimeout(r, 8_000));
    expect(await images(), 'kept before the maximum age').to.include(VICTIM);
    await eventually(
      async () => ((await images()).includes(VICTIM) ? undefined : true),
      60_000,
      `${VICTIM} removed for its age`,
      1_000,
    );
    expect(Date.now() - importedAt).to.be.greaterThan(14_000);
    expect(await images()).to.include('docker.io/library/busybox:latest');
    expect((await env!.getPod('user')).status?.phase).to.equal('Running');
  });
});

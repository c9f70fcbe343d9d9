// A podCertificate projected volume through the whole Kubelet (FakeClock, simulated runtime, in-memory files):
// the pod waits with FailedMount until the request is issued, then runs with the key and chain in its files;
// the refreshed certificate reaches the files at a later sync; a pod the API deletes takes its state along.
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import type { PodCertificateRequest } from '../../../../src/api/podcertificaterequest.js';
import { Kubelet } from '../../../../src/kubelet/shell/kubelet.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import { MemoryMounter } from '../../../../src/kubelet/volume/shell/mounter.js';
import { PluginDirs, podVolumeDir } from '../../../../src/kubelet/volume/podpaths.js';
import type { FakeClock } from '../../../../src/util/clock.js';
import { advance, mkPod, setup, start } from '../kubelet-fixtures.js';
import { FakeRequests, issuedRequest, iso, pem } from './fixtures.js';

const MIN = 60_000;
const PODS_DIR = '/var/lib/kubelet-operator/nodes/n1/pods';

function certPod(uid: string): Pod {
  return mkPod(uid, {
    serviceAccountName: 'default',
    containers: [{ name: 'app', image: 'img:1', volumeMounts: [{ name: 'tls', mountPath: '/tls' }] }],
    volumes: [
      {
        name: 'tls',
        projected: {
          sources: [
            {
              podCertificate: {
                signerName: 'example.com/s',
                keyType: 'ED25519',
                credentialBundlePath: 'bundle.pem',
                keyPath: 'tls.key',
                certificateChainPath: 'tls.crt',
              },
            },
          ],
        },
      },
    ],
  });
}

/**
 * Advances the fake clock in steps until `done()`, giving real work a moment between steps: key pairs are
 * generated in libuv's thread pool, which a loaded machine may not finish within a few event-loop turns.
 */
async function advanceUntil(clock: FakeClock, done: () => boolean, maxMs: number, step = 100): Promise<void> {
  for (let t = 0; t < maxMs && !done(); t += step) {
    await advance(clock, step, step);
    for (let i = 0; i < 5 && !done(); i++) await new Promise((r) => setTimeout(r, 2));
  }
}

describe('Kubelet: podCertificate projected volumes', () => {
  it('waits with FailedMount until issued, runs with key and chain, and writes the refreshed ones', async () => {
    const s = setup();
    const fs = new MemoryVolumeFS();
    const requests = new FakeRequests();
    const created: PodCertificateRequest[] = [];
    const k = new Kubelet({
      ...s.deps(),
      podEnvironment: { podsDir: PODS_DIR, fs, mounter: new MemoryMounter() },
      podCertificates: {
        requests,
        nodeUID: () => 'node-uid',
        api: {
          serviceAccountUID: async () => 'sa-uid',
          createRequest: async (r) => {
            const made = {
              ...r,
              metadata: {
                ...r.metadata,
                name: `req-${created.length}`,
                creationTimestamp: iso(s.clock.now()),
              },
            };
            created.push(made);
            return made;
          },
        },
      },
    });
    await start(k, s.clock);
    const pod = certPod('a');
    s.api.pods.set('p-a', pod);
    k.handlePodAdd(pod);
    await advanceUntil(s.clock, () => created.length === 1, 3_000);
    await advance(s.clock, 3_000);
    expect(
      created.map((r) => [r.spec.podName, r.spec.nodeName, r.spec.nodeUID, r.spec.serviceAccountUID]),
    ).to.deep.equal([['p-a', 'n1', 'node-uid', 'sa-uid']]);
    expect(s.creates).to.deep.equal([]);
    expect(s.eventMessages).to.include(
      'Warning FailedMount: MountVolume.SetUp failed for volume "tls" : credential bundle is not issued yet',
    );

    // Issued (with text around the block, which the kubelet drops): the pod starts at its next retry.
    const first = created[0]!;
    const key1 = Buffer.from(first.spec.stubPKCS10Request, 'base64');
    expect(key1.length).to.be.greaterThan(40);
    requests.put(issuedRequest(first, `leaf:\n${pem('AAEC')}`, s.clock.now(), 10 * MIN, 60 * MIN));
    await advance(s.clock, 15_000, 500);
    expect(s.creates).to.deep.equal(['p-a/app']);
    const dir = podVolumeDir(PODS_DIR, 'a', PluginDirs.projected, 'tls');
    const read = (f: string): string => fs.readFileSync(`${dir}/${f}`)?.toString('utf8') ?? '(none)';
    const key = read('tls.key');
    expect(key).to.match(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/);
    expect(read('tls.crt')).to.equal(pem('AAEC'));
    expect(read('bundle.pem')).to.equal(key + pem('AAEC'));

    // From beginRefreshAt (plus up to 5 min of jitter) a refresh request with a new key; the old files stay.
    await advanceUntil(s.clock, () => created.length === 2, 20 * MIN, 5_000);
    expect(created).to.have.length(2);
    expect(read('tls.key')).to.equal(key);
    requests.put(issuedRequest(created[1]!, pem('BgcI'), s.clock.now(), 10 * MIN, 60 * MIN));
    // The next sync of the pod (every minute) sets the volume up again.
    await advance(s.clock, 90_000, 5_000);
    expect(read('tls.crt')).to.equal(pem('BgcI'));
    expect(read('tls.key')).to.not.equal(key);
    expect(read('bundle.pem')).to.equal(read('tls.key') + pem('BgcI'));
    expect(s.eventMessages.filter((e) => e.includes('Certificate'))).to.deep.equal([]);

    // Deleted from the API: its state goes with it.
    s.api.pods.delete('p-a');
    k.handlePodDelete(pod);
    expect(() =>
      k.podCertificates!.credentialBundle({
        namespace: 'ns',
        podName: 'p-a',
        podUID: 'a',
        volumeName: 'tls',
        sourceIndex: 0,
      }),
    ).to.throw('no credentials yet for key={ns p-a a tls 0}');
    await k.stop(0);
  });

  it('without the node requests informer, says podCertificate sources are not served here', async () => {
    const s = setup();
    const k = new Kubelet(s.deps());
    await start(k, s.clock);
    const pod = certPod('b');
    s.api.pods.set('p-b', pod);
    k.handlePodAdd(pod);
    await advance(s.clock, 3_000);
    expect(s.eventMessages).to.include(
      'Warning FailedMount: MountVolume.SetUp failed for volume "tls" : podCertificate projected volume sources are not served on this node',
    );
    await k.stop(0);
  });
});

/**
 * podCertificate projected volume sources against a real kube-apiserver, on a simulated VirtualNode (the whole
 * operator in-process), with the test as the signer (as the e2e suite runs its own): a pod waits in
 * ContainerCreating with the kubelet's FailedMount while its PodCertificateRequests are pending, each naming
 * the pod, its ServiceAccount and the Node with their UIDs; once issued it runs, and its files hold the key and
 * the cleaned chain of each source (read back with `cat` in the container, as the e2e specs do). A request the
 * signer denies or fails gets the kubelet's Warning Event, and the pod keeps waiting with the signer's words.
 */
import { expect } from 'chai';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { CoreEvent } from '../../src/kube/events.js';
import type { Pod } from '../../src/api/core.js';
import type { PodCertificateRequest } from '../../src/api/podcertificaterequest.js';
import type { KubeClient } from '../../src/kube/client.js';
import { stripContainerIdScheme } from '../../src/server/nodeapi/containerlogs.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { pemBlocks } from '../../src/util/pem.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import {
  createPodOn,
  expectContainerCreating,
  type SimNodeEnv,
  startSimNodeEnv,
  waitPodStatus,
} from '../support/operator.js';
import { requestsOfPod, TestPodCertificateSigner } from '../support/podcertsigner.js';

const NODE = 'vn-podcert';
const NS = 'podcert';

describe('podCertificate projected volumes on a simulated VirtualNode (real apiserver)', function () {
  this.timeout(10 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;
  const registry = new NodeApiRegistry();
  const signer = new TestPodCertificateSigner('example.com/podcert-test');

  const createPod = (name: string, sources: unknown[], script: string): Promise<Pod> =>
    createPodOn(client, NS, NODE, name, {
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      volumes: [{ name: 'tls', projected: { sources } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sh', '-c', script],
          volumeMounts: [{ name: 'tls', mountPath: '/run/tls' }],
        },
      ],
    });
  const eventWith = (pod: string, reason: string, message: string): Promise<CoreEvent> =>
    eventually(
      async () => (await eventsOf(client, NS, pod)).find((e) => e.reason === reason && e.message === message),
      60_000,
      `${pod}: ${reason} ${message}`,
    );
  /** The pod's requests once there are `n`. */
  const requestsFor = (pod: string, n: number): Promise<PodCertificateRequest[]> =>
    eventually(
      async () => {
        const rs = await requestsOfPod(client, NS, pod);
        return rs.length >= n ? rs : undefined;
      },
      30_000,
      `${n} PodCertificateRequests of ${pod}`,
    );
  /** What the pod's one container wrote, from the simulated runtime. */
  const output = (pod: Pod): string => {
    const target = registry.nodeForPod(NS, pod.metadata.name ?? '');
    const id = stripContainerIdScheme(pod.status?.containerStatuses?.[0]?.containerID ?? '');
    const lines = target?.node.runtime.capabilities.readLogs?.(id) ?? [];
    return lines.map((l) => /^\S+ (?:stdout|stderr) [PF] ?(.*)$/.exec(l)?.[1] ?? '').join('\n');
  };

  before(async () => {
    env = await startSimNodeEnv({ node: NODE, podCIDR: '10.78.0.0/24', ns: NS, nodeApi: registry });
    client = env.client;
  });

  after(async () => {
    await env?.stop();
  });

  it('waits with FailedMount until the signer issues, then runs with the key and chain in its files', async () => {
    const pod = await createPod(
      'issued',
      [
        {
          podCertificate: {
            signerName: signer.signerName,
            keyType: 'ECDSAP256',
            credentialBundlePath: 'spiffe-cred-bundle.pem',
          },
        },
        {
          podCertificate: {
            signerName: signer.signerName,
            keyType: 'ED25519',
            maxExpirationSeconds: 3600,
            keyPath: 'ed.key',
            certificateChainPath: 'ed.crt',
            userAnnotations: { 'spiffe/path-overriding': '/custom-workload' },
          },
        },
      ],
      'cat /run/tls/spiffe-cred-bundle.pem; echo SEPARATOR; cat /run/tls/ed.key /run/tls/ed.crt; sleep 3600',
    );
    const failed = await eventWith(
      'issued',
      'FailedMount',
      'MountVolume.SetUp failed for volume "tls" : credential bundle is not issued yet',
    );
    expect(failed.type).to.equal('Warning');
    expect(failed.source?.component).to.equal('kubelet');
    await expectContainerCreating(client, NS, 'issued');

    // One request per source, naming the pod, its ServiceAccount and the Node by UID.
    const [sa, node] = await Promise.all([
      client.request<{ metadata: { uid: string } }>({
        method: 'GET',
        path: `/api/v1/namespaces/${NS}/serviceaccounts/default`,
      }),
      client.request<{ metadata: { uid: string } }>({ method: 'GET', path: `/api/v1/nodes/${NODE}` }),
    ]);
    const rs = await requestsFor('issued', 2);
    expect(rs).to.have.length(2);
    const ecdsa = rs.find((r) => !r.spec.unverifiedUserAnnotations)!;
    const ed = rs.find((r) => r.spec.unverifiedUserAnnotations)!;
    for (const r of rs) {
      expect(r.metadata.name).to.match(/^req-/);
      expect(r.metadata.ownerReferences).to.deep.equal([
        { apiVersion: 'v1', kind: 'Pod', name: 'issued', uid: pod.metadata.uid },
      ]);
      expect(r.spec).to.deep.include({
        signerName: signer.signerName,
        podName: 'issued',
        podUID: pod.metadata.uid,
        serviceAccountName: 'default',
        serviceAccountUID: sa.metadata.uid,
        nodeName: NODE,
        nodeUID: node.metadata.uid,
      });
    }
    // The API server's default lifetime where the source names none.
    expect(ecdsa.spec.maxExpirationSeconds).to.equal(86400);
    expect(ed.spec.maxExpirationSeconds).to.equal(3600);
    expect(ed.spec.unverifiedUserAnnotations).to.deep.equal({ 'spiffe/path-overriding': '/custom-workload' });

    // Issued, one with text between blocks and a header that the kubelet drops from the files.
    const ecdsaChain = (
      await signer.issue(client, ecdsa, {
        decorate: (c) => `issued by the test\n${c.replace('-----\n', '-----\nComment: leaf\n\n')}trailer\n`,
      })
    ).chain;
    const edChain = (await signer.issue(client, ed)).chain;
    const running = await waitPodStatus(
      client,
      NS,
      'issued',
      (s) => s.phase === 'Running',
      'Running',
      60_000,
    );

    const out = await eventually(
      async () => {
        const text = output(running);
        return text.split('SEPARATOR')[1]?.includes('END CERTIFICATE') ? text : undefined;
      },
      20_000,
      "the container's output",
    );
    const [bundleText, edText] = out.split('SEPARATOR') as [string, string];
    const bundle = pemBlocks(bundleText);
    expect(bundle.map((b) => b.type)).to.deep.equal(['PRIVATE KEY', 'CERTIFICATE']);
    const leaf = new X509Certificate(ecdsaChain);
    expect(bundle[1]!.der.equals(leaf.raw)).to.equal(true);
    const ecKey = createPrivateKey({ key: bundle[0]!.der, format: 'der', type: 'pkcs8' });
    expect(ecKey.asymmetricKeyDetails?.namedCurve).to.equal('prime256v1');
    expect(leaf.checkPrivateKey(ecKey)).to.equal(true);
    expect(Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)).to.equal(24 * 3_600_000);

    const edBlocks = pemBlocks(edText);
    expect(edBlocks.map((b) => b.type)).to.deep.equal(['PRIVATE KEY', 'CERTIFICATE']);
    const edLeaf = new X509Certificate(edChain);
    expect(
      edLeaf.checkPrivateKey(createPrivateKey({ key: edBlocks[0]!.der, format: 'der', type: 'pkcs8' })),
    ).to.equal(true);
    expect(edLeaf.subjectAltName).to.equal('URI:spiffe://cluster.local/custom-workload');
    expect(Date.parse(edLeaf.validTo) - Date.parse(edLeaf.validFrom)).to.equal(3_600_000);
  });

  it('records the Denied and Failed Events as the kubelet does, and the pod keeps waiting', async () => {
    const source = {
      podCertificate: { signerName: signer.signerName, keyType: 'RSA3072', credentialBundlePath: 'b.pem' },
    };
    await createPod('denied', [source], 'sleep 3600');
    await createPod('failed', [source], 'sleep 3600');
    const [denied] = await requestsFor('denied', 1);
    const [failed] = await requestsFor('failed', 1);
    await signer.refuse(client, denied!, 'Denied', 'UnsupportedKeyType', 'use ED25519');
    await signer.refuse(client, failed!, 'Failed', 'SignerUnavailable', 'the CA is offline');

    const d = await eventWith(
      'denied',
      'Denied',
      `UnsupportedKeyType%!(EXTRA string=PodCertificateRequest ${NS}/${denied!.metadata.name} was denied, reason="UnsupportedKeyType", message="use ED25519")`,
    );
    expect(d.type).to.equal('Warning');
    await eventWith(
      'denied',
      'FailedMount',
      'MountVolume.SetUp failed for volume "tls" : PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="use ED25519"',
    );
    const f = await eventWith(
      'failed',
      'Failed',
      `SignerUnavailable%!(EXTRA string=PodCertificateRequest ${NS}/${failed!.metadata.name} failed, reason="SignerUnavailable", message="the CA is offline")`,
    );
    expect(f.type).to.equal('Warning');
    await eventWith(
      'failed',
      'FailedMount',
      'MountVolume.SetUp failed for volume "tls" : PodCertificateRequest was permanently failed: reason="SignerUnavailable" message="the CA is offline"',
    );
    for (const name of ['denied', 'failed']) {
      const p = await client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods/${name}` });
      expect(p.status?.phase, name).to.equal('Pending');
    }
    // Terminal: no second request is made for either.
    expect(await requestsOfPod(client, NS, 'denied')).to.have.length(1);
    expect(await requestsOfPod(client, NS, 'failed')).to.have.length(1);
  });
});

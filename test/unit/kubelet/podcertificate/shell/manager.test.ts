// The podcertificate manager (manager.ts) over fakes: the request it creates for a tracked pod, the outcome it
// reads from the informer (issued, denied), the refresh, the retries while the Node is unknown, and the states
// dropped with their pod.
import { expect } from 'chai';
import type { Pod } from '../../../../../src/api/core.js';
import type { PodCertificateRequest } from '../../../../../src/api/podcertificaterequest.js';
import {
  PodCertificateManager,
  type PodCertificateAPI,
} from '../../../../../src/kubelet/podcertificate/shell/manager.js';
import type { ProjectionKey } from '../../../../../src/kubelet/podcertificate/projection.js';
import { FakeClock } from '../../../../../src/util/clock.js';
import { FakeRequests, issuedRequest, iso, pem } from '../fixtures.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const HOUR = 3_600_000;
const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

function pod(name: string, uid: string): Pod {
  return {
    metadata: { namespace: 'apps', name, uid },
    spec: {
      serviceAccountName: 'builder',
      containers: [{ name: 'c', image: 'i' }],
      volumes: [
        { name: 'plain', configMap: { name: 'cm' } },
        {
          name: 'tls',
          projected: {
            sources: [
              { configMap: { name: 'ca' } },
              {
                podCertificate: {
                  signerName: 'example.com/spiffe',
                  keyType: 'ECDSAP256',
                  maxExpirationSeconds: 3600,
                  credentialBundlePath: 'bundle.pem',
                  userAnnotations: { 'example.com/path': '/web' },
                },
              },
            ],
          },
        },
      ],
    },
  };
}

const keyOf = (p: Pod): ProjectionKey => ({
  namespace: 'apps',
  podName: p.metadata.name!,
  podUID: p.metadata.uid!,
  volumeName: 'tls',
  sourceIndex: 1,
});

function setup() {
  const clock = new FakeClock(T0);
  const requests = new FakeRequests();
  const created: PodCertificateRequest[] = [];
  const pods = new Map<string, Pod>();
  const events: { pod: string; type: string; reason: string; message: string }[] = [];
  let nodeUID: string | undefined = 'node-uid';
  let keys = 0;
  const api: PodCertificateAPI = {
    serviceAccountUID: async (ns, name) => {
      if (name !== 'builder') throw new Error(`serviceaccounts "${name}" not found`);
      return `sa-uid-${ns}`;
    },
    createRequest: async (r) => {
      const made = {
        ...r,
        metadata: { ...r.metadata, name: `req-${created.length}`, creationTimestamp: iso(clock.now()) },
      };
      created.push(made);
      return made;
    },
  };
  const m = new PodCertificateManager({
    api,
    requests,
    nodeName: 'vn-1',
    nodeUID: () => nodeUID,
    pods: { getPodByUID: (uid) => pods.get(uid), getPods: () => [...pods.values()] },
    record: (p, type, reason, message) => events.push({ pod: p.metadata.name!, type, reason, message }),
    clock,
    logger: { warn: () => undefined, debug: () => undefined },
    random: () => 0.5,
    generateKey: async (keyType) => {
      keys++;
      return {
        privateKeyPem: `KEY-${keyType}-${keys}\n`,
        stubRequest: Buffer.from(`stub-${keys}`),
      };
    },
  });
  const add = (p: Pod): void => {
    pods.set(p.metadata.uid!, p);
    m.trackPod(p);
  };
  const issue = (r: PodCertificateRequest, at: number): void =>
    requests.put(
      issuedRequest(r, `leading text\n${pem(`AAE${created.indexOf(r)}`)}`, at, 20 * HOUR, 24 * HOUR),
    );
  return {
    clock,
    requests,
    created,
    pods,
    events,
    m,
    add,
    issue,
    setNodeUID: (u: string | undefined) => (nodeUID = u),
  };
}

const bundleOf = (m: PodCertificateManager, key: ProjectionKey): string => {
  try {
    const b = m.credentialBundle(key);
    return b.privateKey + b.certChain;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
};

/** A started manager that was told of pod `web` and let it make its first request. */
async function withWeb(nodeKnown = true) {
  const s = setup();
  if (!nodeKnown) s.setNodeUID(undefined);
  s.m.start();
  const web = pod('web', 'uid-1');
  s.add(web);
  await flush();
  return { ...s, web };
}

describe('podcertificate manager', () => {
  it('creates a request for a tracked pod as the kubelet does, and serves the issued chain with its key', async () => {
    const s = setup();
    s.m.start();
    const web = pod('web', 'uid-1');
    expect(bundleOf(s.m, keyOf(web))).to.equal('error: no credentials yet for key={apps web uid-1 tls 1}');
    s.add(web);
    await flush();
    expect(s.created).to.have.length(1);
    const r = s.created[0]!;
    expect(r.metadata).to.deep.include({
      namespace: 'apps',
      generateName: 'req-',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' }],
    });
    expect(r.spec).to.deep.equal({
      signerName: 'example.com/spiffe',
      podName: 'web',
      podUID: 'uid-1',
      serviceAccountName: 'builder',
      serviceAccountUID: 'sa-uid-apps',
      nodeName: 'vn-1',
      nodeUID: 'node-uid',
      maxExpirationSeconds: 3600,
      stubPKCS10Request: Buffer.from('stub-1').toString('base64'),
      unverifiedUserAnnotations: { 'example.com/path': '/web' },
    });
    expect(bundleOf(s.m, keyOf(web))).to.equal('error: credential bundle is not issued yet');

    // The signer answers: the informer's event wakes the projection.
    s.requests.put(r);
    await flush();
    expect(bundleOf(s.m, keyOf(web))).to.equal('error: credential bundle is not issued yet');
    s.issue(r, T0);
    await flush();
    expect(bundleOf(s.m, keyOf(web))).to.equal(`KEY-ECDSAP256-1\n${pem('AAE0')}`);
    expect(s.created).to.have.length(1);
    expect(s.events).to.deep.equal([]);
    s.m.stop();
  });

  it('refreshes from beginRefreshAt with a new key, serving the old credentials meanwhile', async () => {
    const s = await withWeb();
    const { web } = s;
    s.issue(s.created[0]!, T0);
    await flush();
    // The refresh pass (every 1 to 2 minutes) finds it due at beginRefreshAt plus its jitter (2.5 min here).
    s.clock.advance(20 * HOUR + 5 * 60_000);
    await flush();
    expect(s.created).to.have.length(2);
    expect(bundleOf(s.m, keyOf(web))).to.equal(`KEY-ECDSAP256-1\n${pem('AAE0')}`);
    s.issue(s.created[1]!, s.clock.now());
    await flush();
    expect(bundleOf(s.m, keyOf(web))).to.equal(`KEY-ECDSAP256-2\n${pem('AAE1')}`);
    s.m.stop();
  });

  it('records the Denied Event once and reports the signer words from then on', async () => {
    const s = await withWeb();
    const { web } = s;
    s.requests.put({
      ...s.created[0]!,
      status: {
        conditions: [
          { type: 'Denied', status: 'True', reason: 'UnsupportedKeyType', message: 'use ED25519' },
        ],
      },
    });
    await flush();
    s.clock.advance(5 * 60_000);
    await flush();
    expect(s.events).to.deep.equal([
      {
        pod: 'web',
        type: 'Warning',
        reason: 'Denied',
        message:
          'UnsupportedKeyType%!(EXTRA string=PodCertificateRequest apps/req-0 was denied, reason="UnsupportedKeyType", message="use ED25519")',
      },
    ]);
    expect(bundleOf(s.m, keyOf(web))).to.equal(
      'error: PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="use ED25519"',
    );
    expect(s.created).to.have.length(1);
    s.m.stop();
  });

  it('retries while the Node is unknown, and drops the states of a forgotten or vanished pod', async () => {
    const s = await withWeb(false);
    const { web } = s;
    expect(s.created).to.deep.equal([]);
    expect(bundleOf(s.m, keyOf(web))).to.equal('error: credential bundle is not issued yet');
    s.setNodeUID('node-uid');
    s.clock.advance(1_000);
    await flush();
    expect(s.created).to.have.length(1);

    // As the kubelet: forgotten, then gone from the pod manager.
    s.m.forgetPod(web);
    s.pods.delete('uid-1');
    expect(bundleOf(s.m, keyOf(web))).to.match(/^error: no credentials yet/);

    // A pod the pod manager no longer has: its states go at its next step.
    const api = pod('api', 'uid-2');
    s.add(api);
    await flush();
    expect(bundleOf(s.m, keyOf(api))).to.equal('error: credential bundle is not issued yet');
    s.pods.delete('uid-2');
    s.requests.put(s.created[1]!);
    await flush();
    expect(s.created.map((r) => r.spec.podName)).to.deep.equal(['web', 'api']);
    // Woken by its request, for a pod no longer known: nothing to queue; the refresh pass drops its state.
    expect(bundleOf(s.m, keyOf(api))).to.equal('error: credential bundle is not issued yet');
    s.clock.advance(3 * 60_000);
    await flush();
    expect(bundleOf(s.m, keyOf(api))).to.match(/^error: no credentials yet/);
    expect(s.created).to.have.length(2);
    s.m.stop();
  });
});

/**
 * API Priority and Fairness against a real kube-apiserver: a priority level that rejects what it cannot
 * seat answers 429 with Retry-After, and the client sends the request again after it (KubeClient.request,
 * as client-go's REST client does), so a burst through a narrow level is slowed down, not lost.
 */
import { expect } from 'chai';
import { KubeClient } from '../../src/kube/client.js';
import { kubectl, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { saToken, tokenKubeConfig } from '../support/kubectl.js';

const SA = 'apf-busy';

/** One share of the server's seats (two or three of them), rejecting the rest; only SA's requests go there. */
const NARROW_LEVEL = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: apf-narrow}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: apf-narrow}
spec:
  matchingPrecedence: 100
  priorityLevelConfiguration: {name: apf-narrow}
  distinguisherMethod: {type: ByUser}
  rules:
    - subjects: [{kind: ServiceAccount, serviceAccount: {name: ${SA}, namespace: default}}]
      resourceRules:
        - {apiGroups: ['*'], resources: ['*'], verbs: ['*'], clusterScope: true, namespaces: ['*']}
`;

describe('API Priority and Fairness: a rejected request is sent again after Retry-After (real apiserver)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;

  before(async function () {
    this.timeout(180_000);
    cp = await startControlPlane();
  });

  after(async () => {
    await cp?.stop();
  });

  it('a burst through a level of a few seats: the server rejects part of it, every request succeeds', async () => {
    const applied = await kubectl(cp, ['apply', '-f', '-'], NARROW_LEVEL);
    expect(applied.code, applied.stderr).to.equal(0);
    const token = await saToken(cp, SA, 'default');
    // cluster-admin: without a controller-manager the aggregated roles (view, edit) are empty.
    const bound = await kubectl(cp, [
      'create',
      'clusterrolebinding',
      SA,
      '--clusterrole=cluster-admin',
      `--serviceaccount=default:${SA}`,
    ]);
    expect(bound.code, bound.stderr).to.equal(0);
    const kc = tokenKubeConfig(cp, SA, token);
    const codes: number[] = [];
    const client = await KubeClient.fromKubeConfig(kc, {
      unlimited: true,
      onRequest: (_verb, _resource, code) => codes.push(code),
    });
    try {
      // The FlowSchema takes effect once the API server's APF controller has read it: until the first 429
      // is seen this could be at global-default, so the burst is sent until one is. A level that rejects
      // instead of queueing seats only a few of the requests that come back together after Retry-After (a
      // few per second when a loaded server answers slowly), so the burst stays small enough for
      // MAX_RETRIES rounds to drain it.
      let results: PromiseSettledResult<unknown>[] = [];
      for (let round = 0; round < 10 && !codes.includes(429); round++) {
        results = await Promise.allSettled(
          Array.from({ length: 24 }, () =>
            client.request({ method: 'GET', path: '/api/v1/namespaces/kube-system/configmaps' }),
          ),
        );
      }
      const rejected = codes.filter((c) => c === 429).length;
      expect(rejected, 'the narrow level rejected part of the burst').to.be.above(0);
      const failed = results.filter((r) => r.status === 'rejected');
      expect(failed.map((r) => String((r as PromiseRejectedResult).reason)).slice(0, 3)).to.deep.equal([]);
    } finally {
      client.close();
    }
  });
});

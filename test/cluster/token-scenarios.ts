/**
 * In-cluster clients on a containerd-backed VirtualNode: a Deployment whose container calls the API server
 * with its own projected service-account token (a TokenRequest bound to its pod) gets 200 where its
 * ServiceAccount's RBAC allows and 403 where not, and the token file is rotated before the token expires while
 * the client keeps working. The token manager runs on a clock 20 times faster (env.ts), so the refresh the
 * kubelet does after 80 % of a 10-minute life shows after about half a minute, plus the pod's next sync.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { eventually } from '../support/eventually.js';
import { CRI_TAINT, NS, type ClusterEnv } from './env.js';

const SA = 'token-reader';
const TOKEN = '/var/run/secrets/tokens/token';

export function tokenScenario(getEnv: () => ClusterEnv): void {
  describe('service-account tokens on a containerd-backed VirtualNode', () => {
    const exec = async (pod: string, script: string): Promise<string> =>
      getEnv().k(['exec', pod, '--', 'sh', '-c', script]);
    /** The HTTP status the API server gives the pod's token for `path` (busybox wget: 200, or the error's code). */
    const call = async (pod: string, path: string): Promise<string> =>
      (
        await exec(
          pod,
          `wget -q -O /dev/null --no-check-certificate --header "Authorization: Bearer $(cat ${TOKEN})" ` +
            `"${getEnv().apiserverForPods}${path}" 2>&1 && echo 200 || true`,
        )
      ).trim();
    const code = (out: string): string => /\b(200|401|403)\b/.exec(out)?.[1] ?? out;

    it('a Deployment calls the API server with its own bound token: 200 where RBAC allows, 403 where not; the token rotates', async () => {
      const env = getEnv();
      await env.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA, namespace: NS } });
      await env.apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: SA, namespace: NS },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
      });
      await env.apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: SA, namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: SA },
        subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }],
      });
      await env.apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'token-client', namespace: NS },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'token-client' } },
          template: {
            metadata: { labels: { app: 'token-client' } },
            spec: {
              serviceAccountName: SA,
              nodeSelector: { 'cluster-test/pool': 'cri' },
              tolerations: [{ key: CRI_TAINT.key, operator: 'Exists', effect: CRI_TAINT.effect }],
              terminationGracePeriodSeconds: 1,
              volumes: [
                {
                  name: 'token',
                  projected: {
                    sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 600 } }],
                  },
                },
              ],
              containers: [
                {
                  name: 'c',
                  image: 'busybox',
                  imagePullPolicy: 'IfNotPresent',
                  command: ['sleep', '3600'],
                  volumeMounts: [{ name: 'token', mountPath: '/var/run/secrets/tokens' }],
                },
              ],
            },
          },
        },
      });
      const pod = await eventually(
        async () => {
          const ps = await env.pods('app=token-client');
          return ps.find((p: Pod) => p.status?.containerStatuses?.[0]?.state?.running);
        },
        90_000,
        'token-client running',
      );
      const name = pod.metadata.name!;
      const first = await exec(name, `cat ${TOKEN}`);
      const claims = JSON.parse(Buffer.from(first.split('.')[1]!, 'base64url').toString('utf8')) as {
        sub: string;
        exp: number;
        iat: number;
        'kubernetes.io': { pod: { name: string; uid: string } };
      };
      expect(claims.sub).to.equal(`system:serviceaccount:${NS}:${SA}`);
      expect(claims['kubernetes.io'].pod).to.deep.equal({ name, uid: pod.metadata.uid });
      expect(claims.exp - claims.iat).to.equal(600);

      expect(code(await call(name, `/api/v1/namespaces/${NS}/pods`))).to.equal('200');
      expect(code(await call(name, '/api/v1/namespaces/kube-system/secrets'))).to.equal('403');

      // Rotated before it expires (80 % of its life on the token manager's clock), written by the atomic writer.
      const second = await eventually(
        async () => {
          const t = await exec(name, `cat ${TOKEN}`);
          return t !== first ? t : undefined;
        },
        150_000,
        'a rotated token',
        2000,
      );
      expect(second.split('.')).to.have.length(3);
      expect(code(await call(name, `/api/v1/namespaces/${NS}/pods/${name}`))).to.equal('200');

      await env.k(['delete', 'deployment', 'token-client', '--wait=false']);
      await eventually(
        async () => (await env.pods('app=token-client')).length === 0,
        90_000,
        'token-client gone',
      );
    });
  });
}

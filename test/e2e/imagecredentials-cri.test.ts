/**
 * Image pulls with credentials on a real containerd through a real v1.37 kube-apiserver, from a private
 * registry of the test's own (test/support/registry.ts: the distribution registry, TLS from its own CA,
 * htpasswd basic auth):
 * - a pod with the right imagePullSecret (kubernetes.io/dockerconfigjson) runs: its credentials went to CRI
 *   PullImage as AuthConfig, and the node recorded which secret pulled the image (image_manager/pulled);
 * - a pod without gets ErrImagePull, then ImagePullBackOff, with containerd's words;
 * - under AlwaysVerify, a pod without credentials is refused the image another pod's secret pulled (it must
 *   pull, and cannot), while one with the same credentials in another secret may use it as it is;
 * - a ServiceAccount's imagePullSecrets reach the pod through the API server's ServiceAccount admission.
 * Root on Linux is required (containerd).
 */
import { expect } from 'chai';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { startRegistry, type TestRegistry } from '../support/registry.js';

const NODE = 'vn-imagecreds';
const NS = 'imagecreds-e2e';

describe('image pulls with credentials on containerd (private registry, real apiserver)', function () {
  this.timeout(8 * 60_000);
  let env: CriNodeEnv | undefined;
  let registry: TestRegistry | undefined;
  let image: string;
  let pluginDir: string | undefined;

  /**
   * Our credential provider plugin: logs its request, and answers the registry's credentials for the
   * configured path (only when a ServiceAccount token came, if REQUIRE_TOKEN is set).
   */
  const PLUGIN = `#!/bin/sh
req="$(cat)"
printf '%s\\n' "$req" >>"$LOG"
if [ -n "$REQUIRE_TOKEN" ]; then
  case "$req" in *'"serviceAccountToken"'*) ;; *) echo "no service account token" >&2; exit 1 ;; esac
fi
printf '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1","cacheKeyType":"Image","cacheDuration":"0s","auth":{"%s":{"username":"%s","password":"%s"}}}' "$MATCH" "$REG_USER" "$REG_PASS"
`;

  const dockerConfig = (user: string, password: string) =>
    Buffer.from(
      JSON.stringify({
        auths: { [registry!.host]: { auth: Buffer.from(`${user}:${password}`).toString('base64') } },
      }),
    ).toString('base64');
  const createSecret = (name: string, user: string, password: string) =>
    env!.client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': dockerConfig(user, password) },
      },
    });
  const podSpec = (extra: Record<string, unknown> = {}) => ({
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    ...extra,
  });
  const waiting = (p: Pod['status']) => p?.containerStatuses?.[0]?.state?.waiting;
  /** Waits for the pod to run; on a timeout, says where it is stuck (its waiting state, the node's Events). */
  const running = async (name: string): Promise<void> => {
    try {
      await env!.waitPod(name, (s) => s.phase === 'Running', `${name} Running`);
    } catch (err) {
      const pod = await env!.getPod(name);
      const node = (await eventsOf(env!.client, 'default', NODE)).map((e) => `${e.reason}: ${e.message}`);
      throw new Error(
        `${(err as Error).message}; waiting: ${JSON.stringify(waiting(pod.status))}; node: ${node.join(' | ')}`,
      );
    }
  };

  before(async function () {
    this.timeout(20 * 60_000);
    registry = await startRegistry();
    image = await registry.pushBusybox('private/busybox', '1.36');
    pluginDir = await mkdtemp(path.join(tmpdir(), 'ko-credplugin-'));
    for (const name of ['plain-plugin', 'token-plugin']) {
      await writeFile(path.join(pluginDir, name), PLUGIN);
      await chmod(path.join(pluginDir, name), 0o755);
    }
    const provider = (
      name: string,
      repo: string,
      extra: Record<string, unknown>,
      envs: Record<string, string>,
    ) => ({
      name,
      matchImages: [`${registry!.host}/${repo}`],
      defaultCacheDuration: '1m',
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      env: Object.entries({
        LOG: path.join(pluginDir!, `${name}.log`),
        MATCH: `${registry!.host}/${repo}`,
        REG_USER: registry!.username,
        REG_PASS: registry!.password,
        ...envs,
      }).map(([n, value]) => ({ name: n, value })),
      ...extra,
    });
    await writeFile(
      path.join(pluginDir, 'config.json'),
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1',
        kind: 'CredentialProviderConfig',
        providers: [
          provider('plain-plugin', 'plugin', {}, {}),
          provider(
            'token-plugin',
            'sa-plugin',
            {
              tokenAttributes: {
                serviceAccountTokenAudience: 'registry.e2e.example',
                requireServiceAccount: true,
                requiredServiceAccountAnnotationKeys: ['e2e.example/pull'],
                cacheType: 'ServiceAccount',
              },
            },
            { REQUIRE_TOKEN: '1' },
          ),
        ],
      }),
    );
    await registry.pushBusybox('plugin/busybox', '1.36');
    await registry.pushBusybox('sa-plugin/busybox', '1.36');
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      registryCAs: { [registry.host]: registry.caFile },
      spec: {
        kubelet: {
          imagePullCredentialsVerificationPolicy: 'AlwaysVerify',
          imageCredentialProviderConfigPath: path.join(pluginDir, 'config.json'),
          imageCredentialProviderBinDir: pluginDir,
        },
      },
    });
    await createSecret('regcred', registry.username, registry.password);
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
    await registry?.stop();
    if (pluginDir) await rm(pluginDir, { recursive: true, force: true });
  });

  it("a pod without credentials gets ErrImagePull, then ImagePullBackOff, with the registry's refusal", async () => {
    await env!.createPod('anonymous', podSpec());
    const pod = await env!.waitPod(
      'anonymous',
      (s) => ['ErrImagePull', 'ImagePullBackOff'].includes(waiting(s)?.reason ?? ''),
      'anonymous ErrImagePull',
    );
    const w = waiting(pod.status)!;
    console.log(`      containerd says: ${w.message}`);
    expect(w.message).to.match(/authoriz|401|Unauthorized/i);
    const events = await eventually(
      async () => {
        const evs = await eventsOf(env!.client, NS, 'anonymous');
        return evs.some((e) => e.reason === 'Failed' && e.message?.startsWith('Failed to pull image'))
          ? evs
          : undefined;
      },
      30_000,
      'Failed event of anonymous',
    );
    const failed = events.find(
      (e) => e.reason === 'Failed' && e.message?.startsWith('Failed to pull image'),
    )!;
    expect(failed.message!.startsWith(`Failed to pull image "${image}": `), failed.message).to.equal(true);
    await env!.waitPod(
      'anonymous',
      (s) => waiting(s)?.reason === 'ImagePullBackOff',
      'anonymous ImagePullBackOff',
    );
  });

  it('a pod with the right imagePullSecret runs, and the node records which secret pulled the image', async () => {
    await env!.createPod('with-secret', podSpec({ imagePullSecrets: [{ name: 'regcred' }] }));
    await env!.waitPod('with-secret', (s) => s.phase === 'Running', 'with-secret Running');
    const pulledDir = path.join(nodeRootDir(env!.stateDir, NODE), 'image_manager', 'pulled');
    const records = await Promise.all(
      (await readdir(pulledDir)).map(async (f) =>
        JSON.parse(await readFile(path.join(pulledDir, f), 'utf8')),
      ),
    );
    const mine = records.find((r) => r.credentialMapping[`${registry!.host}/private/busybox`]);
    expect(mine, JSON.stringify(records)).to.not.equal(undefined);
    expect(
      mine.credentialMapping[`${registry!.host}/private/busybox`].kubernetesSecrets.map(
        (s: { namespace: string; name: string }) => `${s.namespace}/${s.name}`,
      ),
    ).to.deep.equal([`${NS}/regcred`]);
  });

  it('AlwaysVerify: without credentials the pulled image is refused; the same credentials in another secret may use it', async () => {
    await env!.createPod('thief', podSpec());
    await env!.waitPod(
      'thief',
      (s) => ['ErrImagePull', 'ImagePullBackOff'].includes(waiting(s)?.reason ?? ''),
      'thief ErrImagePull',
    );
    const thiefEvents = await eventsOf(env!.client, NS, 'thief');
    expect(thiefEvents.map((e) => e.reason)).to.include('Pulling');
    expect(thiefEvents.map((e) => e.message)).to.not.include(
      `Container image "${image}" already present on machine and can be accessed by the pod`,
    );

    await createSecret('regcred-copy', registry!.username, registry!.password);
    await env!.createPod('friend', podSpec({ imagePullSecrets: [{ name: 'regcred-copy' }] }));
    await env!.waitPod('friend', (s) => s.phase === 'Running', 'friend Running');
    const friendEvents = await eventsOf(env!.client, NS, 'friend');
    expect(friendEvents.map((e) => `${e.reason}: ${e.message}`)).to.include(
      `Pulled: Container image "${image}" already present on machine and can be accessed by the pod`,
    );
  });

  it("a ServiceAccount's imagePullSecrets reach the pod (ServiceAccount admission) and pull the image", async () => {
    // A new tag: a pull is needed whatever the records say.
    const tagged = await registry!.pushBusybox('private/busybox', 'sa');
    await env!.client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts`,
      body: {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'puller' },
        imagePullSecrets: [{ name: 'regcred' }],
      },
    });
    const created = await env!.createPod('by-sa', {
      ...podSpec(),
      serviceAccountName: 'puller',
      containers: [{ name: 'app', image: tagged, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
    });
    expect(created.spec.imagePullSecrets).to.deep.equal([{ name: 'regcred' }]);
    await env!.waitPod('by-sa', (s) => s.phase === 'Running', 'by-sa Running');
  });

  it('a credential provider plugin supplies the credentials of the images it matches', async () => {
    const ref = `${registry!.host}/plugin/busybox:1.36`;
    await env!.createPod('by-plugin', {
      ...podSpec(),
      containers: [{ name: 'app', image: ref, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
    });
    await running('by-plugin');
    const requests = (await readFile(path.join(pluginDir!, 'plain-plugin.log'), 'utf8')).trim().split('\n');
    // The kubelet asks for the repository, not the tag.
    expect(JSON.parse(requests[0]!)).to.deep.equal({
      kind: 'CredentialProviderRequest',
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      image: `${registry!.host}/plugin/busybox`,
    });
  });

  it("KubeletServiceAccountTokenForCredentialProviders: the plugin gets a token of the pod's ServiceAccount for its audience", async () => {
    const ref = `${registry!.host}/sa-plugin/busybox:1.36`;
    const sa = (name: string, annotations: Record<string, string>) =>
      env!.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/serviceaccounts`,
        body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, annotations } },
      });
    await sa('opted-in', { 'e2e.example/pull': 'yes' });
    await sa('not-opted-in', {});
    const spec = (serviceAccountName: string) => ({
      ...podSpec(),
      serviceAccountName,
      containers: [{ name: 'app', image: ref, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
    });
    await env!.createPod('sa-token', spec('opted-in'));
    await running('sa-token');
    const request = JSON.parse(
      (await readFile(path.join(pluginDir!, 'token-plugin.log'), 'utf8')).trim().split('\n')[0]!,
    ) as { serviceAccountToken: string; serviceAccountAnnotations: Record<string, string>; image: string };
    expect(request.image).to.equal(`${registry!.host}/sa-plugin/busybox`);
    expect(request.serviceAccountAnnotations).to.deep.equal({ 'e2e.example/pull': 'yes' });
    const claims = JSON.parse(
      Buffer.from(request.serviceAccountToken.split('.')[1]!, 'base64url').toString(),
    ) as {
      aud: string[];
      sub: string;
      'kubernetes.io': { pod: { name: string } };
    };
    expect([claims.aud, claims.sub, claims['kubernetes.io'].pod.name]).to.deep.equal([
      ['registry.e2e.example'],
      `system:serviceaccount:${NS}:opted-in`,
      'sa-token',
    ]);

    // Without the required annotation the plugin is not asked, and the pull has no credentials.
    await env!.createPod('sa-no-token', spec('not-opted-in'));
    await env!.waitPod(
      'sa-no-token',
      (s) => ['ErrImagePull', 'ImagePullBackOff'].includes(waiting(s)?.reason ?? ''),
      'sa-no-token ErrImagePull',
    );
  });
});

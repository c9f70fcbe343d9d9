// Image pulls with credentials on the simulated runtime: the pod's imagePullSecrets go to PullImage as
// AuthConfig (each matching one in turn), and KubeletEnsureSecretPulledImages decides whether a pod may use
// an image that another pod's credentials pulled.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { Pod } from '../../../../src/api/core.js';
import type { PullSecret } from '../../../../src/kubelet/credentialprovider/keyring.js';
import {
  credentialVerificationPolicy,
  type ImagePullCredentialsVerificationPolicy,
} from '../../../../src/kubelet/images/pullcredentials.js';
import { ImagePullManager, MemPullRecordFiles } from '../../../../src/kubelet/images/shell/pullrecords.js';
import type { AuthConfig } from '../../../../src/runtime/types.js';
import { container, Harness, IMAGE, makePod, summary } from './manager-fixtures.js';

const PRIVATE = 'registry.example:5000/team/app:1.0';
const profiles = {
  images: {
    'registry.example:5000/team/app': { pullCredentials: { username: 'alice', password: 's3cret' } },
  },
};
const b64 = (s: string) => Buffer.from(s).toString('base64');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

function dockerSecret(
  name: string,
  user: string,
  password: string,
  registry = 'registry.example:5000',
): PullSecret {
  return {
    metadata: { uid: `uid-${name}`, namespace: 'default', name },
    type: 'kubernetes.io/dockerconfigjson',
    data: {
      '.dockerconfigjson': b64(
        JSON.stringify({ auths: { [registry]: { auth: b64(`${user}:${password}`) } } }),
      ),
    },
  };
}

function setup(policy: ImagePullCredentialsVerificationPolicy = 'NeverVerifyPreloadedImages') {
  const secrets = new Map<string, PullSecret>();
  const files = new MemPullRecordFiles();
  const manager = new ImagePullManager(
    files,
    credentialVerificationPolicy(policy),
    { now: () => 0 },
    { warn: () => undefined },
  );
  const h = new Harness({
    profiles,
    imageCredentials: {
      getPullSecret: async (_ns, name) => secrets.get(name),
      imagePullManager: manager,
    },
  });
  const auths: (AuthConfig | undefined)[] = [];
  const pull = h.runtime.pullImage.bind(h.runtime);
  h.runtime.pullImage = (image, sb, auth) => (auths.push(auth), pull(image, sb, auth));
  return { h, secrets, files, auths };
}

function podWith(
  image: string,
  pullSecrets: string[],
  extra: Partial<Pod['spec']['containers'][0]> = {},
): Pod {
  const pod = makePod({ containers: [container('app', ['sleep', 'infinity'], { image, ...extra })] });
  if (pullSecrets.length > 0) pod.spec.imagePullSecrets = pullSecrets.map((name) => ({ name }));
  return pod;
}

describe('image pulls with credentials', function () {
  this.timeout(10_000);

  it("pulls with the pod's matching pull secrets, each in turn, and records which one worked", async () => {
    const { h, secrets, files, auths } = setup();
    secrets.set('wrong', dockerSecret('wrong', 'alice', 'nope'));
    secrets.set('right', dockerSecret('right', 'alice', 's3cret'));
    secrets.set('elsewhere', dockerSecret('elsewhere', 'bob', 'x', 'other.example'));
    const r = await h.sync(podWith(PRIVATE, ['wrong', 'right', 'elsewhere', '']));
    expect(r.error).to.equal(undefined);
    expect(auths).to.deep.equal([
      { username: 'alice', password: 'nope' },
      { username: 'alice', password: 's3cret' },
    ]);
    const ref = (await h.runtime.imageStatus(PRIVATE))!.id;
    const record = JSON.parse(files.files.get(`pulled/sha256-${sha(ref)}`)!);
    expect(record.credentialMapping).to.deep.equal({
      'registry.example:5000/team/app': {
        kubernetesSecrets: [
          {
            uid: 'uid-right',
            namespace: 'default',
            name: 'right',
            credentialHash: sha('{"username":"alice","password":"s3cret"}'),
          },
        ],
      },
    });
    // The intent is gone once the pull is recorded.
    expect([...files.files.keys()].filter((k) => k.startsWith('pulling/'))).to.deep.equal([]);
  });

  it("fails a pod without credentials with ErrImagePull and the runtime's words, then backs off", async () => {
    const { h } = setup();
    const pod = podWith(PRIVATE, []);
    let r = await h.sync(pod);
    expect(summary(r)).to.include('StartContainer app ErrImagePull');
    const failed = r.results.find((x) => x.error)!.message!;
    expect(failed).to.equal(
      `failed to pull and unpack image "${PRIVATE}": failed to resolve reference "${PRIVATE}": pulling from host registry.example:5000 failed with status code [manifests 1.0]: 401 Unauthorized`,
    );
    r = await h.sync(pod);
    expect(summary(r)).to.include('StartContainer app ImagePullBackOff');
  });

  it("makes a pod without the credentials pull again an image another pod's secret pulled (IfNotPresent)", async () => {
    const { h, secrets, files } = setup();
    secrets.set('right', dockerSecret('right', 'alice', 's3cret'));
    expect((await h.sync(podWith(PRIVATE, ['right']))).error).to.equal(undefined);
    h.takeEvents();

    const thief = podWith(PRIVATE, [], { imagePullPolicy: 'IfNotPresent' });
    const r = await h.sync(thief);
    expect(summary(r)).to.include('StartContainer app ErrImagePull');
    expect(h.takeEvents().slice(0, 2)).to.deep.equal([
      `Pulling: Pulling image "${PRIVATE}"`,
      `Failed: Failed to pull image "${PRIVATE}": ${r.results.find((x) => x.error)!.message}`,
    ]);

    // Under Never the kubelet does not even say the image is there.
    const never = await h.sync(podWith(PRIVATE, [], { imagePullPolicy: 'Never' }));
    expect(never.results.find((x) => x.error)).to.include({
      error: 'ErrImageNeverPull',
      message: `Container image "${PRIVATE}" is not present with pull policy of Never`,
    });
    h.takeEvents();

    // The same credentials in a secret of another name are as good, and are remembered.
    secrets.set('copy', dockerSecret('copy', 'alice', 's3cret'));
    const friend = await h.sync(podWith(PRIVATE, ['copy'], { imagePullPolicy: 'IfNotPresent' }));
    expect(friend.error).to.equal(undefined);
    expect(h.takeEvents()[0]).to.equal(
      `Pulled: Container image "${PRIVATE}" already present on machine and can be accessed by the pod`,
    );
    const ref = (await h.runtime.imageStatus(PRIVATE))!.id;
    const names = JSON.parse(files.files.get(`pulled/sha256-${sha(ref)}`)!).credentialMapping[
      'registry.example:5000/team/app'
    ].kubernetesSecrets.map((s: { name: string }) => s.name);
    expect(names).to.deep.equal(['copy', 'right']);
  });

  it('leaves preloaded images alone by default, and verifies them under AlwaysVerify', async () => {
    const byDefault = setup();
    expect((await byDefault.h.sync(podWith(IMAGE, [], { imagePullPolicy: 'IfNotPresent' }))).error).to.equal(
      undefined,
    );
    expect(byDefault.auths).to.deep.equal([]);
    expect(byDefault.h.events[0]!.message).to.equal(
      `Container image "${IMAGE}" already present on machine and can be accessed by the pod`,
    );

    const always = setup('AlwaysVerify');
    expect((await always.h.sync(podWith(IMAGE, [], { imagePullPolicy: 'IfNotPresent' }))).error).to.equal(
      undefined,
    );
    // Pulled again (anonymously): from now on every pod of the node may use it without a pull.
    expect(always.auths).to.deep.equal([undefined]);
    always.h.takeEvents();
    expect((await always.h.sync(podWith(IMAGE, [], { imagePullPolicy: 'IfNotPresent' }))).error).to.equal(
      undefined,
    );
    expect(always.auths).to.have.length(1);
  });

  it('names the pull secrets it could not read after a failed pull, and fails on a secret that does not parse', async () => {
    const { h, secrets } = setup();
    const r = await h.sync(podWith(PRIVATE, ['missing']));
    expect(summary(r)).to.include('StartContainer app ErrImagePull');
    expect(h.events.map((e) => `${e.reason}: ${e.message}`)).to.include(
      'FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed.',
    );

    secrets.set('garbled', {
      metadata: { name: 'garbled' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64('{"auths":{"registry.example:5000":{"auth":"bm9jb2xvbg=="}}}') },
    });
    const bad = await h.sync(podWith(PRIVATE, ['garbled']));
    expect(bad.results.find((x) => x.error)).to.include({
      error: 'ErrImagePull',
      message: 'unable to parse auth field, must be formatted as base64(username:password)',
    });
  });
});

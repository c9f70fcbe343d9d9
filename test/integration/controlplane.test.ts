// Smoke tests proving test/support/controlplane.ts runs a real control plane (etcd + kube-apiserver,
// and kube-controller-manager + kube-scheduler when asked).
import { expect } from 'chai';
import {
  ApiextensionsV1Api,
  AuthenticationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  VersionApi,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { kubectl, pinnedKubeVersion, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';

// The first run on a machine builds kube-apiserver & co from source (scripts/kube-binaries.sh), which
// takes tens of minutes on 2 cores: the `before` hooks get 20 minutes so a cold cache does not time out.
// With the binaries cached a control plane starts in a few seconds.
const COLD_BUILD_TIMEOUT_MS = 20 * 60_000;

function failedIn(ctx: Mocha.Context): boolean {
  return ctx.test?.parent?.tests.some((t) => t.state === 'failed') ?? false;
}

describe('control plane (etcd + kube-apiserver)', function () {
  let cp: ControlPlane;

  before(async function () {
    this.timeout(COLD_BUILD_TIMEOUT_MS);
    cp = await startControlPlane();
    console.log(`      control plane started in ${cp.startMs} ms at ${cp.server}`);
  });

  after(async function () {
    this.timeout(30_000);
    await cp?.stop({ keepDir: failedIn(this) });
  });

  it('reports the pinned Kubernetes version on /version', async () => {
    const info = await cp.adminKubeConfig().makeApiClient(VersionApi).getCode();
    if (process.env.KUBEBUILDER_ASSETS && cp.binDir.startsWith(process.env.KUBEBUILDER_ASSETS)) {
      expect(info.gitVersion).to.match(/^v1\.\d+\.\d+/);
    } else {
      const pinned = pinnedKubeVersion();
      expect(info.gitVersion).to.equal(pinned);
      expect(info.major).to.equal('1');
      expect(info.minor).to.equal(pinned.split('.')[1]);
    }
  });

  it('creates and reads back a Namespace', async () => {
    const core = cp.adminKubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'smoke', labels: { purpose: 'smoke' } } } });
    const ns = await core.readNamespace({ name: 'smoke' });
    expect(ns.metadata?.labels?.['purpose']).to.equal('smoke');
    expect(ns.status?.phase).to.equal('Active');
    expect(ns.metadata?.uid).to.be.a('string').and.not.empty;
  });

  it('serves a CRD once Established, and its custom objects', async () => {
    const kc = cp.adminKubeConfig();
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const group = 'smoke.kubelet-operator.dev';
    const crd: V1CustomResourceDefinition = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        scope: 'Cluster',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } },
                },
              },
            },
          },
        ],
      },
    };
    await ext.createCustomResourceDefinition({ body: crd });
    await eventually(
      async () => {
        const got = await ext.readCustomResourceDefinition({ name: `widgets.${group}` });
        const ok = got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        return ok ? true : undefined;
      },
      30_000,
      'CRD Established',
    );

    const objects = kc.makeApiClient(CustomObjectsApi);
    const widget = { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } };
    // Discovery of a just-Established CRD can lag a moment behind the condition.
    await eventually(
      () => objects.createClusterCustomObject({ group, version: 'v1', plural: 'widgets', body: widget }),
      15_000,
      'creating a Widget',
    );
    const got = (await objects.getClusterCustomObject({
      group,
      version: 'v1',
      plural: 'widgets',
      name: 'w1',
    })) as {
      spec?: { size?: number };
      metadata?: { uid?: string };
    };
    expect(got.spec?.size).to.equal(3);
    expect(got.metadata?.uid).to.be.a('string');

    // The schema is enforced: this is a real apiserver, not a mock.
    let rejected: unknown;
    try {
      await objects.createClusterCustomObject({
        group,
        version: 'v1',
        plural: 'widgets',
        body: { ...widget, metadata: { name: 'w2' }, spec: { size: 0 } },
      });
    } catch (err) {
      rejected = err;
    }
    expect(rejected, 'size 0 violates minimum 1').to.have.property('code', 422);
  });

  it('answers kubectl through the harness kubeconfig', async () => {
    const res = await kubectl(cp, ['get', 'namespace', 'smoke', '-o', 'jsonpath={.metadata.name}']);
    expect(res.stderr).to.equal('');
    expect(res.code).to.equal(0);
    expect(res.stdout).to.equal('smoke');
  });

  it('has no default ServiceAccount without a controller-manager', async () => {
    const core = cp.adminKubeConfig().makeApiClient(CoreV1Api);
    const list = await core.listNamespacedServiceAccount({ namespace: 'smoke' });
    expect(list.items).to.have.length(0);
  });
});

describe('control plane with scheduler and controller-manager', function () {
  let cp: ControlPlane;

  before(async function () {
    this.timeout(COLD_BUILD_TIMEOUT_MS);
    cp = await startControlPlane({ scheduler: true, controllerManager: true });
    console.log(`      control plane (+scheduler, +controller-manager) started in ${cp.startMs} ms`);
  });

  after(async function () {
    this.timeout(30_000);
    await cp?.stop({ keepDir: failedIn(this) });
  });

  it('runs all four components', () => {
    expect(cp.processes().map((p) => p.name)).to.have.members([
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
    ]);
  });

  it('gives a new namespace its default ServiceAccount and issues it a token', async () => {
    const core = cp.adminKubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'sa-smoke' } } });
    // The serviceaccount controller (in kube-controller-manager) creates `default`.
    await eventually(
      async () => {
        const list = await core.listNamespacedServiceAccount({ namespace: 'sa-smoke' });
        return list.items.some((sa) => sa.metadata?.name === 'default') ? true : undefined;
      },
      30_000,
      'ServiceAccount sa-smoke/default',
    );
    // And the root CA ConfigMap publisher (also in the controller-manager) publishes our CA.
    const rootCa = await eventually(
      async () => core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'sa-smoke' }),
      30_000,
      'ConfigMap sa-smoke/kube-root-ca.crt',
    );
    expect(rootCa.data?.['ca.crt']).to.contain('BEGIN CERTIFICATE');

    // A bound token (TokenRequest, no Secret) for that ServiceAccount authenticates as it.
    const token = await core.createNamespacedServiceAccountToken({
      name: 'default',
      namespace: 'sa-smoke',
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    expect(token.status?.token).to.be.a('string').and.not.empty;
    const review = await cp
      .adminKubeConfig()
      .makeApiClient(AuthenticationV1Api)
      .createTokenReview({ body: { spec: { token: token.status!.token } } });
    expect(review.status?.authenticated).to.equal(true);
    expect(review.status?.user?.username).to.equal('system:serviceaccount:sa-smoke:default');
  });
});

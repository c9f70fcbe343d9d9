/**
 * The install manifests against a real kube-apiserver: every overlay renders and passes a server-side dry
 * run; the CRD gives `kubectl get vn` its columns and `kubectl explain` its descriptions; and the operator,
 * run in-process with a token of its own ServiceAccount (TokenRequest) under the rendered RBAC and admission
 * policy, serves a VirtualNode end to end, uses every rule it is granted, and is refused what it is not.
 * Its node API runs as the manifests configure it (CSR-issued serving certificate, approved here with
 * `kubectl certificate approve` and signed by kube-controller-manager's csrsigning; TokenReview and
 * SubjectAccessReview for callers), so those rules are exercised too.
 *
 * Invalid VirtualNodes (bad endpoint, negative capacity, bad taint effect) failing with the field's name:
 * test/integration/operator.test.ts, "the CRD rejects malformed specs with a message naming the field".
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { KubeClient, type Verb } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { restShardLeaseAPI } from '../../src/operator/shard/api.js';
import { ShardCoordinator } from '../../src/operator/shard/coordinator.js';
import { CSR_PATH, type CsrServingCertificates } from '../../src/server/nodeapi/certificate.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import type { NodeApiServer } from '../../src/server/nodeapi/server.js';
import { simContainerBehaviourAnnotation } from '../../src/runtime/sim/index.js';
import { RealClock } from '../../src/util/clock.js';
import { KindError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/logger.js';
import { kubectl, REPO_ROOT, run, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { kubectlOk, saToken, tokenKubeConfig } from '../support/kubectl.js';
import { listenNodeApi, nodeApiGet, startCsrCertificates } from '../support/nodeapi.js';
import { requestsOfPod, TestPodCertificateSigner } from '../support/podcertsigner.js';
import {
  createNamespace,
  isGone,
  postVirtualNode,
  startTestOperator,
  VN_PATH,
  waitNodeReady,
} from '../support/operator.js';

const OVERLAYS = ['sim', 'cri'] as const;
const NS = 'kubelet-operator-system';
const SA = 'kubelet-operator';
const APPS = 'install-apps';
const OTHER = 'install-other';
const VN = 'vn-install';
/** The VirtualNode's InternalIP: the node API (CSR-issued certificate) listens there on :10250. */
const NODE_IP = '127.0.0.31';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const overlayDir = (o: string): string => path.join(REPO_ROOT, 'manifests/overlays', o);

async function render(overlay: string): Promise<K8sObject[]> {
  const res = await run('kubectl', ['kustomize', overlayDir(overlay)]);
  expect(res.code, res.stderr).to.equal(0);
  return parseAllDocuments(res.stdout).map((d) => d.toJSON() as K8sObject);
}

function find(objs: K8sObject[], kind: string, name?: string): K8sObject {
  const o = objs.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  if (!o) throw new Error(`no ${kind} ${name ?? ''} in the rendered manifests`);
  return o;
}

/** The client's verb as RBAC names it. */
const RBAC_VERB: Record<Verb, string> = {
  GET: 'get',
  LIST: 'list',
  WATCH: 'watch',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
  DELETECOLLECTION: 'deletecollection',
};

/** Resolves the HTTP status of a refused request, or fails if it was allowed. */
async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    if (err instanceof KindError) return Number(err.context.code ?? 0);
    throw err;
  }
  return 200;
}

describe('install manifests (real apiserver)', function () {
  this.timeout(10 * 60_000);
  let cp: ControlPlane;
  let admin: KubeClient;

  before(async () => {
    // Only the CSR signer of kube-controller-manager: it issues the node API's approved kubelet-serving
    // certificate (the operator's node API runs in CSR mode, as the manifests configure it).
    cp = await startControlPlane({
      controllerManager: true,
      controllerManagerArgs: ['--controllers=csrsigning'],
    });
    admin = await KubeClient.fromKubeConfig(cp.adminKubeConfig());
  });

  after(async () => {
    admin?.close();
    await cp?.stop();
  });

  it('kubectl kustomize builds every overlay, with the hardened workload (sim: Deployment, cri: DaemonSet)', async () => {
    for (const overlay of OVERLAYS) {
      const objs = await render(overlay);
      const kinds = objs.map((o) => o.kind).sort();
      expect(kinds, overlay).to.include.members([
        'ClusterRole',
        'ClusterRoleBinding',
        'CustomResourceDefinition',
        'FlowSchema',
        overlay === 'sim' ? 'Deployment' : 'DaemonSet',
        'Namespace',
        'Role',
        'RoleBinding',
        'ServiceAccount',
        'ValidatingAdmissionPolicy',
        'ValidatingAdmissionPolicyBinding',
      ]);
      const dep = find(objs, overlay === 'sim' ? 'Deployment' : 'DaemonSet') as unknown as {
        spec: {
          replicas?: number;
          strategy?: { type: string; rollingUpdate?: Record<string, number> };
          updateStrategy?: { type: string; rollingUpdate?: Record<string, number> };
          template: { spec: Record<string, unknown> };
        };
      };
      const pod = dep.spec.template.spec as {
        automountServiceAccountToken: boolean;
        securityContext: Record<string, unknown>;
        containers: {
          securityContext: Record<string, unknown>;
          resources: { requests: object; limits: object };
          livenessProbe: { httpGet: { path: string } };
          readinessProbe: { httpGet: { path: string } };
          env: { name: string }[];
          args: string[];
        }[];
        volumes: { hostPath?: { path: string } }[];
      };
      const c = pod.containers[0]!;
      // Replicas share VirtualNodes by shard Leases: two in the sim overlay, one per labelled host for cri.
      expect(c.args).to.include('--shard-leases=true');
      expect(c.env.map((e) => e.name)).to.include.members(['POD_NAME', 'POD_NAMESPACE', 'NODE_NAME']);
      if (overlay === 'sim') {
        expect(dep.spec.replicas).to.equal(2);
        expect(dep.spec.strategy?.type).to.equal('RollingUpdate');
        const pdb = find(objs, 'PodDisruptionBudget') as unknown as { spec: Record<string, unknown> };
        expect(pdb.spec.maxUnavailable).to.equal(1);
      } else {
        expect(dep.spec.replicas).to.equal(undefined);
        expect(dep.spec.updateStrategy?.type).to.equal('RollingUpdate');
        expect(objs.some((o) => o.kind === 'PodDisruptionBudget')).to.equal(false);
      }
      expect(pod.automountServiceAccountToken).to.equal(true);
      expect(pod.securityContext).to.deep.include({ seccompProfile: { type: 'RuntimeDefault' } });
      expect(c.securityContext).to.deep.equal({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.resources.requests).to.have.keys('cpu', 'memory');
      expect(c.resources.limits).to.have.keys('cpu', 'memory');
      expect(c.livenessProbe.httpGet.path).to.equal('/healthz');
      expect(c.readinessProbe.httpGet.path).to.equal('/readyz');
      expect(c.env.map((e) => e.name)).to.include('POD_IP');
      const hostPaths = pod.volumes.flatMap((v) => (v.hostPath ? [v.hostPath.path] : []));
      if (overlay === 'sim') {
        expect(pod.securityContext.runAsNonRoot).to.equal(true);
        expect(hostPaths).to.deep.equal([]);
      } else {
        expect(hostPaths.sort()).to.deep.equal([
          '/etc/hosts',
          '/etc/resolv.conf',
          '/run/containerd',
          '/sys/fs/cgroup',
          '/var/lib/kubelet-operator',
          '/var/log/pods',
        ]);
      }
    }
  });

  it('every overlay passes kubectl apply --server-side --dry-run=server', async () => {
    // A dry-run Namespace is not created, so the namespaced objects would not find it: create it first.
    await kubectlOk(cp, ['create', 'namespace', NS]);
    for (const overlay of OVERLAYS) {
      const res = await kubectl(cp, [
        'apply',
        '--server-side',
        '--dry-run=server',
        '-k',
        overlayDir(overlay),
      ]);
      expect(res.code, `${overlay}: ${res.stderr}`).to.equal(0);
      expect(res.stdout, overlay).to.contain(
        `${overlay === 'sim' ? 'deployment' : 'daemonset'}.apps/kubelet-operator serverside-applied (server dry run)`,
      );
    }
  });

  it('the examples pass a server-side dry run once the CRD is installed', async () => {
    await kubectlOk(cp, ['apply', '--server-side', '-k', path.join(REPO_ROOT, 'crds')]);
    await kubectlOk(cp, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/virtualnodes.kubelet-operator.dev',
    ]);
    await kubectlOk(cp, ['apply', '--dry-run=server', '-f', path.join(REPO_ROOT, 'manifests/examples')]);
  });

  it('kubectl explain describes every spec field', async () => {
    // Statically: every property of the schema has a description.
    const crd = parse(readFileSync(path.join(REPO_ROOT, 'crds/virtualnode.yaml'), 'utf8')) as {
      spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
    };
    interface Schema {
      description?: string;
      properties?: Record<string, Schema>;
      items?: Schema;
      additionalProperties?: Schema | boolean;
    }
    const missing: string[] = [];
    const walk = (s: Schema, at: string): void => {
      for (const [k, v] of Object.entries(s.properties ?? {})) {
        // apiVersion, kind and metadata are described by the API server itself.
        if (at === 'virtualnode' && ['apiVersion', 'kind', 'metadata'].includes(k)) continue;
        if (!v.description) missing.push(`${at}.${k}`);
        walk(v, `${at}.${k}`);
      }
      if (s.items) walk(s.items, `${at}[]`);
      if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${at}{}`);
    };
    const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
    walk(root, 'virtualnode');
    expect(missing).to.deep.equal([]);
    // And as a user sees it.
    const res = await kubectlOk(cp, ['explain', 'virtualnode.spec']);
    expect(res.stdout).to.contain('DESCRIPTION');
    for (const field of Object.keys(root.properties!.spec!.properties!)) {
      expect(res.stdout, field).to.match(new RegExp(`^\\s+${field}\\s+<`, 'm'));
    }
    expect(res.stdout).to.not.contain('<empty>');
  });

  describe('the operator under its own ServiceAccount', () => {
    let sa: KubeClient;
    let op: Operator | undefined;
    let certs: CsrServingCertificates | undefined;
    let nodeApi: NodeApiServer | undefined;
    /** The operator's kubelet-serving CSR (found by the node API test). */
    let csrName = '';
    /** Issues the PodCertificateRequests of the podCertificate test. */
    const signer = new TestPodCertificateSigner('example.com/install-signer');
    /** The request the operator made for that test's pod. */
    let certifiedRequest = '';
    /** `verb resource` -> HTTP codes the operator's requests got. */
    const seen = new Map<string, number[]>();
    let granted: string[] = [];

    before(async () => {
      const objs = await render('sim');
      await kubectlOk(cp, ['apply', '--server-side', '-k', overlayDir('sim')]);
      const rules = [
        ...((find(objs, 'ClusterRole', SA) as unknown as { rules: Rule[] }).rules ?? []),
        ...objs
          .filter((o) => o.kind === 'Role')
          .flatMap((o) => (o as unknown as { rules: Rule[] }).rules ?? []),
      ];
      granted = rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}`)));

      // A short-lived token of the ServiceAccount, and a kubeconfig that holds only it and the cluster CA.
      const tr = await admin.request<{ status: { token: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/serviceaccounts/${SA}/token`,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 3600 },
        },
      });
      const kc = tokenKubeConfig(cp, SA, tr.status.token);
      sa = await KubeClient.fromKubeConfig(kc, {
        onRequest: (verb, resource, code) => {
          const key = `${RBAC_VERB[verb]} ${resource}`;
          seen.set(key, [...(seen.get(key) ?? []), code]);
        },
      });

      for (const ns of [APPS, OTHER]) {
        // No controller-manager here: pods need their namespace's default ServiceAccount to exist.
        await createNamespace(admin, ns);
        await admin.request({
          method: 'POST',
          path: `/api/v1/namespaces/${ns}/configmaps`,
          body: { metadata: { name: 'settings' }, data: { mode: 'fast' } },
        });
        await admin.request({
          method: 'POST',
          path: `/api/v1/namespaces/${ns}/secrets`,
          body: { metadata: { name: 'creds' }, stringData: { password: 'hunter2' } },
        });
      }

      const clock = new RealClock();
      // The node API as main.ts runs it with the manifests' flags: CSR-issued certificate, webhook auth,
      // every API call under the operator's ServiceAccount.
      const registry = new NodeApiRegistry();
      certs = startCsrCertificates(sa, clock, registry);
      nodeApi = await listenNodeApi({
        registry,
        client: sa,
        clock,
        logger: silentLogger,
        tls: { source: certs },
        ip: NODE_IP,
      });
      // As the manifests run it: sharing VirtualNodes by Leases in the operator's namespace.
      op = await startTestOperator({
        client: sa,
        clock,
        logger: silentLogger,
        nodeApi: registry,
        defaultInternalIP: NODE_IP,
        shard: new ShardCoordinator({
          api: restShardLeaseAPI(sa, NS),
          namespace: NS,
          identity: 'install-test',
          host: '',
          clock,
          logger: silentLogger,
        }),
      });
    });

    after(async () => {
      await op?.stop();
      await nodeApi?.close();
      await certs?.stop();
      sa?.close();
    });

    const claimUID = async (): Promise<string> =>
      (
        await admin.request<{ metadata: { uid: string } }>({
          method: 'GET',
          path: `/api/v1/namespaces/${APPS}/persistentvolumeclaims/data`,
        })
      ).metadata.uid;
    const podReady = (name: string) =>
      eventually(
        async () => {
          const p = await admin.request<Pod>({
            method: 'GET',
            path: `/api/v1/namespaces/${APPS}/pods/${name}`,
          });
          return p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
        },
        30_000,
        `pod ${name} Ready`,
      );

    it('serves a VirtualNode: Ready Node, plain pod Running and Ready with env from a ConfigMap and a Secret', async () => {
      // A Lease left behind by an earlier Node of this name: the new Node's Lease cannot simply be created,
      // so the operator reads (get leases) and takes over the one that is there.
      await admin.request({
        method: 'POST',
        path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: VN },
          spec: { holderIdentity: 'an-earlier-node', leaseDurationSeconds: 40 },
        },
      });
      // A ResourceSlice an earlier node of this name published, and another node's: the start deletes its
      // node's stale slices (the kubelet's DRA plugin manager), and only those.
      const slice = (name: string, nodeName: string) => ({
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name },
        spec: {
          driver: 'gone.example.com',
          nodeName,
          pool: { name: nodeName, generation: 1, resourceSliceCount: 1 },
          devices: [],
        },
      });
      const slices = '/apis/resource.k8s.io/v1/resourceslices';
      await admin.request({ method: 'POST', path: slices, body: slice('stale', VN) });
      // A CSINode of this name without an owner (an earlier kubelet's): the new Node's create finds the name
      // taken, so the start reads it (get csinodes) and, owned by no other Node, keeps it.
      await admin.request({
        method: 'POST',
        path: '/apis/storage.k8s.io/v1/csinodes',
        body: {
          apiVersion: 'storage.k8s.io/v1',
          kind: 'CSINode',
          metadata: { name: VN },
          spec: { drivers: [] },
        },
      });
      await admin.request({ method: 'POST', path: slices, body: slice('elsewhere', 'another-node') });
      await postVirtualNode(admin, VN, {
        runtime: { type: 'sim' },
        heartbeat: { renewIntervalSeconds: 2, leaseDurationSeconds: 10 },
        // Real TokenRequests (a sim node's default is Simulated): the policy's allowed case is exercised.
        kubelet: { serviceAccountTokens: 'Request' },
      });
      await waitNodeReady(admin, VN, 30_000);
      await eventually(() => isGone(admin, `${slices}/stale`), 20_000, "the node's stale ResourceSlice gone");
      await admin.request({ method: 'GET', path: `${slices}/elsewhere` });
      const lease = await eventually(
        async () => {
          const l = await admin.request<{
            spec: { holderIdentity?: string };
            metadata: { ownerReferences?: { kind: string; name: string }[] };
          }>({ method: 'GET', path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VN}` });
          return l.metadata.ownerReferences?.some((r) => r.kind === 'Node') ? l : undefined;
        },
        20_000,
        'the Lease taken over by the new Node',
      );
      expect(lease.spec.holderIdentity).to.equal(VN);
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${APPS}/pods`,
        body: {
          metadata: { name: 'plain' },
          spec: {
            nodeName: VN,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'app',
                image: 'registry.local/app:1',
                env: [
                  { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode' } } },
                  { name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
                ],
              },
            ],
          },
        },
      });
      const pod = await podReady('plain');
      expect(pod.status?.phase).to.equal('Running');
      const got = await eventually(
        async () => {
          const r = await kubectl(cp, ['get', 'vn', VN]);
          return r.code === 0 && /\bTrue\s+1\s/.test(r.stdout) ? r.stdout : undefined;
        },
        20_000,
        'kubectl get vn to show the node Ready with one pod',
      );
      const [header, row] = got.trim().split('\n');
      expect(header!.split(/\s+/)).to.deep.equal(['NAME', 'NODE', 'RUNTIME', 'READY', 'PODS', 'AGE']);
      expect(row!.split(/\s+/).slice(0, 5)).to.deep.equal([VN, VN, 'sim', 'True', '1']);
    });

    it('mounts a claim bound to a hostPath PersistentVolume and a projected token bound to the pod', async () => {
      await admin.request({
        method: 'POST',
        path: '/api/v1/persistentvolumes',
        body: {
          metadata: { name: 'install-pv' },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            storageClassName: 'manual',
            hostPath: { path: '/data/install', type: 'DirectoryOrCreate' },
          },
        },
      });
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${APPS}/persistentvolumeclaims`,
        body: {
          metadata: { name: 'data' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            storageClassName: 'manual',
            volumeName: 'install-pv',
            resources: { requests: { storage: '1Gi' } },
          },
        },
      });
      // No controller-manager here: bind the claim and the volume as its PV controller would.
      await admin.request({
        method: 'PATCH',
        path: '/api/v1/persistentvolumes/install-pv',
        contentType: 'application/merge-patch+json',
        body: { spec: { claimRef: { namespace: APPS, name: 'data', uid: await claimUID() } } },
      });
      await admin.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${APPS}/persistentvolumeclaims/data/status`,
        contentType: 'application/merge-patch+json',
        body: { status: { phase: 'Bound' } },
      });
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${APPS}/pods`,
        body: {
          metadata: { name: 'volumes' },
          spec: {
            nodeName: VN,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            volumes: [
              { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
              {
                name: 'token',
                projected: {
                  sources: [
                    { serviceAccountToken: { path: 'token' } },
                    // Optional ClusterTrustBundles, by name (a GET) and by signer (a LIST): none exist.
                    { clusterTrustBundle: { name: 'absent', optional: true, path: 'named.pem' } },
                    {
                      clusterTrustBundle: {
                        signerName: 'example.com/signer',
                        labelSelector: {},
                        optional: true,
                        path: 'signer.pem',
                      },
                    },
                  ],
                },
              },
            ],
            containers: [
              {
                name: 'app',
                image: 'registry.local/app:1',
                volumeMounts: [
                  { name: 'data', mountPath: '/data' },
                  { name: 'token', mountPath: '/token' },
                ],
              },
            ],
          },
        },
      });
      await podReady('volumes');
    });

    it('mounts a podCertificate source once the test, as its signer, issues the request the operator made', async () => {
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${APPS}/pods`,
        body: {
          metadata: { name: 'certified' },
          spec: {
            nodeName: VN,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            volumes: [
              {
                name: 'tls',
                projected: {
                  sources: [
                    {
                      podCertificate: {
                        signerName: signer.signerName,
                        keyType: 'ED25519',
                        credentialBundlePath: 'bundle.pem',
                      },
                    },
                  ],
                },
              },
            ],
            containers: [
              {
                name: 'app',
                image: 'registry.local/app:1',
                volumeMounts: [{ name: 'tls', mountPath: '/tls' }],
              },
            ],
          },
        },
      });
      // The operator asks (get serviceaccounts, create podcertificaterequests) and waits on its watch of them.
      const pcr = await eventually(
        async () => (await requestsOfPod(admin, APPS, 'certified'))[0],
        30_000,
        "the operator's PodCertificateRequest",
      );
      expect(pcr.spec).to.deep.include({ podName: 'certified', nodeName: VN, serviceAccountName: 'default' });
      certifiedRequest = pcr.metadata.name ?? '';
      await signer.issue(admin, pcr);
      await podReady('certified');
    });

    it('serves the node API once its CSR is approved: TokenReview (401) and SubjectAccessReview (403, 200) decide', async () => {
      const csr = await eventually(
        async () => {
          const l = await admin.request<{
            items: { metadata: { name: string }; spec: { signerName: string; username: string } }[];
          }>({ method: 'GET', path: CSR_PATH });
          return l.items.find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving');
        },
        30_000,
        "the operator's kubelet-serving CSR",
      );
      csrName = csr.metadata.name;
      expect(csr.spec.username).to.equal(`system:serviceaccount:${NS}:${SA}`);
      await kubectlOk(cp, ['certificate', 'approve', csrName]);
      await certs!.manager(VN)!.whenServing();
      const clusterCa = readFileSync(path.join(cp.dir, 'pki', 'ca.crt'));
      const direct = (p: string, token: string): Promise<{ status: number; body: string }> =>
        nodeApiGet({ host: NODE_IP, port: 10250, ca: clusterCa }, p, token);
      expect((await direct('/pods', 'not-a-token')).status).to.equal(401);
      const token = (name: string): Promise<string> => saToken(cp, name, APPS);
      const nobody = await token('node-api-nobody');
      const reader = await token('node-api-reader');
      // The built-in role for the API server's kubelet client: nodes/proxy, nodes/log, nodes/metrics, ...
      await kubectlOk(cp, [
        'create',
        'clusterrolebinding',
        'node-api-reader',
        '--clusterrole=system:kubelet-api-admin',
        `--serviceaccount=${APPS}:node-api-reader`,
      ]);
      const denied = await direct('/pods', nobody);
      expect(denied.status).to.equal(403);
      expect(denied.body).to.contain(`system:serviceaccount:${APPS}:node-api-nobody`);
      const ok = await eventually(
        async () => {
          const r = await direct('/pods', reader);
          return r.status === 200 ? r : undefined;
        },
        20_000,
        'node API access with the binding',
      );
      expect((JSON.parse(ok.body) as { items: Pod[] }).items.map((p) => p.metadata.name)).to.include('plain');
    });

    it('flips a pod Ready both ways with a readiness probe, and patches the repeated Unhealthy event', async () => {
      await admin.request({
        method: 'POST',
        path: `/api/v1/namespaces/${APPS}/pods`,
        body: {
          metadata: {
            name: 'probed',
            annotations: {
              [simContainerBehaviourAnnotation('web')]: JSON.stringify({
                ports: { '8080': { readyAfterMs: 1500, failAfterMs: 4000 } },
              }),
            },
          },
          spec: {
            nodeName: VN,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            containers: [
              {
                name: 'web',
                image: 'registry.local/app:1',
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: {
                  httpGet: { path: '/healthz', port: 'http' },
                  periodSeconds: 1,
                  failureThreshold: 1,
                },
              },
            ],
          },
        },
      });
      await podReady('probed');
      await eventually(
        async () => {
          const p = await admin.request<Pod>({
            method: 'GET',
            path: `/api/v1/namespaces/${APPS}/pods/probed`,
          });
          const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
          return ready?.status === 'False' && p.status?.phase === 'Running';
        },
        20_000,
        'pod probed not Ready again',
      );
      // The probe keeps failing: the kubelet's event recorder counts the repeats with a patch.
      await eventually(
        async () => {
          const list = await admin.request<{ items: { reason: string; count?: number }[] }>({
            method: 'GET',
            path: `/api/v1/namespaces/${APPS}/events`,
            query: { fieldSelector: 'involvedObject.name=probed' },
          });
          return list.items.some((e) => e.reason === 'Unhealthy' && (e.count ?? 1) > 1);
        },
        20_000,
        'a repeated Unhealthy event',
      );
    });

    it('applies a label and a capacity change to its Node (patch, status patch), deletes pods, and drains on VirtualNode delete', async () => {
      await admin.request({
        method: 'PATCH',
        path: `${VN_PATH}/${VN}`,
        contentType: 'application/merge-patch+json',
        body: { spec: { labels: { 'install-test': 'yes' }, capacity: { pods: 42 } } },
      });
      await eventually(
        async () => {
          const n = await admin.request<Node>({ method: 'GET', path: `/api/v1/nodes/${VN}` });
          return n.metadata.labels?.['install-test'] === 'yes' && n.status?.capacity?.pods === '42';
        },
        20_000,
        'the Node label and capacity',
      );
      await admin.request({ method: 'DELETE', path: `/api/v1/namespaces/${APPS}/pods/plain` });
      const gone = (p: string): Promise<true | undefined> => isGone(admin, p);
      await eventually(() => gone(`/api/v1/namespaces/${APPS}/pods/plain`), 20_000, 'pod plain gone');
      await admin.request({ method: 'DELETE', path: `${VN_PATH}/${VN}` });
      await eventually(() => gone(`${VN_PATH}/${VN}`), 60_000, 'the VirtualNode gone');
      expect(await gone(`/api/v1/namespaces/${APPS}/pods/probed`)).to.equal(true);
      expect(await gone(`/api/v1/nodes/${VN}`)).to.equal(true);
      expect(await gone(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${VN}`)).to.equal(
        true,
      );
    });

    it("had its requests dispatched at a kubelet's priority levels (node-high, system)", async () => {
      // apiserver_flowcontrol_dispatched_requests_total by FlowSchema and priority level. The schemas are
      // the operator's own (flowcontrol.yaml): whatever they count, its ServiceAccount sent.
      const res = await kubectlOk(cp, ['get', '--raw', '/metrics']);
      const got = new Map<string, number>();
      for (const line of res.stdout.split('\n')) {
        if (!line.startsWith('apiserver_flowcontrol_dispatched_requests_total{')) continue;
        const fs = /flow_schema="([^"]*)"/.exec(line)?.[1];
        const pl = /priority_level="([^"]*)"/.exec(line)?.[1];
        got.set(`${fs} ${pl}`, Number(line.slice(line.lastIndexOf(' ') + 1)));
      }
      expect(got.get('kubelet-operator-node-high node-high') ?? 0, 'Node and Lease requests').to.be.above(0);
      expect(got.get('kubelet-operator-nodes system') ?? 0, 'the other requests').to.be.above(0);
    });

    it('was never refused, and used every verb and resource it is granted', async () => {
      // A watch is reported to onRequest when it ends: stop the operator so its informers' watches count.
      await op?.stop();
      op = undefined;
      const refused = [...seen].filter(([, codes]) => codes.some((c) => c === 401 || c === 403));
      expect(refused.map(([k]) => k)).to.deep.equal([]);
      const used = new Set(seen.keys());
      expect(
        [...used].filter((k) => !granted.includes(k)),
        'used but not granted',
      ).to.deep.equal([]);
      // The status manager GETs a pod only when the informer holds no copy of it (a pod deleted meanwhile, a
      // static pod's mirror); this scenario never gets there, every write here reads the informer's copy or
      // the pod as its own last write left it (src/kubelet/status/sync.ts).
      // A pod's ResourceClaims are read only for pods that have some, and the CSI rules but the CSINode's
      // creation serve CSI drivers and their volumes (none in this scenario).
      const rarelyUsed = new Set([
        'get pods',
        'get resourceclaims',
        'update csinodes',
        'delete csinodes',
        'get csidrivers',
        'get volumeattachments',
        'patch persistentvolumeclaims/status',
      ]);
      expect(
        granted.filter((k) => !used.has(k) && !rarelyUsed.has(k)),
        'granted but not used',
      ).to.deep.equal([]);
    });

    it('is refused (403) what it is not granted', async () => {
      const forbidden: [string, () => Promise<unknown>][] = [
        [
          'list secrets in a namespace',
          () => sa.request({ method: 'GET', path: `/api/v1/namespaces/${OTHER}/secrets` }),
        ],
        ['list secrets cluster-wide', () => sa.request({ method: 'GET', path: '/api/v1/secrets' })],
        [
          'list configmaps',
          () => sa.request({ method: 'GET', path: `/api/v1/namespaces/${OTHER}/configmaps` }),
        ],
        [
          "update another namespace's ConfigMap",
          () =>
            sa.request({
              method: 'PUT',
              path: `/api/v1/namespaces/${OTHER}/configmaps/settings`,
              body: { metadata: { name: 'settings', namespace: OTHER }, data: { mode: 'slow' } },
            }),
        ],
        [
          "patch another namespace's ConfigMap",
          () =>
            sa.request({
              method: 'PATCH',
              path: `/api/v1/namespaces/${OTHER}/configmaps/settings`,
              contentType: 'application/merge-patch+json',
              body: { data: { mode: 'slow' } },
            }),
        ],
        [
          'delete a Secret',
          () => sa.request({ method: 'DELETE', path: `/api/v1/namespaces/${OTHER}/secrets/creds` }),
        ],
        [
          'create a ConfigMap in kube-system',
          () =>
            sa.request({
              method: 'POST',
              path: '/api/v1/namespaces/kube-system/configmaps',
              body: { metadata: { name: 'x' } },
            }),
        ],
        [
          'create a pod',
          () =>
            sa.request({
              method: 'POST',
              path: `/api/v1/namespaces/${APPS}/pods`,
              body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
            }),
        ],
        [
          'get a Lease outside kube-node-lease',
          () =>
            sa.request({
              method: 'GET',
              path: '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x',
            }),
        ],
        [
          'get a shard Lease by name (the coordinator only lists and watches them)',
          () =>
            sa.request({
              method: 'GET',
              path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/replica-install-test`,
            }),
        ],
        [
          'list node Leases',
          () =>
            sa.request({
              method: 'GET',
              path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
            }),
        ],
        ['list CertificateSigningRequests', () => sa.request({ method: 'GET', path: CSR_PATH })],
        [
          'approve its own CSR',
          () =>
            sa.request({
              method: 'PUT',
              path: `${CSR_PATH}/${csrName}/approval`,
              body: {
                apiVersion: 'certificates.k8s.io/v1',
                kind: 'CertificateSigningRequest',
                metadata: { name: csrName },
              },
            }),
        ],
        [
          'sign a PodCertificateRequest (its status)',
          () =>
            sa.request({
              method: 'PUT',
              path: `/apis/certificates.k8s.io/v1/namespaces/${APPS}/podcertificaterequests/${certifiedRequest}/status`,
              body: {
                apiVersion: 'certificates.k8s.io/v1',
                kind: 'PodCertificateRequest',
                metadata: { name: certifiedRequest, namespace: APPS },
              },
            }),
        ],
        [
          'get a PodCertificateRequest by name (the operator watches them)',
          () =>
            sa.request({
              method: 'GET',
              path: `/apis/certificates.k8s.io/v1/namespaces/${APPS}/podcertificaterequests/${certifiedRequest}`,
            }),
        ],
        [
          'list ServiceAccounts',
          () => sa.request({ method: 'GET', path: `/api/v1/namespaces/${APPS}/serviceaccounts` }),
        ],
        [
          'read RBAC',
          () => sa.request({ method: 'GET', path: '/apis/rbac.authorization.k8s.io/v1/clusterroles' }),
        ],
      ];
      for (const [what, p] of forbidden) expect(await statusOf(p()), what).to.equal(403);
      // What it may, stated as a test: get any ConfigMap or Secret by name. RBAC cannot narrow that to
      // the objects its pods reference (the kubelet gets that from the Node authorizer).
      expect(
        await statusOf(sa.request({ method: 'GET', path: `/api/v1/namespaces/${OTHER}/secrets/creds` })),
      ).to.equal(200);
    });

    it('may not request a service-account token that is not bound to a pod (admission policy)', async () => {
      const unbound = (): Promise<unknown> =>
        sa.request({
          method: 'POST',
          path: `/api/v1/namespaces/${APPS}/serviceaccounts/default/token`,
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: ['x'] } },
        });
      // The policy binding takes a moment to reach the admission plugin: retry until it denies.
      const err = await eventually(
        async () => {
          try {
            await unbound();
            return undefined;
          } catch (e) {
            return e instanceof KindError && e.context.code === 403 ? e : undefined;
          }
        },
        20_000,
        'an unbound TokenRequest refused',
      );
      expect(err.message).to.contain('kubelet-operator-bound-tokens');
    });

    it('may not create, change or delete a Node without the virtual-node label (admission policy)', async () => {
      await admin.request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: { metadata: { name: 'real-node', labels: { 'kubernetes.io/hostname': 'real-node' } } },
      });
      const denied = async (what: string, p: Promise<unknown>): Promise<void> => {
        try {
          await p;
        } catch (err) {
          expect(err, what).to.be.instanceOf(KindError);
          expect((err as KindError).context.code, what).to.equal(403);
          expect((err as Error).message, what).to.contain('kubelet-operator-owned-nodes');
          return;
        }
        expect.fail(`${what} was allowed`);
      };
      // The policy binding takes a moment to reach the admission plugin: retry until it denies.
      await eventually(
        async () => {
          await denied('delete', sa.request({ method: 'DELETE', path: '/api/v1/nodes/real-node' }));
          return true;
        },
        20_000,
        'the admission policy to deny',
      );
      await denied(
        'patch',
        sa.request({
          method: 'PATCH',
          path: '/api/v1/nodes/real-node',
          contentType: 'application/merge-patch+json',
          body: { metadata: { labels: { hijacked: 'yes' } } },
        }),
      );
      await denied(
        'patch status',
        sa.request({
          method: 'PATCH',
          path: '/api/v1/nodes/real-node/status',
          contentType: 'application/merge-patch+json',
          body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
        }),
      );
      await denied(
        'create unlabelled',
        sa.request({ method: 'POST', path: '/api/v1/nodes', body: { metadata: { name: 'unlabelled' } } }),
      );
      // The admin may; the node is still there.
      const n = await admin.request<Node>({ method: 'GET', path: '/api/v1/nodes/real-node' });
      expect(n.metadata.labels?.hijacked).to.equal(undefined);
    });
  });
});

import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { shareUnchanged } from '../../../src/kube/structshare.js';
import { internPod } from '../../../src/operator/podintern.js';
import { Interner } from '../../../src/util/intern.js';

/** A pod as the API server returns it for a replica: defaulted, with its own service-account volume name. */
function replica(n: number, rv = '1'): Pod {
  const token = `kube-api-access-${n.toString(36).padStart(5, 'x')}`;
  return JSON.parse(
    JSON.stringify({
      metadata: {
        name: `web-${n}`,
        namespace: 'ns',
        uid: `uid-${n}`,
        resourceVersion: rv,
        labels: { app: 'web' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'rs', controller: true },
        ],
      },
      spec: {
        nodeName: 'vn-1',
        containers: [
          {
            name: 'app',
            image: 'img:1',
            ports: [{ containerPort: 8080, protocol: 'TCP' }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 10, timeoutSeconds: 1 },
            volumeMounts: [{ name: token, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
          },
        ],
        volumes: [{ name: token, projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }],
        tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' }],
        securityContext: {},
      },
      status: {
        phase: 'Running',
        podIP: `10.0.0.${n}`,
        hostIPs: [{ ip: '10.1.0.1' }],
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' }],
      },
    }),
  ) as Pod;
}

describe('internPod', () => {
  it('keeps one instance of what replicas have in common and the pod its own parts, values unchanged', () => {
    const i = new Interner();
    const a = internPod(replica(1), undefined, i);
    const b = internPod(replica(2), undefined, i);
    expect(a).to.deep.equal(replica(1));
    expect(b).to.deep.equal(replica(2));
    expect(b.metadata.labels).to.equal(a.metadata.labels);
    expect(b.metadata.ownerReferences).to.equal(a.metadata.ownerReferences);
    expect(b.spec.tolerations).to.equal(a.spec.tolerations);
    expect(b.spec.containers[0]!.readinessProbe).to.equal(a.spec.containers[0]!.readinessProbe);
    expect(b.spec.containers[0]!.ports).to.equal(a.spec.containers[0]!.ports);
    expect(b.spec.volumes![0]!.projected).to.equal(a.spec.volumes![0]!.projected);
    expect(b.status!.conditions).to.equal(a.status!.conditions);
    expect(b.spec.containers[0]!.volumeMounts).to.not.equal(a.spec.containers[0]!.volumeMounts);
    expect(b.spec.volumes![0]!.name).to.not.equal(a.spec.volumes![0]!.name);
  });

  it('leaves alone what the previous version already shares (a status patch does not re-intern the spec)', () => {
    const i = new Interner();
    const v1 = internPod(replica(1), undefined, i);
    const size = i.size;
    const next = replica(1, '2');
    next.status!.phase = 'Succeeded';
    const v2 = internPod(shareUnchanged(v1, next), v1, i);
    expect(v2.spec).to.equal(v1.spec);
    expect(v2.metadata.labels).to.equal(v1.metadata.labels);
    expect(v2.status!.phase).to.equal('Succeeded');
    expect(i.size - size, 'nothing new but the status parts').to.be.at.most(2);
  });

  it("shares a whole spec among the replicas of one node when nothing in it is the pod's own", () => {
    const i = new Interner();
    // No service-account volume (automountServiceAccountToken: false): no per-pod volume or mount.
    const bare = (n: number, node: string, extra: Record<string, unknown> = {}): Pod => {
      const p = replica(n);
      delete p.spec.volumes;
      delete p.spec.containers[0]!.volumeMounts;
      p.spec.nodeName = node;
      Object.assign(p.spec, extra);
      return p;
    };
    const a = internPod(bare(1, 'vn-1'), undefined, i);
    const b = internPod(bare(2, 'vn-1'), undefined, i);
    const other = internPod(bare(3, 'vn-2'), undefined, i);
    const named = internPod(bare(4, 'vn-1', { hostname: 'web-4' }), undefined, i);
    expect(a).to.deep.equal(bare(1, 'vn-1'));
    expect(named).to.deep.equal(bare(4, 'vn-1', { hostname: 'web-4' }));
    expect(b.spec, 'one node, one template').to.equal(a.spec);
    expect(other.spec, 'another node').to.not.equal(a.spec);
    expect(other.spec.containers, 'the containers are the same everywhere').to.equal(a.spec.containers);
    expect(named.spec, "a hostname is the pod's own").to.not.equal(a.spec);
    expect(named.spec.containers).to.equal(a.spec.containers);
    expect(() => {
      a.spec.nodeName = 'vn-9';
    }, 'shared, so frozen').to.throw(TypeError);
    // A mount keeps the container (and so the spec) the pod's own, as before.
    const mounted = internPod(replica(5), undefined, i);
    expect(Object.isFrozen(mounted.spec)).to.equal(false);
    expect(Object.isFrozen(mounted.spec.containers[0])).to.equal(false);
  });

  it('freezes the shared parts, so a write to them throws instead of changing other pods', () => {
    const i = new Interner();
    const a = internPod(replica(1), undefined, i);
    expect(() => {
      (a.metadata.labels as Record<string, string>).app = 'x';
    }).to.throw(TypeError);
    a.metadata.name = 'renamed';
    expect(a.metadata.name).to.equal('renamed');
  });
});

/**
 * The VirtualNode controller against a real kube-apiserver: CRD installed from crds/, finalizer handling,
 * spec validation reported in status, status written only on change, pods routed by nodeName, and the drain
 * on delete. The ManagedNode here is a recording fake: this test is about the controller and the API server.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { Pod } from '../../src/api/core.js';
import { FINALIZER, type VirtualNode, type VirtualNodeSpec } from '../../src/api/virtualnode.js';
import { KubeClient } from '../../src/kube/client.js';
import {
  Operator,
  type ManagedNode,
  type ManagedNodeFactory,
  type ManagedNodeObservation,
} from '../../src/operator.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { kubectl, REPO_ROOT, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { applyCrd } from '../support/crd.js';
import { isGone, postVirtualNode, VN_PATH } from '../support/operator.js';

const VN = VN_PATH;

class FakeNode implements ManagedNode {
  events: string[] = [];
  pods = new Map<string, Pod>();
  podsLeft = 0;
  constructor(readonly nodeName: string) {}
  async start() {
    this.events.push('start');
  }
  async update(spec: VirtualNodeSpec) {
    this.events.push(`update ${JSON.stringify(spec.labels)}`);
  }
  async drain() {
    this.events.push('drain');
    return this.podsLeft-- <= 0;
  }
  async remove() {
    this.events.push('remove');
  }
  async stop() {
    this.events.push('stop');
  }
  podAdded(p: Pod) {
    this.pods.set(p.metadata.name!, p);
  }
  podUpdated(_o: Pod, p: Pod) {
    this.pods.set(p.metadata.name!, p);
  }
  podDeleted(p: Pod) {
    this.pods.delete(p.metadata.name!);
  }
  observe(): ManagedNodeObservation {
    return {
      registered: true,
      problems: [],
      runtimeReady: true,
      runtime: { name: 'fake', version: '1.0' },
      internalIP: '127.0.0.9',
      pods: { total: this.pods.size, running: 0, pending: this.pods.size },
    };
  }
}

describe('VirtualNode controller (real apiserver)', function () {
  // A cold cache builds the control plane first (see test/support/controlplane.ts).
  this.timeout(20 * 60_000);
  let cp: ControlPlane;
  let client: KubeClient;
  let op: Operator;
  const nodes = new Map<string, FakeNode>();
  const specs = new Map<string, VirtualNodeSpec>();
  let patches = 0;

  before(async () => {
    cp = await startControlPlane();
    await applyCrd(cp);
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), {
      onRequest: (verb, resource) => {
        if (verb === 'PATCH' && resource === 'virtualnodes/status') patches++;
      },
    });
    const factory: ManagedNodeFactory = {
      create: (_vn, spec, nodeName) => {
        specs.set(nodeName, spec);
        const n = new FakeNode(nodeName);
        nodes.set(nodeName, n);
        return n;
      },
      needsRestart: (a, b) => a.runtime.type !== b.runtime.type,
    };
    op = new Operator({
      client,
      factory,
      clock: new RealClock(),
      logger: silentLogger,
      statusPeriodMs: 500,
      drainRecheckMs: 200,
    });
    await op.start();
    // No controller-manager here, so the default ServiceAccount that pod admission wants is made by hand.
    await client.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/serviceaccounts',
      body: { metadata: { name: 'default' } },
    });
  });

  after(async () => {
    await op?.stop();
    client?.close();
    await cp?.stop();
  });

  const getVN = (name: string) => client.request<VirtualNode>({ method: 'GET', path: `${VN}/${name}` });

  it('adds the finalizer, starts the node and reports Ready with observedGeneration', async () => {
    await postVirtualNode(client, 'vn-a', { runtime: { type: 'sim' } });
    const vn = await eventually(async () => {
      const v = await getVN('vn-a');
      return v.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? v : undefined;
    });
    expect(vn.metadata.finalizers).to.include(FINALIZER);
    expect(vn.status).to.deep.include({ nodeName: 'vn-a', observedGeneration: vn.metadata.generation });
    expect(vn.status?.runtime).to.deep.equal({ name: 'fake', version: '1.0' });
    expect(nodes.get('vn-a')!.events).to.deep.equal(['start']);
    // Defaults from the CRD schema were applied by the API server.
    expect((vn.spec as VirtualNodeSpec).capacity).to.deep.include({ pods: 110, cpu: '4' });
  });

  it('gives each simulated node without podCIDR its own block, recorded in status', async () => {
    await postVirtualNode(client, 'vn-cidr', { runtime: { type: 'sim' } });
    const b = await eventually(async () => {
      const v = await getVN('vn-cidr');
      return v.status?.podCIDR ? v : undefined;
    });
    const a = await getVN('vn-a');
    expect(a.status?.podCIDR).to.match(/^10\.\d+\.\d+\.0\/24$/);
    expect(b.status?.podCIDR).to.match(/^10\.\d+\.\d+\.0\/24$/);
    expect(b.status?.podCIDR).to.not.equal(a.status?.podCIDR);
    const spec = specs.get('vn-cidr')!;
    expect(spec.runtime.type === 'sim' && spec.runtime.sim.podCIDR).to.equal(b.status?.podCIDR);
    await client.request({ method: 'DELETE', path: `${VN}/vn-cidr` });
    await eventually(() => isGone(client, `${VN}/vn-cidr`));
  });

  it('does not rewrite an unchanged status on every resync', async () => {
    const before = patches;
    await new Promise((r) => setTimeout(r, 2500)); // five status periods
    expect(patches - before).to.equal(0);
  });

  it('routes pods bound to the node, and only those', async () => {
    const mk = (name: string, nodeName: string) =>
      client.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/pods',
        body: { metadata: { name }, spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] } },
      });
    await mk('p-on-a', 'vn-a');
    await mk('p-elsewhere', 'other-node');
    await eventually(() => nodes.get('vn-a')!.pods.has('p-on-a') || undefined);
    expect([...nodes.get('vn-a')!.pods.keys()]).to.deep.equal(['p-on-a']);
    await eventually(() => (nodes.get('vn-a')!.observe().pods.total === 1 ? true : undefined));
  });

  it('the CRD rejects malformed specs with a message naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ runtime: { type: 'cri', cri: { endpoint: 'unix://relative.sock' } } }, 'spec.runtime.cri.endpoint'],
      [{ runtime: { type: 'sim' }, capacity: { cpu: '-2' } }, 'spec.capacity.cpu'],
      [{ runtime: { type: 'sim' }, capacity: { pods: -1 } }, 'spec.capacity.pods'],
      [{ runtime: { type: 'sim' }, taints: [{ key: 'k', effect: 'Sometimes' }] }, 'spec.taints[0].effect'],
      [{ runtime: { type: 'cri' } }, 'runtime.cri is required'],
    ];
    for (const [spec, field] of cases) {
      const bad = await kubectl(
        cp,
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'kubelet-operator.dev/v1alpha1',
          kind: 'VirtualNode',
          metadata: { name: 'vn-bad' },
          spec,
        }),
      );
      expect(bad.code, JSON.stringify(spec)).to.not.equal(0);
      expect(bad.stderr, JSON.stringify(spec)).to.contain(field);
    }
  });

  it('reports a spec that predates the schema as Ready=False InvalidSpec and starts nothing', async () => {
    // Relax the stored schema (as for objects written before validation existed), store a bad spec,
    // then restore the real CRD: the operator must catch it itself.
    const crd = parse(readFileSync(path.join(REPO_ROOT, 'crds/virtualnode.yaml'), 'utf8')) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }[] };
    };
    crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    };
    const relaxed = await kubectl(cp, ['apply', '-f', '-'], JSON.stringify(crd));
    expect(relaxed.code, relaxed.stderr).to.equal(0);
    await eventually(async () => {
      const r = await kubectl(
        cp,
        ['create', '--dry-run=server', '-f', '-'],
        JSON.stringify({
          apiVersion: 'kubelet-operator.dev/v1alpha1',
          kind: 'VirtualNode',
          metadata: { name: 'vn-probe' },
          spec: { runtime: { type: 'cri', cri: { endpoint: 'relative' } } },
        }),
      );
      return r.code === 0 ? true : undefined;
    });
    await postVirtualNode(client, 'vn-old', {
      runtime: { type: 'cri', cri: { endpoint: 'unix://relative.sock' } },
    });
    const restored = await kubectl(cp, ['apply', '-f', path.join(REPO_ROOT, 'crds/virtualnode.yaml')]);
    expect(restored.code, restored.stderr).to.equal(0);
    const ready = await eventually(async () => {
      const v = await getVN('vn-old');
      return v.status?.conditions?.find((c) => c.type === 'Ready');
    });
    expect(ready).to.deep.include({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'spec.runtime.cri.endpoint: must be unix:///absolute/path',
    });
    expect(nodes.has('vn-old')).to.equal(false);
    await client.request({ method: 'DELETE', path: `${VN}/vn-old` });
    await eventually(() => isGone(client, `${VN}/vn-old`));
  });

  it('applies a spec change without a restart', async () => {
    await client.request({
      method: 'PATCH',
      path: `${VN}/vn-a`,
      contentType: 'application/merge-patch+json',
      body: { spec: { labels: { zone: 'z1' } } },
    });
    await eventually(() => (nodes.get('vn-a')!.events.some((e) => e.includes('z1')) ? true : undefined));
    expect(nodes.get('vn-a')!.events.filter((e) => e === 'start')).to.have.length(1);
  });

  it('drains, removes the node and drops the finalizer on delete', async () => {
    nodes.get('vn-a')!.podsLeft = 2;
    await client.request({ method: 'DELETE', path: `${VN}/vn-a` });
    await eventually(() => isGone(client, `${VN}/vn-a`));
    const ev = nodes.get('vn-a')!.events;
    expect(ev.filter((e) => e === 'drain').length).to.be.greaterThanOrEqual(3);
    expect(ev.slice(-2)).to.deep.equal(['stop', 'remove']);
    expect(op.servedNodes()).to.deep.equal([]);
  });
});

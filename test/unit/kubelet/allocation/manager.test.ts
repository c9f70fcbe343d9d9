// The allocation manager (src/kubelet/allocation/manager.ts): resize requests, their outcomes, conditions and
// Events, the retry order when room frees up, and restart safety. Fake clock, no I/O.
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { AllocationManager } from '../../../../src/kubelet/allocation/manager.js';
import { PodResizeConditions } from '../../../../src/kubelet/status/resizeconditions.js';
import type { AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';
import { FakeClock } from '../../../../src/util/clock.js';

function ctr(cpu: string, extra: Partial<Container> = {}): Container {
  return { name: 'app', image: 'busybox', resources: { requests: { cpu }, limits: { cpu } }, ...extra };
}

function pod(uid: string, cpu: string, generation = 1, priority?: number): Pod {
  return {
    metadata: { name: uid, namespace: 'ns', uid, generation },
    spec: { containers: [ctr(cpu)], ...(priority !== undefined ? { priority } : {}) },
  };
}

class Harness {
  clock = new FakeClock();
  conditions = new PodResizeConditions(this.clock);
  pods = new Map<string, Pod>();
  events: string[] = [];
  synced: string[] = [];
  node: AdmissionNode = {
    name: 'n',
    labels: {},
    taints: [],
    allocatable: new Map([
      ['cpu', 2000],
      ['memory', 1 << 30],
      ['pods', 110],
    ]),
  };
  m = new AllocationManager({
    conditions: this.conditions,
    node: () => this.node,
    getPodByUID: (uid) => this.pods.get(uid),
    activePods: () => [...this.pods.values()],
    record: (p, type, reason, message) => this.events.push(`${p.metadata.name} ${type} ${reason} ${message}`),
    triggerPodSync: (p) => this.synced.push(p.metadata.name!),
    logger: { info: () => undefined },
  });

  admit(p: Pod): void {
    this.pods.set(p.metadata.uid!, p);
    this.m.setAllocated(this.m.podForAdmission(p));
  }

  update(p: Pod): void {
    this.pods.set(p.metadata.uid!, p);
    this.m.handlePodUpdate(p);
  }

  allocatedCPU(uid: string): string | number | undefined {
    return this.m.getContainerAllocation(uid, 'app')?.requests?.cpu;
  }
}

describe('AllocationManager', () => {
  it('keeps one allocation for pods allocated alike; a resize of one leaves the others as they were', () => {
    const h = new Harness();
    h.admit(pod('a', '500m'));
    h.admit(pod('b', '500m'));
    h.admit(pod('c', '250m'));
    expect(h.m.getContainerAllocation('a', 'app')).to.equal(h.m.getContainerAllocation('b', 'app'));
    expect(h.allocatedCPU('c')).to.equal('250m');
    h.update(pod('a', '1', 2));
    expect([h.allocatedCPU('a'), h.allocatedCPU('b')]).to.deep.equal(['1', '500m']);
    // The pod as allocated follows its own allocation, whichever pods share it.
    expect(
      h.m.updatePodFromAllocation(pod('b', '750m', 2)).pod.spec.containers[0]!.resources?.requests,
    ).to.deep.equal({
      cpu: '500m',
    });
    expect(
      h.m.updatePodFromAllocation(pod('a', '750m', 3)).pod.spec.containers[0]!.resources?.requests,
    ).to.deep.equal({
      cpu: '1',
    });
  });

  it('accepts a resize that fits: allocation, PodResizeInProgress, ResizeStarted, a pod sync', () => {
    const h = new Harness();
    h.admit(pod('a', '500m'));
    h.update(pod('a', '1', 2));
    expect(h.allocatedCPU('a')).to.equal('1');
    expect(h.conditions.get('a').map((c) => [c.type, c.reason ?? '', c.observedGeneration])).to.deep.equal([
      ['PodResizeInProgress', '', 2],
    ]);
    expect(h.events).to.have.length(1);
    expect(h.events[0]).to.equal(
      'a Normal ResizeStarted Pod resize started: {"containers":[{"name":"app","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"1"}}}],"generation":2}',
    );
    expect(h.synced).to.deep.equal(['a']);
    expect(h.m.hasPendingResizes()).to.equal(false);
  });

  it('defers a resize that waits for room and completes it when another pod terminates', () => {
    const h = new Harness();
    h.admit(pod('a', '500m'));
    h.admit(pod('b', '1'));
    h.update(pod('a', '1500m', 2));
    expect(h.allocatedCPU('a')).to.equal('500m');
    const pending = h.conditions.pending('a')!;
    expect([pending.reason, pending.message, pending.observedGeneration]).to.deep.equal([
      'Deferred',
      "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
      2,
    ]);
    expect(h.events[0]).to.match(
      /^a Warning ResizeDeferred Pod resize Deferred: \{.*"generation":2,"error":"Node didn't/,
    );
    expect(h.m.pendingResizeUIDs()).to.deep.equal(['a']);

    // Retrying without room changes nothing and records nothing new.
    h.m.retryPendingResizes('periodic_retry');
    expect(h.events).to.have.length(1);

    h.pods.delete('b');
    h.m.removePod('b');
    h.m.retryPendingResizes('pod_terminated');
    expect(h.allocatedCPU('a')).to.equal('1500m');
    expect(h.conditions.pending('a')).to.equal(undefined);
    expect(h.conditions.inProgress('a')?.observedGeneration).to.equal(2);
    expect(h.events[1]).to.match(/^a Normal ResizeStarted/);
    expect(h.m.hasPendingResizes()).to.equal(false);
  });

  it('marks a resize that can never fit Infeasible and drops it from the queue until the spec changes', () => {
    const h = new Harness();
    h.admit(pod('a', '500m'));
    h.update(pod('a', '4', 2));
    expect(h.conditions.pending('a')?.reason).to.equal('Infeasible');
    expect(h.conditions.pending('a')?.message).to.equal(
      "Node didn't have enough capacity: cpu, requested: 4000, capacity: 2000",
    );
    expect(h.events[0]).to.match(/^a Warning ResizeInfeasible Pod resize Infeasible: /);
    expect(h.m.hasPendingResizes()).to.equal(false);
    // Back to what was allocated: the pending condition goes.
    h.update(pod('a', '500m', 3));
    expect(h.conditions.get('a')).to.deep.equal([]);
    expect(h.synced.at(-1)).to.equal('a');
  });

  it('retries in the kubelet order: shrinking first, then priority, then Guaranteed, then the longest pending', () => {
    const h = new Harness();
    h.node.allocatable.set('cpu', 1000);
    for (const [uid, cpu, prio] of [
      ['low', '100m', 0],
      ['high', '100m', 100],
      ['older', '100m', 0],
      ['shrink', '300m', 0],
      ['filler', '400m', 0],
    ] as const) {
      h.admit(pod(uid, cpu, 1, prio));
    }
    // Room left: 0. Every growing resize is deferred; the one that shrinks fits at once.
    h.update(pod('older', '200m', 2, 0));
    h.clock.advance(1000);
    h.update(pod('low', '200m', 2, 0));
    h.update(pod('high', '200m', 2, 100));
    expect(h.m.pendingResizeUIDs()).to.deep.equal(['high', 'older', 'low']);
    // Guaranteed (requests = limits) before Burstable at the same priority.
    const burstable = pod('low', '200m', 3, 0);
    burstable.spec.containers[0]!.resources = { requests: { cpu: '200m' } };
    h.update(burstable);
    h.update(pod('shrink', '100m', 2, 0));
    expect(h.allocatedCPU('shrink')).to.equal('100m');
    // 200m freed: the highest priority goes first and takes 100m; the older one takes the rest.
    h.m.retryPendingResizes('periodic_retry');
    expect(h.allocatedCPU('high')).to.equal('200m');
    expect(h.allocatedCPU('older')).to.equal('200m');
    expect(h.allocatedCPU('low')).to.equal('100m');
    expect(h.m.pendingResizeUIDs()).to.deep.equal(['low']);
  });

  it('after a restart, admits a pod at the allocation its status shows and queues the resize it did not apply', () => {
    const h = new Harness();
    const p = pod('a', '1', 3);
    p.status = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'app',
          ready: true,
          restartCount: 0,
          allocatedResources: { cpu: '500m' },
          resources: { requests: { cpu: '500m' }, limits: { cpu: '500m' } },
        },
      ],
    };
    h.pods.set('a', p);
    const admitted = h.m.podForAdmission(p);
    expect(admitted.spec.containers[0]!.resources?.requests?.cpu).to.equal('500m');
    h.m.setAllocated(admitted);
    expect(h.m.queueIfResizeRequested(p)).to.equal(true);
    h.m.retryPendingResizes('pods_added');
    expect(h.allocatedCPU('a')).to.equal('1');
    // A pod whose status matches its spec is not resized again.
    const h2 = new Harness();
    const q = pod('b', '500m');
    q.status = structuredClone(p.status);
    h2.pods.set('b', q);
    h2.m.setAllocated(h2.m.podForAdmission(q));
    expect(h2.m.queueIfResizeRequested(q)).to.equal(false);
    expect(h2.events).to.deep.equal([]);
  });
});

import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { ResultsManager } from '../../../../src/kubelet/prober/results.js';
import type { ProbeType } from '../../../../src/kubelet/prober/types.js';
import { WorkerIndex } from '../../../../src/kubelet/prober/workerindex.js';
import { ProbeWorker } from '../../../../src/kubelet/prober/worker.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { makePod, probe } from './fixtures.js';

const clock = new FakeClock();
const results = {
  liveness: new ResultsManager('liveness'),
  readiness: new ResultsManager('readiness'),
  startup: new ResultsManager('startup'),
};

function podWith(uid: string): Pod {
  const pod = makePod([
    { name: 'a', readinessProbe: probe(), livenessProbe: probe() },
    { name: 'b', readinessProbe: probe() },
  ]);
  pod.metadata.uid = uid;
  return pod;
}

function worker(pod: Pod, container: 'a' | 'b', type: ProbeType): ProbeWorker {
  const c = pod.spec.containers.find((x) => x.name === container)!;
  return new ProbeWorker(pod, c, type, {
    clock,
    random: () => 0,
    getPodStatus: () => undefined,
    results: results[type],
    runner: () => Promise.resolve('success'),
    proberStartedAt: 0,
  });
}

describe('prober WorkerIndex', () => {
  it('finds workers by pod, container and probe type, one or several per pod', () => {
    const idx = new WorkerIndex();
    const p1 = podWith('u1');
    const p2 = podWith('u2');
    const a1 = worker(p1, 'a', 'readiness');
    const l1 = worker(p1, 'a', 'liveness');
    const b1 = worker(p1, 'b', 'readiness');
    const a2 = worker(p2, 'a', 'readiness');
    for (const w of [a1, a2, l1, b1]) expect(idx.add(w)).to.equal(true);
    expect(idx.size).to.equal(4);
    expect(idx.get('u1', 'a', 'readiness')).to.equal(a1);
    expect(idx.get('u1', 'a', 'liveness')).to.equal(l1);
    expect(idx.get('u1', 'b', 'readiness')).to.equal(b1);
    expect(idx.get('u2', 'a', 'readiness')).to.equal(a2);
    expect(idx.get('u2', 'a', 'liveness')).to.equal(undefined);
    expect(idx.get('u2', 'b', 'readiness')).to.equal(undefined);
    expect(idx.get('u3', 'a', 'readiness')).to.equal(undefined);
    expect(idx.ofPod('u1')).to.have.ordered.members([a1, l1, b1]);
    expect(idx.ofPod('u2')).to.have.ordered.members([a2]);
    expect(idx.ofPod('u3')).to.have.ordered.members([]);
    expect([...idx.pods()]).to.deep.equal(['u1', 'u2']);
  });

  it('refuses a taken key, and removes only the very worker given', () => {
    const idx = new WorkerIndex();
    const p = podWith('u1');
    const first = worker(p, 'a', 'readiness');
    const other = worker(p, 'a', 'readiness');
    expect(idx.add(first)).to.equal(true);
    expect(idx.add(other)).to.equal(false);
    expect(idx.remove(other)).to.equal(false);
    expect(idx.get('u1', 'a', 'readiness')).to.equal(first);
    const l = worker(p, 'a', 'liveness');
    idx.add(l);
    expect(idx.remove(other)).to.equal(false);
    expect(idx.size).to.equal(2);
    expect(idx.remove(first)).to.equal(true);
    expect(idx.remove(first)).to.equal(false);
    expect(idx.ofPod('u1')).to.have.ordered.members([l]);
    expect(idx.add(other)).to.equal(true);
    expect(idx.ofPod('u1')).to.have.ordered.members([l, other]);
    expect(idx.remove(l)).to.equal(true);
    expect(idx.remove(other)).to.equal(true);
    expect(idx.size).to.equal(0);
    expect([...idx.pods()]).to.deep.equal([]);
  });

  it('ofPod returns a copy that stays valid while workers are removed', () => {
    const idx = new WorkerIndex();
    const p = podWith('u1');
    const ws = [worker(p, 'a', 'readiness'), worker(p, 'a', 'liveness'), worker(p, 'b', 'readiness')];
    for (const w of ws) idx.add(w);
    const seen: ProbeWorker[] = [];
    for (const w of idx.ofPod('u1')) {
      seen.push(w);
      idx.remove(w);
    }
    expect(seen).to.have.ordered.members(ws);
    expect(idx.size).to.equal(0);
  });
});

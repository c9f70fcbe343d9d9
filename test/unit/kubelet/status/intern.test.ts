import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../../src/api/core.js';
import { asPodUID } from '../../../../src/kubelet/container/types.js';
import { internPodStatus } from '../../../../src/kubelet/status/intern.js';
import { Interner } from '../../../../src/util/intern.js';
import { StatusManager } from '../../../../src/kubelet/status/manager.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { FakeApiServer } from '../../../conformance/areas/statusManager-apiserver.js';
import { FakePodManager } from '../../../conformance/areas/statusManager-world.js';

const status = (podIP: string, id: string): PodStatus => ({
  phase: 'Running',
  podIP,
  podIPs: [{ ip: podIP }],
  hostIP: '10.0.0.1',
  hostIPs: [{ ip: '10.0.0.1' }],
  startTime: '2026-01-01T00:00:01Z',
  conditions: [
    { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:05Z' },
    { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:01Z' },
  ],
  containerStatuses: [
    {
      name: 'app',
      ready: true,
      restartCount: 0,
      containerID: `sim://${id}`,
      image: 'img:1',
      imageID: 'img@sha256:00',
      state: { running: { startedAt: '2026-01-01T00:00:01Z' } },
      resources: {},
    },
  ],
});

describe('status interning', () => {
  it('shares what two pods have in common, keeps what is their own, and changes no value', () => {
    const i = new Interner();
    const a = internPodStatus(status('10.88.0.2', 'a'), i);
    const b = internPodStatus(status('10.88.0.3', 'b'), i);
    expect(a).to.deep.equal(status('10.88.0.2', 'a'));
    expect(b).to.deep.equal(status('10.88.0.3', 'b'));
    expect(b.conditions).to.equal(a.conditions);
    expect(b.hostIPs).to.equal(a.hostIPs);
    expect(b.containerStatuses![0]!.state).to.equal(a.containerStatuses![0]!.state);
    expect(b.containerStatuses![0]!.resources).to.equal(a.containerStatuses![0]!.resources);
    expect(b.podIPs).to.not.equal(a.podIPs);
    expect(b.containerStatuses![0]).to.not.equal(a.containerStatuses![0]);
  });

  it('keeps every pod IP, dual stack too, and leaves the input as it was', () => {
    const i = new Interner();
    const dual: PodStatus = { ...status('10.88.0.2', 'a'), podIPs: [{ ip: '10.88.0.2' }, { ip: 'fd00::2' }] };
    const before = JSON.stringify(dual);
    const out = internPodStatus(dual, i);
    expect(out.podIPs).to.deep.equal([{ ip: '10.88.0.2' }, { ip: 'fd00::2' }]);
    expect(out.podIPs).to.not.equal(dual.podIPs);
    expect(JSON.stringify(dual)).to.equal(before);
    // A podIPs that does not start with podIP (never written so, but not ours to fix) is kept as it is.
    const odd: PodStatus = { ...status('10.88.0.2', 'a'), podIPs: [{ ip: 'fd00::2' }] };
    expect(internPodStatus(odd, i).podIPs).to.equal(odd.podIPs);
  });

  it('freezes shared values, so a mistaken write throws instead of changing another pod', () => {
    const i = new Interner();
    const a = internPodStatus(status('10.88.0.2', 'a'), i);
    expect(() => {
      (a.conditions![0] as { status: string }).status = 'False';
    }).to.throw(TypeError);
    expect(() => a.hostIPs!.push({ ip: 'x' })).to.throw(TypeError);
  });

  it('stays bounded: two generations of at most max entries', () => {
    const i = new Interner(3);
    for (let n = 0; n < 20; n++) i.value({ n });
    expect(i.size).to.be.at.most(6);
    const kept = i.value({ n: 19 });
    expect(i.value({ n: 19 })).to.equal(kept);
    expect(i.value({ n: 0 })).to.deep.equal({ n: 0 });
  });

  it('answers a value it handed out as it is, without writing its JSON again, even after its generation went', () => {
    const i = new Interner(2);
    let written = 0;
    const v = { a: 1, toJSON: () => (written++, { a: 1 }) };
    const shared = i.value(v);
    expect(shared).to.equal(v);
    expect(written).to.equal(1);
    expect(i.value(shared)).to.equal(shared);
    for (let n = 0; n < 10; n++) i.value({ n });
    expect(i.value(shared)).to.equal(shared);
    expect(written, 'no JSON text written for a handed-out value').to.equal(1);
    // An equal value that is not the handed-out one is still found by its text.
    const first = i.value({ a: 3 });
    expect(i.value({ a: 3 })).to.equal(first);
  });

  it('the status manager interns its statuses at a full pass; they still read and copy as before', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const server = new FakeApiServer();
    const manager = new StatusManager({
      client: server,
      podManager: new FakePodManager(server),
      podDeletionSafety: { podCouldHaveRunningContainers: () => false },
      clock,
    });
    const pod = (uid: string): Pod => ({
      metadata: { uid, name: uid, namespace: 'ns' },
      spec: { containers: [{ name: 'app' }] },
      status: {},
    });
    manager.setPodStatus(pod('u1'), { phase: 'Pending', hostIPs: [{ ip: '10.0.0.1' }] });
    manager.setPodStatus(pod('u2'), { phase: 'Pending', hostIPs: [{ ip: '10.0.0.1' }] });
    const hostIPs = (uid: string) => manager.peekPodStatus(asPodUID(uid))!.hostIPs;
    expect(hostIPs('u2'), 'as built: one copy each until a full pass').to.not.equal(hostIPs('u1'));
    const versions = ['u1', 'u2'].map((uid) => manager.cachedEntry(asPodUID(uid))?.version);
    await manager.syncBatch(true);
    const one = manager.peekPodStatus(asPodUID('u1'))!;
    expect(manager.peekPodStatus(asPodUID('u2'))!.hostIPs).to.equal(one.hostIPs);
    expect(Object.isFrozen(one.hostIPs)).to.equal(true);
    expect(['u1', 'u2'].map((uid) => manager.cachedEntry(asPodUID(uid))?.version)).to.deep.equal(versions);
    const copy = manager.getPodStatus(asPodUID('u1'))!;
    copy.hostIPs!.push({ ip: '10.0.0.2' });
    expect(manager.peekPodStatus(asPodUID('u2'))!.hostIPs).to.deep.equal([{ ip: '10.0.0.1' }]);
  });
});

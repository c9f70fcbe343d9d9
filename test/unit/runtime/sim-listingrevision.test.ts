// The simulated runtime's listing revision (RuntimeCapabilities.listingRevision): it stands while nothing a
// listing reports changes and moves with every sandbox or container added, removed or changing state, whoever
// changed it (a call, a process exiting on the clock); it is unknown while a fault is armed or the runtime is
// down or closed, so that a listing is asked and fails as it should.
import { expect } from 'chai';
import type { ContainerState, SandboxState } from '../../../src/runtime/types.js';
import { Rng } from '../../chaos/lib/rng.js';
import { newSim } from './sim-fixtures.js';

type Sim = ReturnType<typeof newSim>['sim'];

/** Awaits a call that may wait on the clock (a stop's grace period), moving the clock until it settles. */
async function drive<T>(clock: { advance(ms: number): void }, p: Promise<T>): Promise<T | undefined> {
  let done = false;
  const settled = p.then(
    (v) => ((done = true), v),
    () => ((done = true), undefined),
  );
  for (let i = 0; i < 200 && !done; i++) {
    await new Promise((res) => setImmediate(res));
    if (!done) clock.advance(100);
  }
  // A call still waiting after 20 s of clock goes on in the background, as it would on a runtime.
  return done ? settled : undefined;
}

/** The same listing answered afresh: the union of the listings by state, in creation order. */
async function freshContainers(sim: Sim): Promise<string[]> {
  const states: ContainerState[] = ['created', 'running', 'exited', 'unknown'];
  const all = (await Promise.all(states.map((state) => sim.listContainers({ state })))).flat();
  return all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1)).map((c) => `${c.id} ${c.state}`);
}

async function freshSandboxes(sim: Sim): Promise<string[]> {
  const states: SandboxState[] = ['ready', 'notready'];
  const all = (await Promise.all(states.map((state) => sim.listPodSandbox({ state })))).flat();
  return all.sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1)).map((s) => `${s.id} ${s.state}`);
}

describe('SimRuntime listing revision', () => {
  it('stands while nothing listed changes and moves with each change, a process exiting on the clock too', async () => {
    const { sim, pod, run, clock } = newSim();
    const revision = (): number | undefined => sim.capabilities.listingRevision?.();
    const p = await pod();
    await run(p, 'short', { argv: ['sleep', '2'] });
    const r0 = revision();
    expect(r0).to.be.a('number');
    await sim.listContainers();
    await sim.containerStatus((await sim.listContainers())[0]!.id);
    clock.advance(1000);
    expect(revision(), 'listed, inspected, still running').to.equal(r0);
    clock.advance(1500);
    const r1 = revision();
    expect(r1, 'exited on the clock').to.not.equal(r0);
    await sim.stopPodSandbox(p.id);
    expect(revision()).to.not.equal(r1);
  });

  it('is unknown while a fault is armed or the runtime is down or closed', async () => {
    const { sim } = newSim();
    const revision = (): number | undefined => sim.capabilities.listingRevision?.();
    expect(revision()).to.be.a('number');
    sim.injectFault({ op: 'listContainers', kind: 'Unavailable' });
    expect(revision()).to.equal(undefined);
    await sim.listContainers().catch(() => undefined);
    expect(revision(), 'the fault used up').to.be.a('number');
    sim.setDown(true);
    expect(revision()).to.equal(undefined);
    sim.setDown(false);
    expect(revision()).to.be.a('number');
    await sim.close();
    expect(revision()).to.equal(undefined);
  });

  it('never stands over a change a fresh listing shows, through random runtime work', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rng = new Rng(seed);
      const r = (): number => rng.next();
      const { sim, pod, create, clock } = newSim();
      const pods: Awaited<ReturnType<typeof pod>>[] = [];
      const containers: string[] = [];
      const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(r() * xs.length)];
      let before = { revision: sim.capabilities.listingRevision?.(), listing: '' };
      for (let step = 0; step < 60; step++) {
        const op = Math.floor(r() * 8);
        const c = pick(containers);
        const p = pick(pods);
        if (op === 0 || !p) {
          const made = await drive(clock, pod());
          if (made) pods.push(made);
        } else if (op === 1) {
          const argv = ['sleep', String(1 + Math.floor(r() * 4))];
          // A sandbox that is not ready refuses: nothing changes then either.
          const id = await drive(clock, create(p, `c${step}`, { argv }));
          if (id) containers.push(id);
        } else if (op === 2 && c) await drive(clock, sim.startContainer(c));
        else if (op === 3 && c) await drive(clock, sim.stopContainer(c, Math.floor(r() * 3)));
        else if (op === 4 && c) {
          await drive(clock, sim.removeContainer(c));
          containers.splice(containers.indexOf(c), 1);
        } else if (op === 5) await drive(clock, sim.stopPodSandbox(p.id));
        else if (op === 6) {
          await drive(clock, sim.removePodSandbox(p.id));
          pods.splice(pods.indexOf(p), 1);
        } else clock.advance(Math.floor(r() * 3000));
        const now = {
          revision: sim.capabilities.listingRevision?.(),
          listing: JSON.stringify([await freshSandboxes(sim), await freshContainers(sim)]),
        };
        if (now.revision === before.revision)
          expect(now.listing, `seed ${seed} step ${step} op ${op}: the revision stood`).to.equal(
            before.listing,
          );
        before = now;
      }
    }
  });
});

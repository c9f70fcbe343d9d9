// The simulated runtime's label listings are kept while nothing they report changes (sim/listingcache.ts): the
// same frozen array comes back until a sandbox or container is added, removed or changes state, whoever
// changed it (a call, a process exiting on the clock); and what comes back always agrees with a listing
// answered afresh. Listings by ID, state, sandbox or pod UID are never kept.
import { expect } from 'chai';
import { ManagedByLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import type { ContainerState, SandboxState } from '../../../src/runtime/types.js';
import { newSim } from './sim-fixtures.js';

/** A small deterministic generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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

describe('SimRuntime listing cache', () => {
  it('hands out the same frozen listing until something in it changes, a process exiting on the clock too', async () => {
    const { sim, pod, run, clock } = newSim();
    const p = await pod();
    await run(p, 'short', { argv: ['sleep', '2'] });
    const first = await sim.listContainers();
    expect(Object.isFrozen(first)).to.equal(true);
    expect(await sim.listContainers(), 'nothing changed').to.equal(first);
    expect(await sim.listContainers({ labelSelector: {} })).to.equal(first);
    clock.advance(1000);
    expect(await sim.listContainers(), 'still running').to.equal(first);
    clock.advance(1500);
    const after = await sim.listContainers();
    expect(after).to.not.equal(first);
    expect(after.map((c) => c.state)).to.deep.equal(['exited']);
    const sandboxes = await sim.listPodSandbox();
    await sim.stopPodSandbox(p.id);
    expect((await sim.listPodSandbox()).map((s) => s.state)).to.deep.equal(['notready']);
    expect(
      sandboxes.map((s) => s.state),
      'an answer already given never changes',
    ).to.deep.equal(['ready']);
  });

  it('keeps no listing by pod UID, ID, state or sandbox', async () => {
    const { sim, pod, run } = newSim();
    const p = await pod();
    const id = await run(p, 'app');
    const filters = [
      { labelSelector: { [PodUIDLabel]: p.config.metadata.uid } },
      { id },
      { state: 'running' as const },
      { podSandboxId: p.id },
    ];
    for (const f of filters) {
      const a = await sim.listContainers(f);
      expect(a).to.have.length(1);
      expect(await sim.listContainers(f), JSON.stringify(f)).to.not.equal(a);
    }
    // A selector on other labels is kept, apart from the unfiltered listing.
    const none = await sim.listContainers({ labelSelector: { [ManagedByLabel]: 'vn-1' } });
    expect(none).to.deep.equal([]);
    expect(await sim.listContainers({ labelSelector: { [ManagedByLabel]: 'vn-1' } })).to.equal(none);
  });

  it('agrees with a fresh listing after every step of random runtime work', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const r = rng(seed);
      const { sim, pod, create, clock } = newSim();
      const pods: Awaited<ReturnType<typeof pod>>[] = [];
      const containers: string[] = [];
      const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(r() * xs.length)];
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
        const where = `seed ${seed} step ${step} op ${op}`;
        const cs = (await sim.listContainers()).map((x) => `${x.id} ${x.state}`);
        expect(cs, where).to.deep.equal(await freshContainers(sim));
        const sbs = (await sim.listPodSandbox()).map((x) => `${x.id} ${x.state}`);
        expect(sbs, where).to.deep.equal(await freshSandboxes(sim));
      }
    }
  });
});

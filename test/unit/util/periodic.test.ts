import { expect } from 'chai';
import { FakeClock } from '../../../src/util/clock.js';
import { PeriodicLoops } from '../../../src/util/periodic.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('PeriodicLoops', () => {
  it('runs each loop a period after its previous run ended, and keeps going after a failing run', async () => {
    const clock = new FakeClock();
    const errors: string[] = [];
    const runs: number[] = [];
    const loops = new PeriodicLoops<'a'>({
      clock,
      track: () => undefined,
      onError: (name, err) => errors.push(`${name}: ${err}`),
    });
    loops.every('a', 1000, () => {
      runs.push(clock.now());
      if (runs.length === 1) throw new Error('boom');
    });
    clock.advance(999);
    await flush();
    expect(runs).to.have.length(0);
    clock.advance(1);
    await flush();
    clock.advance(1000);
    await flush();
    expect(runs).to.have.length(2);
    expect(runs[1]! - runs[0]!).to.equal(1000);
    expect(errors).to.deep.equal(['a: boom']);
  });

  it('never overlaps a slow run and stops re-arming once stopped', async () => {
    const clock = new FakeClock();
    let release!: () => void;
    let runs = 0;
    const loops = new PeriodicLoops<'slow'>({ clock, track: () => undefined, onError: () => undefined });
    loops.every('slow', 100, () => {
      runs++;
      return new Promise<void>((r) => (release = r));
    });
    clock.advance(100);
    await flush();
    clock.advance(1000);
    await flush();
    expect(runs).to.equal(1);
    loops.stop();
    release();
    await flush();
    clock.advance(1000);
    await flush();
    expect(runs).to.equal(1);
    expect(clock.pendingTimers()).to.equal(0);
  });
});

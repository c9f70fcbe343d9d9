import { expect } from 'chai';
import { Phases } from '../../../scripts/lib/phases.js';

describe('scripts/lib/phases: the startup breakdown of npm run up', () => {
  it('records overlapping phases from t0 with their start, end and duration, then the total', async () => {
    let now = 10_000;
    const phases = new Phases(() => now, 9_000);
    let release!: () => void;
    const slow = phases.time('control plane', () => new Promise<void>((r) => (release = r)));
    now = 10_500;
    await phases.time('containerd', async () => {
      now = 11_700;
    });
    now = 14_000;
    release();
    await slow;
    now = 15_250;
    expect(phases.elapsedMs()).to.equal(6_250);
    expect(phases.lines()).to.deep.equal([
      'control plane    1.0 s ->   5.0 s  (4.0 s)',
      'containerd       1.5 s ->   2.7 s  (1.2 s)',
      'total                       6.3 s',
    ]);
  });

  it('marks a phase that threw as failed and passes the error on', async () => {
    let now = 0;
    const phases = new Phases(() => now);
    const err = await phases
      .time('nodes Ready', async () => {
        now = 2_000;
        throw new Error('node sim-1 not Ready');
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).to.equal('node sim-1 not Ready');
    expect(phases.lines()[0]).to.equal('nodes Ready    0.0 s ->   2.0 s  (2.0 s) failed');
  });

  it('shows a phase still under way as running', () => {
    const phases = new Phases(() => 1_000, 0);
    void phases.time('workload Ready/Complete', () => new Promise(() => undefined));
    expect(phases.lines()[0]).to.equal('workload Ready/Complete    1.0 s -> running');
  });
});

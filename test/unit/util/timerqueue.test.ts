import { expect } from 'chai';
import { TimerQueue, timerQueueFor } from '../../../src/util/timerqueue.js';
import { FakeClock } from '../../../src/util/clock.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** A queue on a FakeClock and a callback that logs each entry's argument with the time it ran at. */
function timedLog() {
  const clock = new FakeClock(T0);
  const q = new TimerQueue(clock);
  const seen: [string, number][] = [];
  const log = (name: string) => seen.push([name, clock.now() - T0]);
  /** Schedules a logged entry per [delay, name], in this order. */
  const schedule = (...entries: [number, string][]) => {
    for (const [delay, name] of entries) q.setTimer(delay, log, name);
  };
  return { clock, q, seen, schedule };
}

describe('TimerQueue', () => {
  it('runs entries at their own due time, in due order, equal times in scheduling order', () => {
    const { clock, q, seen, schedule } = timedLog();
    schedule([300, 'c'], [100, 'a'], [300, 'd'], [100, 'b']);
    expect(clock.pendingTimers()).to.equal(1);
    clock.advance(1_000);
    expect(seen).to.deep.equal([
      ['a', 100],
      ['b', 100],
      ['c', 300],
      ['d', 300],
    ]);
    expect(q.size).to.equal(0);
    expect(clock.pendingTimers()).to.equal(0);
  });

  it('runs entries scheduled by a callback, a zero delay in the same advance', () => {
    const clock = new FakeClock(T0);
    const q = new TimerQueue(clock);
    const seen: number[] = [];
    const again = (left: number): void => {
      seen.push(clock.now() - T0);
      if (left > 0) q.setTimer(left === 2 ? 0 : 250, again, left - 1);
    };
    q.setTimer(100, again, 3);
    clock.advance(1_000);
    expect(seen).to.deep.equal([100, 350, 350, 600]);
  });

  it('cancel removes a pending entry only; the clock timer goes when the queue is empty', () => {
    const clock = new FakeClock(T0);
    const q = new TimerQueue(clock);
    const seen: string[] = [];
    const log = (name: string) => seen.push(name);
    const handles = ['a', 'b', 'c', 'd', 'e'].map((n, i) => q.setTimer(100 * (i + 1), log, n));
    handles[0]!.cancel();
    handles[3]!.cancel();
    handles[3]!.cancel();
    clock.advance(250);
    expect(seen).to.deep.equal(['b']);
    handles[1]!.cancel(); // already fired: nothing
    handles[2]!.cancel();
    handles[4]!.cancel();
    expect(q.size).to.equal(0);
    expect(clock.pendingTimers()).to.equal(0);
    clock.advance(1_000);
    expect(seen).to.deep.equal(['b']);
  });

  it('re-arms the clock timer for an entry earlier than the armed one', () => {
    const { clock, seen, schedule } = timedLog();
    schedule([1_000, 'late'], [10, 'early']);
    expect(clock.pendingTimers()).to.equal(1);
    clock.advance(2_000);
    expect(seen).to.deep.equal([
      ['early', 10],
      ['late', 1_000],
    ]);
  });

  it('keeps the heap ordered through many random inserts and cancels', () => {
    const clock = new FakeClock(T0);
    const q = new TimerQueue(clock);
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const fired: number[] = [];
    const expected: number[] = [];
    const handles = Array.from({ length: 500 }, (_, i) => q.setTimer(rnd(10_000), (x) => fired.push(x), i));
    const cancelled = new Set<number>();
    for (let k = 0; k < 200; k++) {
      const i = rnd(500);
      cancelled.add(i);
      handles[i]!.cancel();
    }
    for (let i = 0; i < handles.length; i++) if (!cancelled.has(i)) expected.push(i);
    expected.sort((a, b) => handles[a]!.at - handles[b]!.at || a - b);
    clock.advance(10_000);
    expect(fired).to.deep.equal(expected);
    expect(q.size).to.equal(0);
  });

  it('timerQueueFor gives one queue per clock', () => {
    const a = new FakeClock(T0);
    const b = new FakeClock(T0);
    expect(timerQueueFor(a)).to.equal(timerQueueFor(a));
    expect(timerQueueFor(a)).to.not.equal(timerQueueFor(b));
  });
});

import { expect } from 'chai';
import { DEFAULT_CASE_FILE, evaluateCase, loadCaseFile } from './harness.js';
import type { ConformanceCase } from './types.js';

// The computePodActions and backoff interpreters must fail loudly on what they cannot read, and must be
// able to fail on a wrong expectation.
const file = loadCaseFile(DEFAULT_CASE_FILE);
const byId = (id: string): ConformanceCase => structuredClone(file.cases.find((c) => c.id === id)!);

async function verdictOf(c: ConformanceCase): Promise<{ pass: boolean; reason: string }> {
  const { verdict } = await evaluateCase(c, file);
  return { pass: verdict.pass, reason: verdict.pass ? '' : verdict.reason };
}

describe('computePodActions interpreter', () => {
  it('fails a wrong expectation and names the field', async () => {
    const c = byId('cpa-010');
    (c.expect.actions as Record<string, unknown>).containersToStart = [2];
    const v = await verdictOf(c);
    expect(v.pass).to.equal(false);
    expect(v.reason).to.match(/actions\.containersToStart/);
  });

  it('compares containersToKill as a set and honours compareFields', async () => {
    const c = byId('cpa-020');
    (c.expect.actions as Record<string, unknown>).containersToKill = ['id3', 'id1', 'id2'];
    expect((await verdictOf(c)).pass).to.equal(true);
    (c.expect.actions as Record<string, unknown>).attempt = 7;
    expect((await verdictOf(c)).pass).to.equal(false);
    c.expect.compareFields = ['killPod', 'containersToKill'];
    expect((await verdictOf(c)).pass).to.equal(true);
  });

  it('reports unknown states, keys and fixtures as uninterpretable', async () => {
    const bad: ((c: ConformanceCase) => void)[] = [
      (c) => ((c.given.runtime as { containers: Record<string, unknown>[] }).containers[0]!.state = 'paused'),
      (c) => ((c.expect.actions as Record<string, unknown>).podRestart = true),
      (c) => ((c.given.pod as Record<string, unknown>).fixture = 'NOPE'),
      (c) => ((c.given as Record<string, unknown>).clock = 3),
      (c) => (c.expect.compareFields = ['killPod', 'nonsense']),
    ];
    for (const mutate of bad) {
      const c = byId('cpa-001');
      mutate(c);
      const v = await verdictOf(c);
      expect(v.pass).to.equal(false);
      expect(v.reason).to.match(/^cannot interpret/);
    }
  });
});

describe('backoff interpreter', () => {
  const plain = (steps: unknown, expectations: Record<string, unknown>): ConformanceCase => ({
    id: 'x',
    area: 'backoff',
    given: { initialSeconds: 1, maxSeconds: 50, steps },
    expect: expectations,
  });

  it('reads loops, relative times and durations in scripts', async () => {
    const c = plain('repeat 3x: clock += 1500ms; Next(id, now-1s)', {
      backoffAfterEachNextSeconds: [1, 2, 4],
    });
    expect((await verdictOf(c)).pass).to.equal(true);
    c.expect.backoffAfterEachNextSeconds = [1, 2, 3];
    expect((await verdictOf(c)).pass).to.equal(false);
  });

  it('checks the stated initial/max against newCrashLoopBackOff', async () => {
    const c = byId('backoff-002');
    c.given.maxSeconds = 300;
    expect((await verdictOf(c)).pass).to.equal(false);
  });

  it('reports unknown step forms and expectation keys as uninterpretable', async () => {
    const cases = [
      plain('loop 2x: clock += 1s; Jump(id)', { finalBackoffSeconds: 1 }),
      plain('Next x3 with expiry', { finalBackoffSeconds: 1 }),
      plain([{ op: 'containerPaused' }], { perStep: true }),
      plain('Next x2', { somethingElse: 1 }),
      plain([{ t: 5, op: 'syncPod', expect: { inBackOff: false, mood: 'calm' } }], { perStep: true }),
      plain([{ t: 5, op: 'EnsureImageExists', expect: { error: 'ErrImagePull' } }], { perStep: true }),
    ];
    for (const c of cases) {
      const v = await verdictOf(c);
      expect(v.pass, JSON.stringify(c.given.steps)).to.equal(false);
      expect(v.reason).to.match(/^cannot interpret/);
    }
  });

  it('fails a wrong waiting reason from the reason cache', async () => {
    const c = byId('backoff-014');
    (
      c.expect.containerStatus as Record<string, Record<string, Record<string, unknown>>>
    ).state!.waiting!.reason = 'ImagePullBackOff';
    expect((await verdictOf(c)).pass).to.equal(false);
  });
});

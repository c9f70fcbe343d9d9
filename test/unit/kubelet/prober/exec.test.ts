// The exec prober (src/kubelet/prober/exec.ts): the command runs through the runtime's ExecSync; through
// the runner, the kubelet's events and its retries of execution errors.
import { expect } from 'chai';
import type { Pod, Probe } from '../../../../src/api/core.js';
import { execProbe } from '../../../../src/kubelet/prober/exec.js';
import { MaxProbeOutputBytes } from '../../../../src/kubelet/prober/probe.js';
import { KindError } from '../../../../src/util/errors.js';
import { appWarning, FakeRuntime, pod, setup, status } from './runner-fixtures.js';

describe('prober exec', () => {
  it('succeeds on exit 0 and runs in the runtime container with the timeout', async () => {
    const { run, runtime, events, probes } = setup();
    const probe: Probe = { exec: { command: ['cat', '/ready'] }, timeoutSeconds: 3 };
    const c = { name: 'app' };
    expect(await run(probe, pod(c), status('app'), 'sim://abc', 'readiness')).to.equal('success');
    expect(runtime.calls).to.deep.equal([{ id: 'abc', cmd: ['cat', '/ready'], timeout: 3 }]);
    expect(events).to.deep.equal([]);
    expect(probes).to.deep.equal([['readiness', 'successful']]);
  });

  it('fails on a non-zero exit with the combined output as the Unhealthy message', async () => {
    const { run, runtime, events } = setup();
    runtime.next = async () => ({
      stdout: Buffer.from('out\n'),
      stderr: Buffer.from('err\n'),
      exitCode: 1,
    });
    const outcome = await run(
      { exec: { command: ['check'] } },
      pod({ name: 'app' }),
      status('app'),
      'sim://abc',
      'liveness',
    );
    expect(outcome).to.equal('failure');
    expect(events).to.deep.equal([appWarning('Unhealthy', 'Liveness probe failed: out\nerr\n')]);
    // The default timeout is 1 s.
    expect(runtime.calls[0]!.timeout).to.equal(1);
  });

  it('reports a timeout as a failure with the kubelet message', async () => {
    const { run, runtime, events } = setup();
    runtime.next = () => Promise.reject(new KindError('DeadlineExceeded', 'exec timed out'));
    const outcome = await run(
      { exec: { command: ['sleep', '10'] } },
      pod({ name: 'app' }),
      status('app'),
      'sim://abc',
      'startup',
    );
    expect(outcome).to.equal('failure');
    expect(events[0]!.message).to.equal('Startup probe failed: command "sleep 10" timed out');
  });

  it('retries an execution error three times, then records it and rejects', async () => {
    const { run, runtime, events, probes } = setup();
    runtime.next = () => Promise.reject(new KindError('NotFound', 'container abc not found'));
    let err: unknown;
    try {
      await run({ exec: { command: ['x'] } }, pod({ name: 'app' }), status('app'), 'sim://abc', 'readiness');
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(KindError);
    expect(runtime.calls.length).to.equal(3);
    expect(events).to.deep.equal([
      appWarning('Unhealthy', 'Readiness probe errored: container abc not found'),
    ]);
    expect(probes).to.deep.equal([['readiness', 'unknown']]);
  });

  it('names init (sidecar) containers by their init field path', async () => {
    const { run, runtime, events } = setup();
    runtime.next = async () => ({ stdout: Buffer.from('no'), stderr: Buffer.alloc(0), exitCode: 2 });
    const p: Pod = {
      metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
      spec: { containers: [{ name: 'app' }], initContainers: [{ name: 'proxy', restartPolicy: 'Always' }] },
    };
    await run({ exec: { command: ['x'] } }, p, status('proxy'), 'sim://abc', 'readiness');
    expect(events[0]!.fieldPath).to.equal('spec.initContainers{proxy}');
  });
  it('cuts the output to 10 KiB', async () => {
    const runtime = new FakeRuntime();
    runtime.next = async () => ({
      stdout: Buffer.from('x'.repeat(MaxProbeOutputBytes)),
      stderr: Buffer.from('tail'),
      exitCode: 1,
    });
    const r = await execProbe(runtime, 'abc', ['check'], 1);
    expect(r).to.deep.equal({ result: 'failure', output: 'x'.repeat(MaxProbeOutputBytes) });
  });

  it('rejects when the command cannot be run at all', async () => {
    const runtime = new FakeRuntime();
    runtime.next = () => Promise.reject(new KindError('Unavailable', 'runtime down'));
    let err: unknown;
    await execProbe(runtime, 'abc', ['check'], 1).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(KindError);
  });
});

// The probe runner (src/kubelet/prober/shell/runner.ts): which protocol runs, the runtime's own answers to network
// probes (RuntimeCapabilities.probePort), execution errors, and the kubelet's event wording.
import { expect } from 'chai';
import type { Pod } from '../../../../../src/api/core.js';
import { createProbeRunner, probeTypeTitle } from '../../../../../src/kubelet/prober/shell/runner.js';
import { SimRuntime } from '../../../../../src/runtime/sim/runtime.js';
import { FakeClock } from '../../../../../src/util/clock.js';
import { KindError } from '../../../../../src/util/errors.js';
import { pod, setup, status } from '../runner-fixtures.js';

describe('prober runner', () => {
  it('asks the runtime when its capabilities answer network probes, with the kubelet wording around it', async () => {
    const asked: [string, number, string][] = [];
    const { run, events } = setup((id, port, kind) => {
      asked.push([id, port, kind]);
      return port === 8080
        ? { result: 'success', output: '' }
        : { result: 'failure', output: `dial tcp 10.88.0.5:${port}: connect: connection refused` };
    });
    const p = pod({ name: 'web', ports: [{ name: 'http', containerPort: 8080 }] }, '10.88.0.5');
    expect(
      await run({ httpGet: { port: 'http', path: '/' } }, p, status('web'), 'sim://abc', 'readiness'),
    ).to.equal('success');
    expect(
      await run({ httpGet: { port: 9090, path: '/h' } }, p, status('web'), 'sim://abc', 'readiness'),
    ).to.equal('failure');
    expect(await run({ tcpSocket: { port: 9091 } }, p, status('web'), 'sim://abc', 'liveness')).to.equal(
      'failure',
    );
    expect(asked).to.deep.equal([
      ['abc', 8080, 'http'],
      ['abc', 9090, 'http'],
      ['abc', 9091, 'tcp'],
    ]);
    expect(events.map((e) => e.message)).to.deep.equal([
      'Readiness probe failed: Get "http://10.88.0.5:9090/h": dial tcp 10.88.0.5:9090: connect: connection refused',
      'Liveness probe failed: dial tcp 10.88.0.5:9091: connect: connection refused',
    ]);
  });
  it('takes the port prober from a SimRuntime and names ephemeral containers by their field path', async () => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    const sim = new SimRuntime({ clock, images: ['busybox:1.36'] });
    const events: string[] = [];
    const paths: (string | undefined)[] = [];
    const run = createProbeRunner({
      runtime: sim,
      record: (_p, _t, _r, message, fieldPath) => {
        events.push(message);
        paths.push(fieldPath);
      },
    });
    const p: Pod = {
      metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
      spec: {
        containers: [{ name: 'app' }],
        ephemeralContainers: [{ name: 'debug', image: 'busybox:1.36' }],
      },
      status: { podIP: '10.88.0.9' },
    };
    // An unknown container: the simulated runtime says NotFound, which is an execution error.
    let err: unknown;
    await run({ tcpSocket: { port: 80 } }, p, status('debug'), 'sim://nope', 'readiness').catch(
      (e: unknown) => (err = e),
    );
    expect(err).to.be.instanceOf(KindError);
    expect(events).to.have.length(1);
    expect(events[0]).to.match(/^Readiness probe errored: /);
    expect(paths).to.deep.equal(['spec.ephemeralContainers{debug}']);
    await sim.close();
  });

  it('errors when the probe names no handler or the container is not in the spec', async () => {
    const { run, events } = setup();
    const noHandler = await run({}, pod({ name: 'app' }), status('app'), 'sim://abc', 'liveness').catch(
      (e: unknown) => e,
    );
    expect(noHandler).to.be.instanceOf(KindError);
    const missing = await run(
      { exec: { command: ['true'] } },
      pod({ name: 'app' }),
      status('gone'),
      'sim://abc',
      'liveness',
    ).catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(KindError);
    expect(events.map((e) => e.message)).to.deep.equal([
      'Liveness probe errored: missing probe handler for container app',
      'Liveness probe errored: container gone is not in the pod spec',
    ]);
  });

  it('does not reach for the network without a pod IP', async () => {
    const { run, events } = setup();
    const p = pod({ name: 'app' }, '');
    await run({ tcpSocket: { port: 80 } }, p, status('app'), 'sim://abc', 'readiness').catch(() => undefined);
    expect(events.map((e) => e.message)).to.deep.equal([
      'Readiness probe errored: the pod has no IP to probe yet',
    ]);
  });

  it('titles probe types as the kubelet does', () => {
    expect(probeTypeTitle('startup')).to.equal('Startup');
  });
});

import { expect } from 'chai';
import { RUNTIME_DOWN, RUNTIME_NOT_CHECKED, RuntimeState } from '../../../src/node/runtimestate.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeRuntime } from './fakeapi.js';

function setup(health: string[] = []) {
  const clock = new FakeClock(0);
  const runtime = new FakeRuntime();
  const state = new RuntimeState({ nodeName: 'n', runtime, clock, healthChecks: () => health });
  return { clock, runtime, state };
}

describe('RuntimeState', () => {
  it('blocks pod work until the first status check answered', async () => {
    const { state } = setup();
    expect(state.runtimeErrors()).to.deep.equal([RUNTIME_NOT_CHECKED]);
    await state.update();
    expect(state.runtimeErrors()).to.deep.equal([]);
    expect(state.version?.runtimeVersion).to.equal('1.2.3');
  });

  it('words runtime, health and network errors as the kubelet does; the network gates only node readiness', async () => {
    const health = ['PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s'];
    const { runtime, state } = setup(health);
    runtime.runtimeReady = false;
    runtime.networkReady = false;
    await state.update();
    const notReady = 'container runtime not ready: RuntimeReady=false reason:Broken message:';
    expect(state.runtimeErrors()).to.deep.equal([notReady, health[0]]);
    expect(state.readinessErrors(false)).to.deep.equal([
      notReady,
      health[0],
      'container runtime network not ready: NetworkReady=false reason:NoCNI message:',
    ]);
    expect(state.readinessErrors(true)).to.deep.equal([notReady, health[0]]);
    expect(state.runtimeReady()).to.deep.equal({ ready: false, message: notReady });
  });

  it('answers a healthy node with one shared empty list (the sync loop asks before every input)', async () => {
    const { state } = setup();
    await state.update();
    const first = state.runtimeErrors();
    expect(first).to.deep.equal([]);
    expect(state.runtimeErrors()).to.equal(first);
    expect(Object.isFrozen(first)).to.equal(true);
    // Health errors alone, and runtime errors alone, come back as they are; both together, in order.
    const sick = setup(['PLEG is not healthy: x']);
    await sick.state.update();
    expect(sick.state.runtimeErrors()).to.deep.equal(['PLEG is not healthy: x']);
    sick.runtime.down = true;
    await sick.state.update();
    expect(sick.state.runtimeErrors()).to.deep.equal([RUNTIME_DOWN, 'PLEG is not healthy: x']);
  });

  it('reports a runtime that stopped answering as down, and keeps the last version it knew', async () => {
    const { runtime, state } = setup();
    await state.update();
    runtime.down = true;
    runtime.version = () => Promise.reject(new Error('connection refused'));
    await state.update();
    expect(state.runtimeErrors()).to.deep.equal([RUNTIME_DOWN]);
    expect(state.version?.runtimeVersion).to.equal('1.2.3');
    expect(state.runtimeReady()).to.deep.include({ ready: false });
    runtime.down = false;
    await state.update();
    expect(state.runtimeErrors()).to.deep.equal([]);
  });

  it('shares one check among concurrent callers', async () => {
    const { runtime, state } = setup();
    await Promise.all([state.update(), state.update(), state.update()]);
    expect(runtime.statusCalls).to.equal(1);
  });

  it('gives up on a runtime that does not answer within the timeout', async () => {
    const { clock, runtime, state } = setup();
    runtime.status = () => new Promise(() => undefined);
    const done = state.update();
    clock.advance(5_000);
    await done;
    expect(state.runtimeErrors()).to.deep.equal([RUNTIME_DOWN]);
    expect(state.lastCheck).to.deep.include({ state: 'failed' });
  });
});

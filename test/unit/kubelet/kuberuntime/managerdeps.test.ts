// What the runtime manager is built from (src/kubelet/kuberuntime/managerdeps.ts): the runtime's
// capabilities decide what the kubelet does on the host, and the container ID scheme, unless deps override.
import { expect } from 'chai';
import { KubeGenericRuntimeManager } from '../../../../src/kubelet/kuberuntime/shell/manager.js';
import { managerContext, validateDeps } from '../../../../src/kubelet/kuberuntime/managerdeps.js';
import type { Runtime, RuntimeCapabilities, RuntimeVersion } from '../../../../src/runtime/types.js';
import { KindError } from '../../../../src/util/errors.js';
import { Harness } from './manager-fixtures.js';

/** The harness's SimRuntime with other capabilities, and a version() that counts its calls. */
function runtimeWith(h: Harness, capabilities: RuntimeCapabilities, version?: () => Promise<RuntimeVersion>) {
  let versionCalls = 0;
  const runtime = Object.create(h.runtime) as Runtime;
  Object.defineProperty(runtime, 'capabilities', { value: capabilities });
  runtime.version = () => {
    versionCalls++;
    return version ? version() : Promise.reject(new KindError('Unavailable', 'down'));
  };
  return { runtime, calls: () => versionCalls };
}

const cri: RuntimeCapabilities = { hostLogDirectories: true, hostPodCgroups: true };

describe('kuberuntime managerdeps', () => {
  it('refuses a runtime that declares no capabilities', () => {
    const h = new Harness();
    const runtime = Object.create(h.runtime) as Runtime;
    Object.defineProperty(runtime, 'capabilities', { value: undefined });
    let err: unknown;
    try {
      validateDeps({ ...h.deps, runtime });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(KindError);
    expect((err as KindError).context.field).to.equal('runtime');
  });

  it('lays out log directories and removes pod cgroups as the capabilities say, unless deps override', () => {
    const h = new Harness();
    const type = () => Promise.resolve('x');
    const sim = managerContext(h.deps, type);
    expect([sim.manageLogDirectories, sim.removePodCgroups]).to.deep.equal([false, false]);
    const { runtime } = runtimeWith(h, cri);
    const onHost = managerContext({ ...h.deps, runtime }, type);
    expect([onHost.manageLogDirectories, onHost.removePodCgroups]).to.deep.equal([true, true]);
    const overridden = managerContext({ ...h.deps, runtime, manageLogDirectories: false }, type);
    expect([overridden.manageLogDirectories, overridden.removePodCgroups]).to.deep.equal([false, true]);
    expect(overridden.hookHttpTimeoutMs).to.equal(10_000);
  });

  it('names container IDs by the capability, else by the runtime name version() reports (cached)', async () => {
    const h = new Harness();
    const fixed = runtimeWith(h, { ...cri, runtimeType: 'sim' });
    expect(await new KubeGenericRuntimeManager({ ...h.deps, runtime: fixed.runtime }).runtimeType()).to.equal(
      'sim',
    );
    expect(fixed.calls()).to.equal(0);

    const reported = runtimeWith(h, cri, async () => ({
      version: '0.1.0',
      runtimeName: 'cri-o',
      runtimeVersion: '1.30',
      runtimeApiVersion: 'v1',
    }));
    const m = new KubeGenericRuntimeManager({ ...h.deps, runtime: reported.runtime });
    expect(await m.runtimeType()).to.equal('cri-o');
    expect(await m.runtimeType()).to.equal('cri-o');
    expect(reported.calls()).to.equal(1);

    const down = runtimeWith(h, cri);
    const d = new KubeGenericRuntimeManager({ ...h.deps, runtime: down.runtime });
    expect(await d.runtimeType()).to.equal('containerd');
    expect(await d.runtimeType()).to.equal('containerd');
    expect(down.calls(), 'asked again while unknown').to.equal(2);
  });
});

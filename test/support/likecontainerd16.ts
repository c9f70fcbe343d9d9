/**
 * The simulated runtime as containerd 1.6's CRI shows itself to a kubelet, for tests of what a node refuses
 * there: its Status reports no runtime handlers and no features (its CRI is older than both fields), it mounts
 * no images (it ignores CRI Mount.image), and its container statuses carry no user. Everything else is the
 * simulated runtime's own.
 */
import type { SimRuntime } from '../../src/runtime/sim/index.js';
import type { Runtime } from '../../src/runtime/types.js';

export function likeContainerd16(sim: SimRuntime): Runtime {
  const capabilities = { ...sim.capabilities, imageVolumes: false };
  const own: Partial<Runtime> = {
    capabilities,
    status: async () => ({ conditions: (await sim.status()).conditions, handlers: [] }),
    containerStatus: async (id: string) => {
      const { user: _, ...rest } = await sim.containerStatus(id);
      return rest;
    },
  };
  return new Proxy(sim, {
    get(target, prop) {
      if (Object.hasOwn(own, prop)) return own[prop as keyof Runtime];
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as unknown as Runtime;
}

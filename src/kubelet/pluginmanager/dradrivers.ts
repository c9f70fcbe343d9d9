/**
 * The DRA plugin manager's registry of kubelet plugins (kubelet: pkg/kubelet/cm/dra/plugin
 * dra_plugin_manager.go): which DRA drivers registered through `plugins_registry/`, at which endpoints, with
 * which gRPC service; what the DRA manager will call NodePrepareResources on. Pure: the handler (drahandler.ts)
 * holds one and turns its answers into log lines and ResourceSlice wipes.
 */

/** The DRA gRPC services the kubelet speaks, most preferred first (DRAPluginService of dra v1, v1beta1). */
export const DRAServicesSupportedByKubelet = ['v1.DRAPlugin', 'v1beta1.DRAPlugin'] as const;
/** The resource health services the kubelet can watch (DRAResourceHealthService of v1, v1alpha1). */
export const DRAHealthServicesSupportedByKubelet = [
  'v1.DRAResourceHealth',
  'v1alpha1.DRAResourceHealth',
] as const;

/** How long a deregistered driver's ResourceSlices stay, in case it comes back (defaultWipingDelay). */
export const DRAWipingDelayMs = 30_000;

export interface DRAPlugin {
  driverName: string;
  endpoint: string;
  /** The DRA service chosen from the plugin's supported versions. */
  chosenService: string;
  /** The health service chosen, '' when the plugin serves none the kubelet knows. */
  chosenHealthService: string;
  /** When it registered (ms), the later of two plugins of one driver being preferred. */
  registeredAt: number;
}

/**
 * validateSupportedServices: the first service the plugin names that the kubelet speaks, in the plugin's
 * order, or the kubelet's error.
 */
export function chooseDRAService(
  supported: readonly string[],
): { ok: true; service: string } | { ok: false; error: string } {
  if (supported.length === 0) {
    return { ok: false, error: 'empty list of supported gRPC services (aka supported versions)' };
  }
  const chosen = supported.find((s) => (DRAServicesSupportedByKubelet as readonly string[]).includes(s));
  if (chosen === undefined) {
    return {
      ok: false,
      error: `none of services supported by the plugin (${goQuotedList(supported)}) are supported by the kubelet (${goQuotedList(DRAServicesSupportedByKubelet)})`,
    };
  }
  return { ok: true, service: chosen };
}

/** The health service a plugin offers, in the kubelet's order of preference (pickHealthService). */
export function chooseDRAHealthService(supported: readonly string[]): string {
  return DRAHealthServicesSupportedByKubelet.find((s) => supported.includes(s)) ?? '';
}

/** Go's %q of a []string: `["a" "b"]`. */
function goQuotedList(xs: readonly string[]): string {
  return `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`;
}

/** The validation error as the plugin manager reports it (ValidatePlugin, RegisterPlugin). */
export function invalidDRAServicesMessage(driverName: string, endpoint: string, error: string): string {
  return `invalid supported gRPC versions of DRA driver plugin ${driverName} at endpoint ${endpoint}: ${error}`;
}

/** The registered DRA plugins of one node, by driver name. */
export class DRAPluginStore {
  private readonly store = new Map<string, DRAPlugin[]>();

  /** add: a second plugin of a driver is kept beside the first; the same endpoint twice is refused. */
  add(p: DRAPlugin): { ok: true } | { ok: false; error: string } {
    const list = this.store.get(p.driverName) ?? [];
    if (list.some((q) => q.endpoint === p.endpoint)) {
      return {
        ok: false,
        error: `endpoint ${p.endpoint} already registered for DRA driver plugin ${p.driverName}`,
      };
    }
    this.store.set(p.driverName, [...list, p]);
    return { ok: true };
  }

  /** remove: the plugin of that endpoint; returns how many plugins of the driver remain. */
  remove(driverName: string, endpoint: string): number {
    const list = (this.store.get(driverName) ?? []).filter((q) => q.endpoint !== endpoint);
    if (list.length === 0) this.store.delete(driverName);
    else this.store.set(driverName, list);
    return list.length;
  }

  /** The plugin to call for a driver: the most recently registered one. */
  get(driverName: string): DRAPlugin | undefined {
    const list = this.store.get(driverName) ?? [];
    let best: DRAPlugin | undefined;
    for (const p of list) if (!best || p.registeredAt >= best.registeredAt) best = p;
    return best;
  }

  drivers(): string[] {
    return [...this.store.keys()].sort();
  }
}

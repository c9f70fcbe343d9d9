/**
 * The plugin manager's decisions (kubelet: pkg/kubelet/pluginmanager): which registration sockets the
 * watcher wants registered (the desired state of world), which plugins are registered (the actual state of
 * world), and what one reconcile round does between them. Pure: the shell (manager.ts) scans the directory,
 * dials the sockets and calls the handlers.
 *
 * A socket is identified by its path and a stamp that changes when the file is re-created (the kubelet's
 * UUID, renewed by every create event; here the socket's inode and change time): a plugin whose socket was
 * replaced is unregistered, then registered again.
 */

/** A socket the watcher found under `plugins_registry/` (desired state of world). */
export interface PluginToRegister {
  socketPath: string;
  /** Changes whenever the socket is created anew. */
  stamp: string;
}

/** A registered plugin (actual state of world). */
export interface RegisteredPlugin {
  socketPath: string;
  stamp: string;
  /** The GetInfo answer's type (`CSIPlugin`, `DRAPlugin`, ...): which handler holds it. */
  type: string;
  name: string;
  endpoint: string;
}

/** A directory entry under the registration directory, as the watcher sees it. */
export interface RegistryEntry {
  /** Path relative to nothing: the absolute path of the entry. */
  path: string;
  /** The entry's base name. */
  name: string;
  kind: 'dir' | 'socket' | 'other';
  stamp: string;
}

/**
 * The watcher's filter (handleCreateEvent): names starting with `.` are ignored, so are entries that are not
 * sockets; directories are walked (the caller recurses). Returns the sockets to register.
 */
export function pluginsToRegister(entries: readonly RegistryEntry[]): PluginToRegister[] {
  const out: PluginToRegister[] = [];
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    if (e.kind !== 'socket') continue;
    out.push({ socketPath: e.path, stamp: e.stamp });
  }
  return out.sort((a, b) => (a.socketPath < b.socketPath ? -1 : a.socketPath > b.socketPath ? 1 : 0));
}

export interface ReconcileDecision {
  /** Registered plugins whose socket is gone or was re-created: deregistered first. */
  unregister: RegisteredPlugin[];
  /** Sockets not registered with their current stamp, and not being registered now. */
  register: PluginToRegister[];
}

/**
 * One reconcile round (reconciler.reconcile): deregistrations before registrations; a socket whose
 * registration is already running (`inFlight`, the kubelet's goroutinemap) or waiting out its back-off is
 * left for a later round.
 */
export function reconcilePlugins(
  desired: readonly PluginToRegister[],
  actual: readonly RegisteredPlugin[],
  busy: ReadonlySet<string> = new Set(),
): ReconcileDecision {
  const want = new Map(desired.map((d) => [d.socketPath, d.stamp]));
  const unregister: RegisteredPlugin[] = [];
  for (const r of actual) {
    if (busy.has(r.socketPath)) continue;
    const stamp = want.get(r.socketPath);
    if (stamp === undefined || stamp !== r.stamp) unregister.push(r);
  }
  const have = new Map(actual.map((a) => [a.socketPath, a.stamp]));
  const register: PluginToRegister[] = [];
  for (const d of desired) {
    if (busy.has(d.socketPath)) continue;
    if (have.get(d.socketPath) === d.stamp) continue;
    register.push(d);
  }
  return { unregister, register };
}

/** The GetInfo answer of a registration socket (pluginregistration.v1 PluginInfo). */
export interface PluginInfo {
  type: string;
  name: string;
  endpoint: string;
  supportedVersions: string[];
}

/**
 * The first step of RegisterPlugin once GetInfo answered: the handler for its type, or the error the plugin
 * is told of (and that the kubelet logs); an empty endpoint means the registration socket itself.
 */
export function routePlugin(
  info: PluginInfo,
  socketPath: string,
  handlerTypes: ReadonlySet<string>,
): { ok: true; info: PluginInfo } | { ok: false; error: string } {
  if (!handlerTypes.has(info.type)) {
    return {
      ok: false,
      error: `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socketPath}`,
    };
  }
  return { ok: true, info: { ...info, endpoint: info.endpoint === '' ? socketPath : info.endpoint } };
}

/** The error a plugin is told of when its handler refused it in ValidatePlugin. */
export function validationFailedMessage(err: string): string {
  return `RegisterPlugin error -- plugin validation failed with err: ${err}`;
}

/** The error a plugin is told of when its handler's RegisterPlugin failed. */
export function registrationFailedMessage(err: string): string {
  return `RegisterPlugin error -- plugin registration failed with err: ${err}`;
}

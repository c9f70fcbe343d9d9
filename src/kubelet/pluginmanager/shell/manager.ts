/**
 * The plugin manager of one VirtualNode (kubelet: pkg/kubelet/pluginmanager): the plugin watcher on the node's
 * `plugins_registry/` and the reconciler that registers what it finds. The shell around the pure decisions of
 * reconciler.ts: it reconciles every second as the kubelet's reconciler does, reading the directory again
 * when fs events say it changed (and every 10 s in case one was lost), dials each registration socket (pluginregistration.v1 GetInfo, NotifyRegistrationStatus) and hands the
 * plugin to the handler of its type (CSIPlugin: csihandler.ts, DRAPlugin: drahandler.ts). A socket that goes
 * away, or is created anew, deregisters its plugin. A failed registration is tried again after an exponential
 * back-off (500 ms doubling to about 2 min, the kubelet's).
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir, readlink, rename, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { errorMessage } from '../../../util/errors.js';
import { sha256Hex } from '../../../util/sha256.js';
import { grpcJs, loadProtoPackage } from '../../../util/grpcmodules.js';
import type { Logger } from '../../../util/logger.js';
import {
  pluginsToRegister,
  reconcilePlugins,
  registrationFailedMessage,
  routePlugin,
  validationFailedMessage,
  type PluginInfo,
  type PluginToRegister,
  type RegisteredPlugin,
  type RegistryEntry,
} from '../reconciler.js';

/** What a plugin type's handler does (kubelet: cache.PluginHandler). Errors are thrown as Error(message). */
export interface PluginHandler {
  validatePlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void>;
  registerPlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void>;
  deregisterPlugin(name: string, endpoint: string): Promise<void>;
}

export interface PluginManagerDeps {
  /** The node's `plugins_registry/` (src/kubelet/rootdir.ts). */
  registryDir: string;
  /** Handlers by plugin type (`CSIPlugin`, `DRAPlugin`). */
  handlers: ReadonlyMap<string, PluginHandler>;
  logger: Logger;
  /**
   * Where a plugin's endpoint is on this host: a node plugin in a pod names the path it has under
   * `/var/lib/kubelet` (node-driver-registrar's --kubelet-registration-path), which is the node's root here
   * (src/kubelet/rootdir.ts resolveKubeletHostPath). Default: as named.
   */
  resolveEndpoint?: (endpoint: string) => string;
  /** Reconcile period; default 1 s (the kubelet's loopSleepDuration). */
  periodMs?: number;
}

const GET_INFO_TIMEOUT_MS = 1_000;
const NOTIFY_TIMEOUT_MS = 10_000;
const DIAL_TIMEOUT_MS = 10_000;
const BACKOFF_INITIAL_MS = 500;
const BACKOFF_MAX_MS = 2 * 60_000 + 2_000;
const RESCAN_MS = 10_000;

function protoPath(rel: string): string {
  return fileURLToPath(new URL(rel, import.meta.url));
}

function registrationClientCtor(): grpc.ServiceClientConstructor {
  const pkg = loadProtoPackage(protoPath('../proto/pluginregistration_v1.proto')) as unknown as {
    pluginregistration: { Registration: grpc.ServiceClientConstructor };
  };
  return pkg.pluginregistration.Registration;
}

type Unary = (
  req: unknown,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

/** One unary call on `client` with a deadline `timeoutMs` from now. */
export function unary<T>(client: grpc.Client, method: string, req: unknown, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Unary>)[method]!.bind(client);
    fn(req, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res as T)));
  });
}

/** The longest socket path connect(2) takes: sun_path is 108 bytes with its NUL. */
export const MaxUnixSocketPath = 107;

/**
 * Where to connect for `socketPath`: itself when it fits sun_path, else a symlink to it under a short directory
 * (named by the path's hash, so one per socket). A node's root here is longer than `/var/lib/kubelet`, so a
 * plugin's socket path that fits in its pod (a rolling update's `<driver>-<uid>-reg.sock`) may not fit on the
 * host; connect(2) follows the link.
 */
export async function dialablePath(
  socketPath: string,
  linkDir = path.join(tmpdir(), 'ko-sockets'),
): Promise<string> {
  if (Buffer.byteLength(socketPath) <= MaxUnixSocketPath) return socketPath;
  const link = path.join(linkDir, `${sha256Hex(socketPath).slice(0, 24)}.sock`);
  if (Buffer.byteLength(link) > MaxUnixSocketPath)
    throw new Error(`socket path ${socketPath} is too long, and so is ${link}`);
  if ((await readlink(link).catch(() => undefined)) === socketPath) return link;
  await mkdir(linkDir, { recursive: true, mode: 0o700 });
  // A new link under a unique name, renamed over the old: concurrent dials never see a missing link.
  const tmp = `${link}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await symlink(socketPath, tmp);
  await rename(tmp, link);
  return link;
}

/** A gRPC client of a unix socket, ready (or rejected) within `timeoutMs` (the kubelet's blocking dial). */
export async function dialUnix(
  ctor: grpc.ServiceClientConstructor,
  socketPath: string,
  timeoutMs = DIAL_TIMEOUT_MS,
): Promise<grpc.Client> {
  const g = grpcJs();
  const client = new ctor(`unix://${await dialablePath(socketPath)}`, g.credentials.createInsecure());
  await new Promise<void>((resolve, reject) =>
    client.waitForReady(Date.now() + timeoutMs, (err) =>
      err ? reject(new Error(`failed to dial socket ${socketPath}, err: ${err.message}`)) : resolve(),
    ),
  ).catch((e: unknown) => {
    client.close();
    throw e;
  });
  return client;
}

interface Backoff {
  stamp: string;
  delayMs: number;
  notBefore: number;
}

export class PluginManager {
  private readonly actual = new Map<string, RegisteredPlugin>();
  private readonly busy = new Set<string>();
  private readonly backoff = new Map<string, Backoff>();
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private pending: Promise<void> = Promise.resolve();
  private desired: PluginToRegister[] = [];
  private dirty = true;
  private lastScan = 0;
  private readonly log: Logger;

  constructor(private readonly d: PluginManagerDeps) {
    this.log = d.logger.child({ component: 'plugin_manager' });
  }

  /** Ensures the directory and starts watching it. Never throws: a directory it cannot make is logged. */
  async start(): Promise<void> {
    this.running = true;
    this.log.info('Plugin Watcher Start', { path: this.d.registryDir });
    try {
      await mkdir(this.d.registryDir, { recursive: true, mode: 0o755 });
    } catch (err) {
      this.log.warn('Failed to create plugin registration directory', {
        path: this.d.registryDir,
        err: errorMessage(err),
      });
    }
    this.schedule(0);
  }

  /** Stops watching; registered plugins stay as they are (the kubelet deregisters nothing on exit). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.pending.catch(() => undefined);
  }

  /** The registered plugins (actual state of world). */
  registered(): RegisteredPlugin[] {
    return [...this.actual.values()];
  }

  /** The sockets found in the registry directory at the last scan (desired state of world). */
  toRegister(): PluginToRegister[] {
    return [...this.desired];
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pending = this.round()
        .catch((err: unknown) => this.log.warn('plugin manager round failed', { err: errorMessage(err) }))
        .finally(() => this.schedule(this.nextRoundMs()));
    }, ms);
  }

  /**
   * Every second while something is registering, waits out a back-off or is being deregistered; otherwise
   * at the next rescan (fs events bring the round forward), so an idle node costs one directory read per 10 s.
   */
  private nextRoundMs(): number {
    const period = this.d.periodMs ?? 1_000;
    if (this.busy.size > 0 || this.backoff.size > 0 || this.watchers.size === 0) return period;
    return Math.max(period, RESCAN_MS);
  }

  /** The watcher's walk: every entry under the registry, directories watched for fs events. */
  private async scan(): Promise<RegistryEntry[]> {
    const out: RegistryEntry[] = [];
    const seenDirs = new Set<string>();
    const walk = async (dir: string): Promise<void> => {
      seenDirs.add(dir);
      this.watchDir(dir);
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (err) {
        if (dir === this.d.registryDir)
          this.log.warn('Failed to traverse plugin socket path', { path: dir, err: errorMessage(err) });
        return;
      }
      for (const name of names) {
        const p = path.join(dir, name);
        const st = await lstat(p).catch(() => undefined);
        if (!st) continue;
        const kind = st.isDirectory() ? 'dir' : st.isSocket() ? 'socket' : 'other';
        out.push({ path: p, name, kind, stamp: `${st.ino}:${st.ctimeMs}` });
        if (kind === 'dir' && !name.startsWith('.')) await walk(p);
      }
    };
    await walk(this.d.registryDir);
    for (const [dir, w] of this.watchers) {
      if (!seenDirs.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    return out;
  }

  private watchDir(dir: string): void {
    if (this.watchers.has(dir)) return;
    try {
      const w = watch(dir, () => {
        this.dirty = true;
        this.schedule(50);
      });
      w.on('error', () => {
        w.close();
        this.watchers.delete(dir);
      });
      this.watchers.set(dir, w);
    } catch {
      // The periodic scan still finds what fs events would have announced.
    }
  }

  private async round(): Promise<void> {
    const now = Date.now();
    // The directory is read again on an fs event, while a registration waits out its back-off, and every
    // 10 s whatever happens (fs events can be lost); otherwise the last reading stands.
    if (this.dirty || this.backoff.size > 0 || now - this.lastScan >= RESCAN_MS) {
      this.dirty = false;
      this.lastScan = now;
      this.desired = pluginsToRegister(await this.scan());
    }
    const desired = this.desired;
    const held = new Set(this.busy);
    for (const d of desired) {
      const b = this.backoff.get(d.socketPath);
      if (b && b.stamp === d.stamp && now < b.notBefore) held.add(d.socketPath);
    }
    for (const p of this.backoff.keys()) if (!desired.some((d) => d.socketPath === p)) this.backoff.delete(p);
    const decision = reconcilePlugins(desired, [...this.actual.values()], held);
    for (const r of decision.unregister) {
      this.busy.add(r.socketPath);
      void this.unregister(r).finally(() => this.busy.delete(r.socketPath));
    }
    for (const d of decision.register) {
      if (this.busy.has(d.socketPath)) continue;
      this.busy.add(d.socketPath);
      void this.register(d.socketPath, d.stamp)
        .then(() => this.backoff.delete(d.socketPath))
        .catch((err: unknown) => {
          const prev = this.backoff.get(d.socketPath);
          const delayMs =
            prev && prev.stamp === d.stamp ? Math.min(prev.delayMs * 2, BACKOFF_MAX_MS) : BACKOFF_INITIAL_MS;
          this.backoff.set(d.socketPath, { stamp: d.stamp, delayMs, notBefore: Date.now() + delayMs });
          this.log.warn('OperationExecutor.RegisterPlugin failed', {
            plugin: d.socketPath,
            err: errorMessage(err),
          });
        })
        .finally(() => this.busy.delete(d.socketPath));
    }
  }

  private async unregister(r: RegisteredPlugin): Promise<void> {
    this.actual.delete(r.socketPath);
    const handler = this.d.handlers.get(r.type);
    if (!handler) return;
    try {
      await handler.deregisterPlugin(r.name, r.endpoint);
    } catch (err) {
      this.log.warn('DeRegisterPlugin failed', { pluginName: r.name, err: errorMessage(err) });
    }
    this.log.info('DeRegisterPlugin called', { pluginName: r.name, pluginType: r.type, path: r.socketPath });
  }

  /** GenerateRegisterPluginFunc: GetInfo, route, validate, register, notify. */
  private async register(socketPath: string, stamp: string): Promise<void> {
    let client: grpc.Client;
    try {
      client = await dialUnix(registrationClientCtor(), socketPath);
    } catch (err) {
      throw new Error(
        `RegisterPlugin error -- dial failed at socket ${socketPath}, err: ${errorMessage(err)}`,
      );
    }
    try {
      let raw: { type: string; name: string; endpoint: string; supported_versions: string[] };
      try {
        raw = await unary(client, 'GetInfo', {}, GET_INFO_TIMEOUT_MS);
      } catch (err) {
        throw new Error(
          `RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socketPath}, err: ${errorMessage(err)}`,
        );
      }
      const info: PluginInfo = {
        type: raw.type,
        name: raw.name,
        endpoint: raw.endpoint,
        supportedVersions: [...(raw.supported_versions ?? [])],
      };
      const routed = routePlugin(info, socketPath, new Set(this.d.handlers.keys()));
      if (!routed.ok) {
        await this.notify(client, socketPath, false, routed.error);
        throw new Error(routed.error);
      }
      const { name, supportedVersions, type } = routed.info;
      const endpoint = this.d.resolveEndpoint
        ? this.d.resolveEndpoint(routed.info.endpoint)
        : routed.info.endpoint;
      const handler = this.d.handlers.get(type)!;
      try {
        await handler.validatePlugin(name, endpoint, supportedVersions);
      } catch (err) {
        await this.notify(client, socketPath, false, validationFailedMessage(errorMessage(err)));
        throw new Error('RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed');
      }
      const entry: RegisteredPlugin = { socketPath, stamp, type, name, endpoint };
      this.actual.set(socketPath, entry);
      try {
        await handler.registerPlugin(name, endpoint, supportedVersions);
      } catch (err) {
        this.actual.delete(socketPath);
        const msg = registrationFailedMessage(errorMessage(err));
        await this.notify(client, socketPath, false, msg);
        throw new Error(msg);
      }
      try {
        await this.notify(client, socketPath, true, '');
      } catch (err) {
        this.actual.delete(socketPath);
        await handler.deregisterPlugin(name, endpoint).catch(() => undefined);
        throw err;
      }
      this.log.info('Registered plugin', { pluginName: name, pluginType: type, endpoint, path: socketPath });
    } finally {
      client.close();
    }
  }

  private async notify(
    client: grpc.Client,
    socketPath: string,
    registered: boolean,
    error: string,
  ): Promise<void> {
    try {
      await unary(
        client,
        'NotifyRegistrationStatus',
        { plugin_registered: registered, error },
        NOTIFY_TIMEOUT_MS,
      );
    } catch (err) {
      throw new Error(
        `RegisterPlugin error -- failed to send ${registered ? 'registration status' : 'error'} at socket ${socketPath}, err: ${errorMessage(err)}`,
      );
    }
  }
}

/**
 * Container Device Interface specs (github.com/cncf-tags/container-device-interface, spec 0.3+): a DRA
 * driver's kubelet plugin answers NodePrepareResources with CDI device IDs (`vendor.com/class=name`) and
 * writes the spec that says what each means for a container (env, device nodes, mounts). A CDI-aware runtime
 * (containerd 1.7+ with enable_cdi, 2.x, CRI-O) resolves them itself from `CDI_devices`; Debian's containerd
 * 1.6 ignores that field, so for a runtime without CDI the DRA manager resolves them here and the kubelet puts
 * the edits into the container config it sends. Hooks, additional GIDs and intelRdt are not applied (a runtime
 * hook needs the runtime); they are reported so the caller can say so. Pure: manager.ts reads the files.
 */
import { parse as parseYaml } from 'yaml';
import type { Device, KeyValue, Mount } from '../../../runtime/types.js';
import { resolveKubeletHostPath } from '../../rootdir.js';

/** The CDI spec directories, lowest priority first (CDI's defaults: /etc/cdi, then /var/run/cdi). */
export const DefaultCDISpecDirs = ['/etc/cdi', '/var/run/cdi'] as const;

interface CDIDeviceNode {
  path?: string;
  hostPath?: string;
  permissions?: string;
}

interface CDIMount {
  hostPath?: string;
  containerPath?: string;
  options?: string[];
}

export interface CDIContainerEdits {
  env?: string[];
  deviceNodes?: CDIDeviceNode[];
  mounts?: CDIMount[];
  hooks?: unknown[];
  additionalGids?: number[];
}

interface CDISpec {
  cdiVersion?: string;
  kind?: string;
  devices?: { name?: string; containerEdits?: CDIContainerEdits }[];
  containerEdits?: CDIContainerEdits;
}

/** One spec file as read: its path and text. */
export interface CDISpecFile {
  path: string;
  text: string;
}

/** The devices the spec files define, by qualified name, each with its spec's and its own edits. */
export interface CDIRegistry {
  devices: Map<string, { spec: string; edits: CDIContainerEdits[] }>;
  /** Files that could not be used, with why (a log line each). */
  errors: string[];
}

const KIND = /^[A-Za-z0-9][A-Za-z0-9.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Builds the registry from spec files given in priority order (later files win for a device both define, as
 * a later spec directory does in CDI). A file that does not parse or has no valid kind is skipped with an
 * error; so is a device without a name.
 */
export function buildCDIRegistry(files: readonly CDISpecFile[]): CDIRegistry {
  const devices = new Map<string, { spec: string; edits: CDIContainerEdits[] }>();
  const errors: string[] = [];
  for (const f of files) {
    let spec: CDISpec;
    try {
      spec = (f.path.endsWith('.json') ? JSON.parse(f.text) : parseYaml(f.text)) as CDISpec;
    } catch (err) {
      errors.push(`failed to parse CDI Spec ${f.path}: ${(err as Error).message}`);
      continue;
    }
    if (!spec || typeof spec !== 'object' || typeof spec.kind !== 'string' || !KIND.test(spec.kind)) {
      errors.push(`invalid CDI Spec ${f.path}: invalid kind ${JSON.stringify(spec?.kind)}`);
      continue;
    }
    for (const d of Array.isArray(spec.devices) ? spec.devices : []) {
      if (!d || typeof d.name !== 'string' || d.name === '') {
        errors.push(`invalid CDI Spec ${f.path}: device without a name`);
        continue;
      }
      const edits = [spec.containerEdits, d.containerEdits].filter((e): e is CDIContainerEdits => !!e);
      devices.set(`${spec.kind}=${d.name}`, { spec: f.path, edits });
    }
  }
  return { devices, errors };
}

/** What applying CDI devices adds to a container config. */
export interface CDIEdits {
  env: KeyValue[];
  mounts: Mount[];
  devices: Device[];
  /** Edits a runtime must apply that the kubelet cannot (hooks, additional GIDs), by device. */
  notApplied: string[];
}

/**
 * The edits with their mounts' host paths under `/var/lib/kubelet` in this node's root (resolveKubeletHostPath):
 * a driver's pod wrote the files there through its hostPath, and its CDI spec names them as a kubelet would
 * see them (the DRA device metadata files, say).
 */
export function inKubeletRoot(edits: CDIEdits, root: string): CDIEdits {
  const mounts = edits.mounts.map((m) => {
    const hostPath = resolveKubeletHostPath(m.hostPath, root);
    return hostPath === m.hostPath ? m : { ...m, hostPath };
  });
  return { ...edits, mounts };
}

/**
 * Resolves device IDs into edits, or the error CDI gives for IDs no spec defines. A spec's own edits apply
 * once however many of its devices are asked for.
 */
export function resolveCDIDevices(
  registry: Pick<CDIRegistry, 'devices'>,
  ids: readonly string[],
): { ok: true; edits: CDIEdits } | { ok: false; error: string } {
  const unresolved = ids.filter((id) => !registry.devices.has(id));
  if (unresolved.length > 0) return { ok: false, error: `unresolvable CDI devices ${unresolved.join(', ')}` };
  const out: CDIEdits = { env: [], mounts: [], devices: [], notApplied: [] };
  const seenSpecEdits = new Set<CDIContainerEdits>();
  for (const id of ids) {
    const d = registry.devices.get(id)!;
    for (const e of d.edits) {
      if (seenSpecEdits.has(e)) continue;
      seenSpecEdits.add(e);
      for (const kv of e.env ?? []) {
        if (typeof kv !== 'string') continue;
        const i = kv.indexOf('=');
        const k = i < 0 ? kv : kv.slice(0, i);
        const v = i < 0 ? '' : kv.slice(i + 1);
        out.env = [...out.env.filter((x) => x.key !== k), { key: k, value: v }];
      }
      for (const n of e.deviceNodes ?? []) {
        if (!n?.path) continue;
        out.devices.push({
          containerPath: n.path,
          hostPath: n.hostPath || n.path,
          permissions: n.permissions || 'rwm',
        });
      }
      for (const m of e.mounts ?? []) {
        if (!m?.hostPath || !m.containerPath) continue;
        const opts = m.options ?? [];
        const mount: Mount = { containerPath: m.containerPath, hostPath: m.hostPath };
        if (opts.includes('ro')) mount.readonly = true;
        if (opts.includes('rshared') || opts.includes('shared')) mount.propagation = 'BIDIRECTIONAL';
        else if (opts.includes('rslave') || opts.includes('slave')) mount.propagation = 'HOST_TO_CONTAINER';
        out.mounts.push(mount);
      }
      if ((e.hooks ?? []).length > 0) out.notApplied.push(`${id}: hooks`);
      if ((e.additionalGids ?? []).length > 0) out.notApplied.push(`${id}: additionalGids`);
    }
  }
  return { ok: true, edits: out };
}

/** Env of the config with CDI's env applied over it (CDI replaces a variable of the same name). */
export function mergeEnv(base: readonly KeyValue[], cdi: readonly KeyValue[]): KeyValue[] {
  const keys = new Set(cdi.map((e) => e.key));
  return [...base.filter((e) => !keys.has(e.key)), ...cdi.map((e) => ({ ...e }))];
}

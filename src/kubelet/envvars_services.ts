/**
 * Service links: the environment variables that tell a container where the services it can see are
 * (kubelet_pods.go getServiceEnvVarMap, pkg/kubelet/envvars FromServices). The result is what envvars.ts takes
 * as `serviceEnv`, the lowest-precedence part of a container's environment.
 *
 * Pure: the caller lists the services (all namespaces, or at least the pod's and `default`); nothing here does
 * I/O. The kubelet walks Go maps here, so its order is random; ours is by service name, which only matters
 * when two services would define the same variable.
 */
import type { EnvVarValue } from './envvars.js';
import { isServiceIPSet, type Service } from '../api/service.js';

/** Services whose variables every pod gets, from the `default` namespace, whatever enableServiceLinks says. */
const MASTER_SERVICES: ReadonlySet<string> = new Set(['kubernetes']);
const NAMESPACE_DEFAULT = 'default';

/** Upper-cased, `-` to `_` (makeEnvVariableName). Dots and leading digits are left as they are, as upstream. */
export function makeEnvVariableName(name: string): string {
  return name.replaceAll('-', '_').toUpperCase();
}

/** Go's net.JoinHostPort: an IPv6 address is bracketed. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The docker-link variables of one service (makeLinkVariables). */
function linkVariables(service: Service, clusterIP: string): EnvVarValue[] {
  const prefix = makeEnvVariableName(service.metadata.name ?? '');
  const out: EnvVarValue[] = [];
  (service.spec?.ports ?? []).forEach((sp, i) => {
    const protocol = sp.protocol || 'TCP';
    const url = `${protocol.toLowerCase()}://${joinHostPort(clusterIP, sp.port)}`;
    // Docker gives the first port the unnumbered name as well.
    if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
    const portPrefix = `${prefix}_PORT_${sp.port}_${protocol.toUpperCase()}`;
    out.push(
      { name: portPrefix, value: url },
      { name: `${portPrefix}_PROTO`, value: protocol.toLowerCase() },
      { name: `${portPrefix}_PORT`, value: String(sp.port) },
      { name: `${portPrefix}_ADDR`, value: clusterIP },
    );
  });
  return out;
}

/**
 * The variables for `services`, in their order (envvars.FromServices): `<NAME>_SERVICE_HOST`,
 * `<NAME>_SERVICE_PORT` (the first port), `<NAME>_SERVICE_PORT_<PORTNAME>` for each named port, then the
 * docker-link variables. Services without a cluster IP (empty or `None`) are skipped. A service with no ports
 * (which validation forbids for a ClusterIP service) gets only its `_SERVICE_HOST`; the kubelet would panic.
 */
export function fromServices(services: readonly Service[]): EnvVarValue[] {
  const out: EnvVarValue[] = [];
  for (const service of services) {
    if (!isServiceIPSet(service)) continue;
    const clusterIP = service.spec?.clusterIP ?? '';
    const ports = service.spec?.ports ?? [];
    const base = makeEnvVariableName(service.metadata.name ?? '');
    out.push({ name: `${base}_SERVICE_HOST`, value: clusterIP });
    const first = ports[0];
    if (first) {
      const portName = `${base}_SERVICE_PORT`;
      out.push({ name: portName, value: String(first.port) });
      for (const sp of ports) {
        if (sp.name)
          out.push({ name: `${portName}_${makeEnvVariableName(sp.name)}`, value: String(sp.port) });
      }
    }
    out.push(...linkVariables(service, clusterIP));
  }
  return out;
}

/**
 * The service variables a pod in `namespace` sees (getServiceEnvVarMap): the master `kubernetes` service of
 * `default` always, and, when `enableServiceLinks` (API default true), every service of the pod's namespace.
 *
 * Precedence, as upstream: with service links on, a service named `kubernetes` in the pod's own namespace
 * replaces the master one, whichever the list gives first; with them off, only `default/kubernetes` counts.
 */
export function getServiceEnvVarMap(
  services: readonly Service[],
  namespace: string,
  enableServiceLinks: boolean | undefined = true,
): Record<string, string> {
  const links = enableServiceLinks ?? true;
  const byName = new Map<string, Service>();
  for (const service of services) {
    if (!isServiceIPSet(service)) continue;
    const name = service.metadata.name ?? '';
    if (service.metadata.namespace === NAMESPACE_DEFAULT && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, service);
    } else if (service.metadata.namespace === namespace && links) {
      byName.set(name, service);
    }
  }
  const chosen = [...byName.keys()].sort().map((name) => byName.get(name)!);
  const env: Record<string, string> = {};
  for (const e of fromServices(chosen)) env[e.name] = e.value;
  return env;
}

// The cluster add-ons that give pods Services and cluster DNS: kube-proxy and CoreDNS. Their objects are the
// templates in scripts/addons/; this renders them from typed options and applies them with kubectl. The
// images they name are built and imported into a containerd by scripts/cluster-addons.sh (nothing can be
// pulled here), which must happen before the pods start.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

const ADDONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../addons');

/** The images the templates name: what `scripts/cluster-addons.sh images` prints. */
export const KUBE_PROXY_IMAGE = 'registry.k8s.io/kube-proxy:v1.37.2';
export const COREDNS_IMAGE = 'registry.k8s.io/coredns/coredns:v1.15.0';

export type AddonName = 'kube-proxy' | 'coredns';
/** Every add-on, in the order they are applied (kube-proxy first: CoreDNS reaches the API through it). */
export const ADDONS: readonly AddonName[] = ['kube-proxy', 'coredns'];

export interface AddonOptions {
  /**
   * The API server's URL as pods and nodes reach it, e.g. `https://10.201.0.1:6443`: kube-proxy's kubeconfig
   * (it cannot use the `kubernetes` Service, which it is the one to route). Its certificate must hold that
   * address, and be signed by the CA that pods get in their ServiceAccount volume.
   */
  apiServer: string;
  /**
   * The pod network, e.g. `10.201.128.0/17` (dual-stack: two CIDRs, comma-separated): kube-proxy's
   * clusterCIDR, which tells traffic from pods from traffic to masquerade.
   */
  clusterCIDR: string;
  /**
   * The kube-dns Service's ClusterIP, e.g. `10.0.0.10`: inside the API server's service range, and the
   * address the nodes give pods as their nameserver (the kubelet's clusterDNS).
   */
  dnsServiceIP: string;
  /** The cluster's DNS domain, e.g. `cluster.local` (the kubelet's clusterDomain), without a trailing dot. */
  clusterDomain: string;
  /**
   * Where the add-ons' pods may run, when not every node can run them: a cluster with simulated VirtualNodes
   * (whose containers are no processes and cannot program a network) pins kube-proxy and CoreDNS to the nodes
   * with real containers, and tolerates those nodes' taints.
   */
  placement?: { nodeSelector: Record<string, string>; tolerations?: Record<string, unknown>[] };
}

export interface ApplyAddonsOptions extends AddonOptions {
  /** The kubeconfig kubectl uses (an admin's: the add-ons create ClusterRoles and bindings). */
  kubeconfig: string;
  /** The kubectl to run (default: `kubectl` on PATH). */
  kubectl?: string;
  /** Which add-ons (default: all of ADDONS). */
  addons?: readonly AddonName[];
}

/** Checks the options; throws naming the first one that is not what it must be. */
export function validateAddonOptions(opts: AddonOptions): void {
  let url: URL;
  try {
    url = new URL(opts.apiServer);
  } catch {
    throw new Error(`apiServer must be a URL, got ${JSON.stringify(opts.apiServer)}`);
  }
  if (url.protocol !== 'https:' || url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new Error(`apiServer must be https://<host>[:<port>], got ${JSON.stringify(opts.apiServer)}`);
  }
  const cidrs = opts.clusterCIDR.split(',');
  if (cidrs.length > 2 || !cidrs.every(isCidr)) {
    throw new Error(
      `clusterCIDR must be a CIDR (or two, comma-separated), got ${JSON.stringify(opts.clusterCIDR)}`,
    );
  }
  if (net.isIP(opts.dnsServiceIP) === 0) {
    throw new Error(`dnsServiceIP must be an IP address, got ${JSON.stringify(opts.dnsServiceIP)}`);
  }
  const label = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
  if (!new RegExp(`^${label}(\\.${label})*$`).test(opts.clusterDomain) || opts.clusterDomain.length > 253) {
    throw new Error(
      `clusterDomain must be a DNS name like cluster.local, got ${JSON.stringify(opts.clusterDomain)}`,
    );
  }
}

function isCidr(s: string): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(s);
  if (!m) return false;
  const family = net.isIP(m[1]!);
  return family !== 0 && Number(m[2]) <= (family === 4 ? 32 : 128);
}

/** The template's text with every `__NAME__` replaced; a placeholder without a value is an error. */
function fill(name: AddonName, values: Record<string, string>): string {
  const template = readFileSync(path.join(ADDONS_DIR, `${name}.yaml`), 'utf8');
  return template.replace(/__([A-Z][A-Z0-9_]*)__/g, (whole: string, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`scripts/addons/${name}.yaml: no value for ${whole}`);
    return v;
  });
}

/** An add-on's objects with its pods placed as `placement` says (unchanged without one). */
function placed(text: string, placement: AddonOptions['placement']): string {
  if (!placement) return text;
  return parseAllDocuments(text)
    .map((doc) => {
      const o = doc.toJS() as { kind?: string; spec?: { template?: { spec?: Record<string, unknown> } } };
      if ((o.kind !== 'Deployment' && o.kind !== 'DaemonSet') || !o.spec?.template?.spec)
        return doc.toString();
      const pod = o.spec.template.spec;
      pod['nodeSelector'] = { ...(pod['nodeSelector'] as object | undefined), ...placement.nodeSelector };
      pod['tolerations'] = [
        ...((pod['tolerations'] as unknown[] | undefined) ?? []),
        ...(placement.tolerations ?? []),
      ];
      return stringify(o);
    })
    .join('---\n');
}

/**
 * The add-ons' objects as one multi-document YAML stream, for `kubectl apply -f -`: for kube-proxy a
 * ServiceAccount, a ClusterRoleBinding to system:node-proxier, the ConfigMap kube-proxy and the DaemonSet
 * kube-proxy; for CoreDNS a ServiceAccount, a ClusterRole and its binding, the ConfigMap coredns, the
 * Deployment coredns and the Service kube-dns. Everything namespaced is in kube-system.
 */
export function renderAddons(opts: AddonOptions, addons: readonly AddonName[] = ADDONS): string {
  validateAddonOptions(opts);
  const values: Record<string, string> = {
    // The URL as parsed (a valid one without a path): no stray character reaches the YAML.
    API_SERVER: new URL(opts.apiServer).origin,
    CLUSTER_CIDR: opts.clusterCIDR,
    DNS_SERVICE_IP: opts.dnsServiceIP,
    CLUSTER_DOMAIN: opts.clusterDomain,
  };
  return ADDONS.filter((a) => addons.includes(a))
    .map((a) => placed(fill(a, values), opts.placement).trimEnd() + '\n')
    .join('---\n');
}

/**
 * Renders the add-ons and applies them with `kubectl apply -f -` against `opts.kubeconfig`. Resolves to
 * kubectl's output (one line per object); rejects with kubectl's error output when it fails.
 */
export async function applyAddons(opts: ApplyAddonsOptions): Promise<string> {
  const manifest = renderAddons(opts, opts.addons ?? ADDONS);
  const kubectl = opts.kubectl ?? 'kubectl';
  const r = await runWithInput(kubectl, ['--kubeconfig', opts.kubeconfig, 'apply', '-f', '-'], manifest);
  if (r.code !== 0) {
    throw new Error(
      `${kubectl} apply of the cluster add-ons exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`,
    );
  }
  return r.stdout;
}

function runWithInput(
  cmd: string,
  args: string[],
  input: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    // A command that exits without reading its input must not crash us with EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

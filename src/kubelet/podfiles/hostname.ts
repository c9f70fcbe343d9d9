/**
 * A pod's hostname and domain (kubelet_pods.go GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded) and
 * the name its sandbox's kernel gets (pkg/kubelet/util GetNodenameForKernel, for setHostnameAsFQDN).
 *
 * This is meant to be the one implementation: kuberuntime/sandboxconfig.ts still has its own `podHostname` (the
 * truncation only); its callers should move to `generatePodHostNameAndDomain` + `nodenameForKernel`.
 *
 * Pure. Errors are KindErrors of kind InvalidArgument carrying the kubelet's message; the API server's own
 * validation makes them rare, but a pod that reaches us unvalidated (tests, static manifests) still fails the
 * way the kubelet's would.
 */
import type { Pod, PodSpec } from '../../api/core.js';
import { KindError } from '../../util/errors.js';

/** 64 bytes in utsname.nodename, one of them the terminating NUL. */
export const HOSTNAME_MAX_LEN = 63;
/** setHostnameAsFQDN: the whole FQDN has to fit the same field; upstream allows 64 here. */
export const FQDN_MAX_LEN = 64;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_LABEL_MAX = 63;
const DNS1123_SUBDOMAIN_MAX = 253;

/** apimachinery validation.RegexError. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  // Each example ends in ", " and they are joined by " or ", hence the double space between two of them.
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

const maxLenError = (n: number): string => `must be no more than ${n} characters`;

/** validation.IsDNS1123Label: the reasons `value` is not a DNS label (none when it is one). */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_LABEL_MAX) errs.push(maxLenError(DNS1123_LABEL_MAX));
  if (!DNS1123_LABEL.test(value)) {
    // Length was checked above, so a valid subdomain that is not a label can only be failing on its dots.
    if (DNS1123_SUBDOMAIN.test(value)) errs.push('must not contain dots');
    else
      errs.push(
        regexError(
          'a lowercase RFC 1123 label must consist of lower case alphanumeric characters or ' +
            "'-', and must start and end with an alphanumeric character",
          DNS1123_LABEL_FMT,
          'my-name',
          '123-abc',
        ),
      );
  }
  return errs;
}

/** validation.IsDNS1123Subdomain. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX));
  if (!DNS1123_SUBDOMAIN.test(value)) {
    errs.push(
      regexError(
        'a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, ' +
          "'-' or '.', and must start and end with an alphanumeric character",
        DNS1123_SUBDOMAIN_FMT,
        'example.com',
      ),
    );
  }
  return errs;
}

/**
 * Cuts a hostname longer than 63 characters to 63, then drops trailing `-` and `.` (a name may not end in
 * them). Throws when nothing is left, which a valid pod name cannot cause.
 */
export function truncatePodHostnameIfNeeded(podName: string, hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LEN) return hostname;
  const truncated = hostname.slice(0, HOSTNAME_MAX_LEN).replace(/[-.]+$/, '');
  if (truncated.length === 0) {
    throw new KindError(
      'InvalidArgument',
      `hostname for pod ${JSON.stringify(podName)} was invalid: ${JSON.stringify(hostname)}`,
      { pod: podName },
    );
  }
  return truncated;
}

/** The spec fields read here (`hostnameOverride`: the HostnameOverride field, GA and locked on in v1.37). */
export type HostnameSpec = Pick<PodSpec, 'hostname' | 'subdomain' | 'hostnameOverride'>;

export interface HostnameOptions {
  /** kubelet --cluster-domain, e.g. `cluster.local`. */
  clusterDomain: string;
  /** The HostnameOverride feature gate (GA and locked on since v1.37; the kubelet reads the field always). */
  hostnameOverride?: boolean;
}

export interface PodHostNameAndDomain {
  /** The short hostname: spec.hostname or the pod name, at most 63 characters. */
  hostname: string;
  /** `<subdomain>.<namespace>.svc.<clusterDomain>`, or '' without a subdomain. */
  hostDomain: string;
}

function invalid(pod: Pick<Pod, 'metadata'>, message: string): KindError {
  return new KindError('InvalidArgument', message, {
    pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
  });
}

/**
 * GeneratePodHostNameAndDomain: the hostname is spec.hostname (which must be a DNS label) or else the pod
 * name, truncated; the domain exists only with a spec.subdomain (a DNS label too). With the HostnameOverride
 * gate and the field set, the override (a DNS subdomain) is the hostname and there is no domain.
 */
export function generatePodHostNameAndDomain(
  pod: { metadata: Pod['metadata']; spec: HostnameSpec },
  opts: HostnameOptions,
): PodHostNameAndDomain {
  const podName = pod.metadata.name ?? '';
  const override = pod.spec.hostnameOverride;
  if (opts.hostnameOverride && override !== undefined) {
    const msgs = isDNS1123Subdomain(override);
    if (msgs.length > 0) {
      throw invalid(
        pod,
        `pod HostnameOverride ${JSON.stringify(override)} is not a valid DNS subdomain: ${msgs.join(';')}`,
      );
    }
    return { hostname: truncatePodHostnameIfNeeded(podName, override), hostDomain: '' };
  }

  let hostname = podName;
  const specHostname = pod.spec.hostname ?? '';
  if (specHostname.length > 0) {
    const msgs = isDNS1123Label(specHostname);
    if (msgs.length > 0) {
      throw invalid(
        pod,
        `pod Hostname ${JSON.stringify(specHostname)} is not a valid DNS label: ${msgs.join(';')}`,
      );
    }
    hostname = specHostname;
  }
  hostname = truncatePodHostnameIfNeeded(podName, hostname);

  let hostDomain = '';
  const subdomain = pod.spec.subdomain ?? '';
  if (subdomain.length > 0) {
    const msgs = isDNS1123Label(subdomain);
    if (msgs.length > 0) {
      throw invalid(
        pod,
        `pod Subdomain ${JSON.stringify(subdomain)} is not a valid DNS label: ${msgs.join(';')}`,
      );
    }
    hostDomain = `${subdomain}.${pod.metadata.namespace ?? ''}.svc.${opts.clusterDomain}`;
  }
  return { hostname, hostDomain };
}

/**
 * The name the sandbox's kernel gets (GetNodenameForKernel): the short hostname, or `<hostname>.<domain>`
 * when the pod sets setHostnameAsFQDN and has a domain. An FQDN over 64 characters is an error (the sandbox is
 * not created), with the kubelet's message.
 */
export function nodenameForKernel(
  hostname: string,
  hostDomain: string,
  setHostnameAsFQDN: boolean | undefined,
): string {
  if (hostDomain.length === 0 || !setHostnameAsFQDN) return hostname;
  const fqdn = `${hostname}.${hostDomain}`;
  if (fqdn.length > FQDN_MAX_LEN) {
    throw new KindError(
      'InvalidArgument',
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long ` +
        `(${FQDN_MAX_LEN} characters is the max, ${fqdn.length} characters requested)`,
      { fqdn },
    );
  }
  return fqdn;
}

/**
 * The sandbox hostname for a pod (kuberuntime_sandbox.go generatePodSandboxConfig): none for a host-network
 * pod (the runtime gives it the node's), else nodenameForKernel of the generated hostname and domain.
 */
export function podSandboxHostname(
  pod: { metadata: Pod['metadata']; spec: HostnameSpec & Pick<PodSpec, 'hostNetwork' | 'setHostnameAsFQDN'> },
  opts: HostnameOptions,
): string | undefined {
  if (pod.spec.hostNetwork) return undefined;
  const { hostname, hostDomain } = generatePodHostNameAndDomain(pod, opts);
  return nodenameForKernel(hostname, hostDomain, pod.spec.setHostnameAsFQDN);
}

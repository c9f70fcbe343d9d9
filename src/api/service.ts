/**
 * The subset of core/v1 Service that the kubelet reads: enough to build a pod's service-link environment
 * variables (pkg/kubelet/envvars). Wire shape, as the API server sends it.
 */
import type { ObjectMeta } from './core.js';

export type ServiceProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface ServicePort {
  name?: string;
  /** Default TCP. */
  protocol?: ServiceProtocol;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
  appProtocol?: string;
}

export interface ServiceSpec {
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  /** An IP, `None` for a headless service, or empty/absent (ExternalName). */
  clusterIP?: string;
  clusterIPs?: string[];
  ports?: ServicePort[];
  selector?: Record<string, string>;
  externalName?: string;
}

export interface Service {
  apiVersion?: 'v1';
  kind?: 'Service';
  metadata: ObjectMeta;
  spec?: ServiceSpec;
}

/** `spec.clusterIP` when headless. */
export const ClusterIPNone = 'None';

/** True when the service has a virtual IP (v1helper.IsServiceIPSet): set, and not `None`. */
export function isServiceIPSet(service: Pick<Service, 'spec'>): boolean {
  const ip = service.spec?.clusterIP ?? '';
  return ip !== '' && ip !== ClusterIPNone;
}

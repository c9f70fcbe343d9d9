// The API objects metrics-server needs beside a test control plane (see metricsserver.ts): its RBAC, the
// ExternalName Service and the APIService of the resource metrics API.

export const METRICS_API_SERVICE = 'v1beta1.metrics.k8s.io';
export const NAMESPACE = 'kube-system';
export const NAME = 'metrics-server';
/** The user metrics-server authenticates as (its client certificate's CN). */
export const METRICS_SERVER_USER = 'system:metrics-server';

/** The permissions metrics-server needs, as upstream's manifests grant them to its ServiceAccount. */
/**
 * `endpoint`: where metrics-server listens when the API server routes to endpoints (--enable-aggregator-routing,
 * the control plane with a pod network): a Service without selector and an EndpointSlice naming that address,
 * since the aggregator then looks the Service's endpoints up and refuses ExternalName Services. Without it, the
 * ExternalName Service of the module comment.
 */
export function accessObjects(endpoint?: { ip: string; port: number }): object[] {
  const user = { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: METRICS_SERVER_USER };
  const roleRef = (kind: string, name: string): object => ({
    apiGroup: 'rbac.authorization.k8s.io',
    kind,
    name,
  });
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: METRICS_SERVER_USER },
      rules: [
        // Scraping: the node API authorizes /metrics/resource as nodes/metrics.
        { apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] },
        // Its informers: which nodes to scrape, which pods to report.
        { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: METRICS_SERVER_USER },
      roleRef: roleRef('ClusterRole', METRICS_SERVER_USER),
      subjects: [user],
    },
    {
      // Delegated authentication and authorization of the requests the aggregator forwards (TokenReview,
      // SubjectAccessReview).
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'metrics-server:system:auth-delegator' },
      roleRef: roleRef('ClusterRole', 'system:auth-delegator'),
      subjects: [user],
    },
    {
      // The front-proxy and client CAs it trusts, from kube-system/extension-apiserver-authentication.
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'metrics-server-auth-reader', namespace: NAMESPACE },
      roleRef: roleRef('Role', 'extension-apiserver-authentication-reader'),
      subjects: [user],
    },
    {
      // Who may read the metrics: whoever has view, edit or admin (aggregated into those roles).
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: 'system:aggregated-metrics-reader',
        labels: {
          'rbac.authorization.k8s.io/aggregate-to-view': 'true',
          'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
          'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
        },
      },
      rules: [
        { apiGroups: ['metrics.k8s.io'], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    ...(endpoint ? routedService(endpoint) : [externalNameService()]),
  ];
}

export function apiServiceObject(port: number, caBundlePem: Buffer): object {
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: METRICS_API_SERVICE, labels: { 'app.kubernetes.io/name': NAME } },
    spec: {
      group: 'metrics.k8s.io',
      version: 'v1beta1',
      service: { name: NAME, namespace: NAMESPACE, port },
      caBundle: caBundlePem.toString('base64'),
      groupPriorityMinimum: 100,
      versionPriority: 100,
    },
  };
}

/** See the module comment: the aggregator dials 127.0.0.1:<APIService port>. */
function externalNameService(): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: NAME, namespace: NAMESPACE, labels: { 'app.kubernetes.io/name': NAME } },
    spec: { type: 'ExternalName', externalName: '127.0.0.1' },
  };
}

/** A Service without selector on `port` and the EndpointSlice that names `ip`:`port` as its one endpoint. */
function routedService(endpoint: { ip: string; port: number }): object[] {
  const labels = { 'app.kubernetes.io/name': NAME };
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: NAME, namespace: NAMESPACE, labels },
      spec: { ports: [{ name: 'https', port: endpoint.port, targetPort: endpoint.port, protocol: 'TCP' }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: NAME,
        namespace: NAMESPACE,
        labels: {
          ...labels,
          'kubernetes.io/service-name': NAME,
          'endpointslice.kubernetes.io/managed-by': 'kubelet-operator-tests',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [endpoint.ip], conditions: { ready: true } }],
      ports: [{ name: 'https', port: endpoint.port, protocol: 'TCP' }],
    },
  ];
}

/**
 * kubelet-operator's entry point: configuration, the API client, the operator, the health/metrics server,
 * and a graceful shutdown on SIGTERM/SIGINT (loops stop; Nodes, Leases and pods stay for the next process).
 */
import { hostname } from 'node:os';
import { EVENT_CONNECTIONS, HEARTBEAT_CONNECTIONS, loadConfig, usage } from './config.js';
import { KubeClient, connectionOf } from './kube/client.js';
import { loadPlainKubeConfig, type KubeConnection } from './kube/kubeconfig.js';
import { kubeletNodeFactory } from './app/kubeletnode.js';
import { restVolumeSources } from './kubelet/volume/sources.js';
import { Metrics } from './metrics.js';
import { Operator } from './operator.js';
import { restShardLeaseAPI } from './operator/shard/api.js';
import { ShardCoordinator } from './operator/shard/coordinator.js';
import { HealthServer } from './server/http.js';
import { operatorFlagValues } from './server/nodeapi/configz.js';
import { NodeApiRegistry } from './server/nodeapi/registry.js';
import { DynamicFileContent, parseCaBundle, parseServingPair } from './server/nodeapi/dynamicfiles.js';
import { serveNodeApi, type NodeApiCertificates, type ServedNodeApi } from './server/nodeapi/serve.js';
import { RealClock } from './util/clock.js';
import { errorMessage } from './util/errors.js';
import { createLogger } from './util/logger.js';
import { processSlicer } from './util/timeslice.js';

export const VERSION = '0.1.0';

/**
 * The connection of a kubeconfig that needs client-node's KubeConfig (exec plugins, auth providers, several
 * files; see kube/kubeconfig.ts), imported only then: it is a third of the start-up time.
 */
async function clientNodeConnection(file: string | undefined): Promise<KubeConnection> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return connectionOf(kc);
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage());
    return 0;
  }
  const loaded = loadConfig(argv, process.env);
  if (!loaded.ok) {
    console.error(`kubelet-operator: ${loaded.message}\n${usage()}`);
    return 2;
  }
  const cfg = loaded.config;
  const logger = createLogger(cfg.logLevel, { component: 'kubelet-operator' });
  const clock = new RealClock();
  const metrics = new Metrics();

  let connection: KubeConnection;
  try {
    connection =
      loadPlainKubeConfig(cfg.kubeconfig || undefined) ?? (await clientNodeConnection(cfg.kubeconfig));
  } catch (err) {
    logger.error('cannot load a kubeconfig', {
      kubeconfig: cfg.kubeconfig || '(default)',
      error: errorMessage(err),
    });
    return 2;
  }
  // With shard Leases, this replica's identity is its Lease holder name and part of its user agent (the
  // API server's audit log tells replicas apart by it).
  const identity =
    cfg.shardIdentity ||
    `${hostname()
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50)}-${process.pid}`;
  const client = KubeClient.fromConnection(connection, {
    qps: cfg.kubeApiQps,
    burst: cfg.kubeApiBurst,
    unlimited: cfg.unlimitedQps,
    connections: cfg.kubeApiConnections,
    clock,
    userAgent: cfg.shardLeases
      ? `kubelet-operator/${VERSION} replica/${identity}`
      : `kubelet-operator/${VERSION}`,
    onRequest: metrics.onRequest,
    yieldToLoop: () => processSlicer.yield(),
  });
  // As the kubelet: heartbeats (node Leases, node status, shard Leases) on a client without a rate limit, so
  // no flood of other requests queued in the main bucket can let a Lease expire; events on a bucket per node
  // (--event-qps/--event-burst), so they neither wait behind pod work nor hold it up. Each of the three has
  // its own connections too: a burst's backlog of Events or status writes waits in its own pool's queue.
  const heartbeatClient = client
    .withPool(HEARTBEAT_CONNECTIONS)
    .withLimits({ unlimited: true, prompt: true });
  const eventPool = client.withPool(EVENT_CONNECTIONS);
  const eventLimits = cfg.unlimitedQps
    ? ({ unlimited: true } as const)
    : { qps: cfg.eventQps, burst: cfg.eventBurst };
  // The node API server's Events; each node gets a bucket of its own below, as each kubelet has.
  const eventClient = eventPool.withLimits(eventLimits);
  // One ConfigMap/Secret/claim cache for every node's volumes and environments; entries nobody asked for in
  // ten minutes (missing objects of deleted pods among them) are dropped every minute.
  const sources = restVolumeSources(client, clock);
  const pruneSources = setInterval(() => sources.prune(), 60_000);
  pruneSources.unref();
  const nodeApi = new NodeApiRegistry();
  const factory = kubeletNodeFactory({
    nodeApi,
    client,
    heartbeatClient,
    eventClient: () => eventPool.withLimits(eventLimits),
    clock,
    logger,
    metrics,
    defaultInternalIP: cfg.defaultInternalIP,
    nodeApiPort: cfg.nodeApiPort,
    stateDir: cfg.stateDir,
    clusterDNS: cfg.clusterDns,
    clusterDomain: cfg.clusterDomain,
    resolvConf: cfg.resolvConf,
    hostsFile: cfg.hostsFile,
    sources,
  });
  const operator = new Operator({
    client,
    factory,
    clock,
    logger,
    workers: cfg.workers,
    virtualNodeSelector: cfg.virtualNodeSelector || undefined,
    ...(cfg.shardLeases
      ? {
          shard: new ShardCoordinator({
            api: restShardLeaseAPI(heartbeatClient, cfg.shardNamespace || 'kubelet-operator-system'),
            namespace: cfg.shardNamespace || 'kubelet-operator-system',
            identity,
            host: cfg.shardHost,
            clock,
            logger,
            leaseDurationMs: cfg.shardLeaseDurationSeconds * 1000,
            renewIntervalMs: cfg.shardRenewIntervalSeconds * 1000,
          }),
        }
      : {}),
  });

  const server = new HealthServer(metrics.registry);
  server.addHealthCheck('ping', () => undefined);
  server.addReadyCheck('informers', () => operator.ready());
  const port = await server.listen(cfg.httpPort, cfg.httpAddress);
  logger.info('serving health and metrics', { address: cfg.httpAddress, port });

  // The node API (kubectl logs/exec through the API server); needs a serving certificate: from files, or
  // one per node requested with a CSR (served once someone approves it; the nodes run meanwhile).
  // Certificate files are read again when they change (ReloadKubeletServerCertificateFile,
  // ReloadKubeletClientCAFile); they must be valid at start.
  let nodeApiServer: ServedNodeApi | undefined;
  const certLogger = logger.child({ component: 'node-api-certificate-files' });
  const servingFiles =
    cfg.nodeApiServingCert !== 'csr' && cfg.nodeApiCertFile && cfg.nodeApiKeyFile
      ? await DynamicFileContent.create({
          name: `serving-cert::${cfg.nodeApiCertFile}::${cfg.nodeApiKeyFile}`,
          files: [cfg.nodeApiCertFile, cfg.nodeApiKeyFile],
          parse: ([cert, key]) => parseServingPair(cert!, key!),
          clock,
          logger: certLogger,
        })
      : undefined;
  const clientCaFile = cfg.nodeApiClientCaFile
    ? await DynamicFileContent.create({
        name: `client-ca-bundle::${cfg.nodeApiClientCaFile}`,
        files: [cfg.nodeApiClientCaFile],
        parse: ([pem]) => parseCaBundle(pem!),
        clock,
        logger: certLogger,
      })
    : undefined;
  const certificates: NodeApiCertificates | undefined =
    cfg.nodeApiServingCert === 'csr'
      ? { mode: 'csr' }
      : servingFiles
        ? { mode: 'files', source: { certificateFor: () => servingFiles.current() } }
        : undefined;
  if (certificates) {
    servingFiles?.start();
    clientCaFile?.start();
    nodeApiServer = await serveNodeApi({
      // Its own connections, without a bound: a node's CSR is watched until someone approves it (minutes,
      // perhaps), and a hundred nodes waiting at once must not hold the main pool's connections.
      client: client.withPool(Infinity),
      eventClient,
      clock,
      logger,
      registry: nodeApi,
      certificates,
      clientCA: clientCaFile ? () => clientCaFile.current() : undefined,
      metrics: metrics.registry,
      port: cfg.nodeApiPort,
      address: cfg.nodeApiAddress,
      settings: {
        address: cfg.nodeApiAddress,
        port: cfg.nodeApiPort,
        clientCAFile: cfg.nodeApiClientCaFile,
        serving:
          certificates.mode === 'csr'
            ? { mode: 'csr' }
            : { mode: 'files', certFile: cfg.nodeApiCertFile, keyFile: cfg.nodeApiKeyFile },
        events: cfg.unlimitedQps ? 'unlimited' : { qps: cfg.eventQps, burst: cfg.eventBurst },
        operatorFlags: operatorFlagValues(cfg),
      },
    });
    logger.info('serving the node API', {
      address: cfg.nodeApiAddress,
      port: nodeApiServer.port,
      certificates: certificates.mode,
    });
  } else {
    logger.warn(
      'node API disabled: set --node-api-cert-file and --node-api-key-file, or --node-api-serving-cert=csr',
    );
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long, exiting');
      process.exit(1);
    }, 25_000);
    deadline.unref();
    await operator
      .stop()
      .catch((err: unknown) => logger.warn('operator stop failed', { error: errorMessage(err) }));
    clearInterval(pruneSources);
    await server.close();
    await nodeApiServer?.close();
    servingFiles?.stop();
    clientCaFile?.stop();
    client.close(); // and the connections its siblings share
    logger.info('stopped');
  };
  const done = new Promise<void>((resolve) => {
    process.once('SIGTERM', () => void stop('SIGTERM').then(resolve));
    process.once('SIGINT', () => void stop('SIGINT').then(resolve));
  });
  process.on('unhandledRejection', (reason) =>
    logger.error('unhandled rejection', { error: errorMessage(reason) }),
  );

  await operator.start();
  logger.info('operator started', {
    server: client.server,
    ...(cfg.shardLeases
      ? { replica: identity, shardNamespace: cfg.shardNamespace || 'kubelet-operator-system' }
      : {}),
  });
  await done;
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`kubelet-operator: ${errorMessage(err)}`);
    process.exitCode = 1;
  },
);

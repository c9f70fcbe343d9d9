/**
 * Starting the node API the way the operator process does (main.ts) and the local cluster does
 * (scripts/up.ts, test/cluster): one HTTPS server for every served VirtualNode, with its serving
 * certificate either from files or requested per node by CSR (signer kubernetes.io/kubelet-serving).
 */
import type { Server } from 'node:net';
import type { Registry } from 'prom-client';
import { EventRecorder } from '../../kube/events.js';
import type { KubeClient } from '../../kube/client.js';
import { restEventSink } from '../../node/api.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import { WebhookAuth } from './auth.js';
import { CsrServingCertificates } from './certificate.js';
import type { NodeApiSettings } from './configz.js';
import type { NodeApiRegistry } from './registry.js';
import { NodeApiServer } from './server.js';
import type { ServingCertificateSource } from './tlsfront.js';

export type NodeApiCertificates =
  /** One certificate (PEM) whose SANs hold every node address. */
  | { mode: 'files'; cert: Buffer; key: Buffer }
  /** The same, read again when its files change (ReloadKubeletServerCertificateFile; dynamicfiles.ts). */
  | { mode: 'files'; source: ServingCertificateSource }
  /** One certificate per node, by CSR; a node's address is served once its CSR is approved. */
  | { mode: 'csr' };

export interface ServeNodeApiOptions {
  client: KubeClient;
  /** Where its Events go (the operator's event client, with its own rate limit); default `client`. */
  eventClient?: KubeClient;
  clock: Clock;
  logger: Logger;
  registry: NodeApiRegistry;
  certificates: NodeApiCertificates;
  /**
   * CA bundle for client certificates (the API server's kubelet client certificate), or the current one of
   * a reloaded file (ReloadKubeletClientCAFile).
   */
  clientCA?: Buffer | (() => Buffer);
  metrics?: Registry;
  port: number;
  address: string;
  /** What /configz and /flagz say of the server and the operator's flags (see NodeApiServerOptions). */
  settings?: NodeApiSettings;
}

export interface ServedNodeApi {
  server: NodeApiServer;
  /** Set in CSR mode. */
  certificates?: CsrServingCertificates;
  port: number;
  /**
   * Serves node API connections of a socket listening elsewhere too: a node address inside a network
   * namespace that this process is not in, opened there and handed over (see NodeApiServer.adopt).
   */
  adopt(listener: Server): void;
  close(): Promise<void>;
}

export async function serveNodeApi(o: ServeNodeApiOptions): Promise<ServedNodeApi> {
  let certificates: CsrServingCertificates | undefined;
  let tls: ConstructorParameters<typeof NodeApiServer>[0]['tls'];
  if (o.certificates.mode === 'csr') {
    const certs = new CsrServingCertificates({
      api: o.client,
      clock: o.clock,
      logger: o.logger.child({ component: 'node-api-certificates' }),
      nodes: o.registry,
      recorderFor: (node) =>
        new EventRecorder(restEventSink(o.eventClient ?? o.client), o.clock, node, o.logger),
    });
    certs.start();
    certificates = certs;
    tls = { source: certs, onRefused: (a) => certs.reportRefused(a), clientCA: o.clientCA };
  } else {
    tls =
      'source' in o.certificates
        ? { source: o.certificates.source, clientCA: o.clientCA }
        : { cert: o.certificates.cert, key: o.certificates.key, clientCA: o.clientCA };
  }
  const server = new NodeApiServer({
    lookup: o.registry,
    auth: new WebhookAuth(o.client, o.clock),
    tls,
    clock: o.clock,
    logger: o.logger.child({ component: 'node-api' }),
    metrics: o.metrics,
    ...(o.settings ? { settings: o.settings } : {}),
  });
  let port: number;
  try {
    port = await server.listen(o.port, o.address);
  } catch (err) {
    await certificates?.stop();
    throw err;
  }
  return {
    server,
    certificates,
    port,
    adopt: (listener) => server.adopt(listener),
    close: async () => {
      await server.close();
      await certificates?.stop();
    },
  };
}

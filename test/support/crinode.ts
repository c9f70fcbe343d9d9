/**
 * One containerd-backed VirtualNode behind a real API server, as most e2e files need it: a control plane, a
 * private containerd, an admin client with the test's namespace ready for pods, the operator in-process, and
 * the VirtualNode Ready. Two kinds of node:
 * - `host` (default): pods in the host's network namespace, the node at 127.0.0.1, no node API;
 * - `cni`: pods in network namespaces of their own on a bridge of the run (CNI), the node at an address on
 *   that bridge, where its node API serves `kubectl exec/logs` with a serving certificate the API server
 *   trusts.
 * stop() undoes whatever was started, also when start failed half-way (it then rethrows).
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod, PodStatus } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import type { NodeApiServer } from '../../src/server/nodeapi/server.js';
import { RealClock } from '../../src/util/clock.js';
import type { Logger } from '../../src/util/logger.js';
import { startContainerd, type TestContainerd } from './containerd.js';
import { kubectl, startControlPlane, type ControlPlane } from './controlplane.js';
import { listenNodeApi, nodeApiApiserverArgs, servingPki } from './nodeapi.js';
import {
  adminClient,
  createPodOn,
  postVirtualNode,
  startTestOperator,
  testLogger,
  waitNodeReady,
  waitPodStatus,
} from './operator.js';
import { createPodNetwork, type PodNetwork } from './podnetwork.js';
import { removeStateDir } from './statedir.js';

export interface CriNodeEnv {
  /** The run's directory: state/ (pod directories) and logs/ (container logs) are under it. */
  dir: string;
  stateDir: string;
  logRoot: string;
  cp: ControlPlane;
  ctd: TestContainerd;
  client: KubeClient;
  op: Operator;
  /** The node's InternalIP: 127.0.0.1 on the host network, a bridge address with `cni`. */
  nodeIP: string;
  /** With `cni`: the pod network and the node API listening on nodeIP:10250. */
  net?: PodNetwork;
  nodeApi?: NodeApiServer;
  /** Stops the operator and starts a new one on the same state dir and node API (env.op is the new one). */
  restartOperator(): Promise<Operator>;
  /** createPodOn on the node, labelled `app: <name>` and `labels`. */
  createPod(name: string, spec: Record<string, unknown>, labels?: Record<string, string>): Promise<Pod>;
  getPod(name: string): Promise<Pod>;
  waitPod(name: string, pred: (s: PodStatus) => boolean, what: string, timeoutMs?: number): Promise<Pod>;
  /** `kubectl -n <ns> <args>`: stdout, or an error naming the command and its stderr. */
  k(args: string[], input?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startCriNodeEnv(o: {
  node: string;
  namespace: string;
  podNetwork?: 'host' | 'cni';
  /** More of the VirtualNode's spec (capacity, kubelet, ...); runtime and internalIP are the fixture's. */
  spec?: Record<string, unknown>;
  /** More of spec.runtime.cri. */
  cri?: Record<string, unknown>;
  apiserverArgs?: string[];
  logger?: Logger;
  /** The node's image GC period (default the kubelet's 5 minutes). */
  imageGCPeriodMs?: number;
  /** Registries the node's containerd trusts, by `host:port`, with their CA file (test/support/registry.ts). */
  registryCAs?: Record<string, string>;
  /** Also run kube-scheduler (pods created without a node are placed by it; DRA claims are allocated). */
  scheduler?: boolean;
}): Promise<CriNodeEnv> {
  const dir = await mkdtemp(path.join(tmpdir(), `ko-${o.node}-`));
  const stateDir = path.join(dir, 'state');
  const logRoot = path.join(dir, 'logs');
  const parts: {
    cp?: ControlPlane;
    ctd?: TestContainerd;
    net?: PodNetwork;
    client?: KubeClient;
    op?: Operator;
    nodeApi?: NodeApiServer;
  } = {};
  const stop = async (): Promise<void> => {
    await parts.op?.stop().catch(() => undefined);
    await parts.nodeApi?.close().catch(() => undefined);
    parts.client?.close();
    await Promise.allSettled([parts.cp?.stop(), parts.ctd?.stop()]);
    await parts.net?.stop().catch(() => undefined);
    await removeStateDir(stateDir).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await mkdir(logRoot);
    const clock = new RealClock();
    const logger = o.logger ?? testLogger();
    const cni = o.podNetwork === 'cni';
    const net = cni ? (parts.net = await createPodNetwork()) : undefined;
    const nodeIP = net ? await net.nodeIP(0) : '127.0.0.1';
    const pki = net ? await servingPki(dir, [{ name: o.node, ip: nodeIP }]) : undefined;
    const [cpStart, ctdStart] = await Promise.allSettled([
      startControlPlane({
        ...(o.scheduler ? { scheduler: true } : {}),
        apiserverArgs: [...(pki ? nodeApiApiserverArgs(pki.ca) : []), ...(o.apiserverArgs ?? [])],
      }),
      startContainerd(o.registryCAs ? { registryCAs: o.registryCAs } : {}),
    ]);
    if (cpStart.status === 'fulfilled') parts.cp = cpStart.value;
    if (ctdStart.status === 'fulfilled') parts.ctd = ctdStart.value;
    if (cpStart.status === 'rejected') throw cpStart.reason;
    if (ctdStart.status === 'rejected') throw ctdStart.reason;
    const cp = cpStart.value;
    const ctd = ctdStart.value;
    if (net) await net.attachContainerd(ctd.dir);
    const client = (parts.client = await adminClient(cp, {
      namespace: o.namespace,
      client: { qps: 200, burst: 400 },
    }));
    const registry = new NodeApiRegistry();
    if (pki)
      parts.nodeApi = await listenNodeApi({
        registry,
        client,
        clock,
        logger,
        ip: nodeIP,
        tls: {
          cert: await readFile(pki.cert),
          key: await readFile(pki.key),
          clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
        },
      });
    const startOperator = (): Promise<Operator> =>
      startTestOperator({
        client,
        clock,
        logger,
        nodeApi: registry,
        stateDir,
        ...(o.imageGCPeriodMs !== undefined ? { imageGCPeriodMs: o.imageGCPeriodMs } : {}),
      });
    parts.op = await startOperator();
    await postVirtualNode(client, o.node, {
      ...o.spec,
      internalIP: nodeIP,
      runtime: {
        type: 'cri',
        cri: {
          endpoint: ctd.endpoint,
          cgroupRoot: ctd.cgroupParentPrefix,
          logRoot,
          podNetwork: cni ? 'cni' : 'host',
          ...o.cri,
        },
      },
    });
    await waitNodeReady(client, o.node, 60_000);
    const ns = o.namespace;
    const env: CriNodeEnv = {
      dir,
      stateDir,
      logRoot,
      cp,
      ctd,
      client,
      op: parts.op,
      nodeIP,
      ...(net ? { net } : {}),
      ...(parts.nodeApi ? { nodeApi: parts.nodeApi } : {}),
      createPod: (name, spec, labels = {}) =>
        createPodOn(client, ns, o.node, name, spec, { app: name, ...labels }),
      getPod: (name) => client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods/${name}` }),
      waitPod: (name, pred, what, timeoutMs = 90_000) =>
        waitPodStatus(client, ns, name, pred, what, timeoutMs),
      k: async (args, input) => {
        const r = await kubectl(cp, ['-n', ns, ...args], input);
        if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
        return r.stdout;
      },
      restartOperator: async () => {
        await parts.op?.stop();
        parts.op = undefined;
        env.op = parts.op = await startOperator();
        return env.op;
      },
      stop,
    };
    return env;
  } catch (err) {
    await stop();
    throw err;
  }
}

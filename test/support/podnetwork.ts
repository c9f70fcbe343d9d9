/**
 * A pod network private to one test run (or one `npm run up`): a Linux bridge this run creates, a /16 of
 * private addresses nobody else on the machine routes, and a CNI configuration (Debian's
 * containernetworking-plugins: bridge + host-local + loopback) that a private containerd uses to give each pod
 * sandbox its own network namespace, address and hostname on that bridge.
 *
 * Addresses in the /16 (say 10.244.0.0/16):
 * - `.0.1` is the host's address on the bridge (the pods' gateway);
 * - `.0.10 + i` are node addresses, also on the bridge: VirtualNodes use them as InternalIP, so the API server
 *   dials their node API there. Loopback addresses would not do: kube-apiserver refuses `nodes/<n>/proxy` to
 *   loopback and link-local node addresses ("address not allowed");
 * - `.1.0` to `.255.254` are pod addresses, handed out by host-local.
 *
 * Traffic stays on this machine: the bridge has no uplink, the pods get no default route (only the /16), IP
 * forwarding is not touched and nothing is masqueraded. A pod that tries any other address fails at once with
 * "network unreachable".
 *
 * Nodes of their own (`addNode`): a node can instead live in a network namespace of the run's, as on a
 * machine of its own. Its address is on a veth into the bridge; a containerd started in the namespace
 * (test/support/containerd.ts, `netns`) gives host-network pods the node's network and puts its pods on a
 * bridge `cbr0` inside the namespace, in the /24 the control plane assigns the Node (kube-controller-manager's
 * node IPAM from `clusterCIDR`, the upper half of the /16), written by containerd from `cniConfTemplate` once
 * the kubelet hands the range over (CRI UpdateRuntimeConfig). `routePodCIDR` then routes each node's range
 * via its address, on the host and in every other node, as a cloud's route controller would; each node
 * forwards for its own pods, inside its namespace. kube-proxy, run in each node's namespace by its DaemonSet,
 * keeps its rules there too. The only things in the host's namespace are the bridge, the veths' host ends and
 * the routes via the bridge, which all go with the bridge.
 *
 * Needs root and the `ip` command (iproute2); the CNI plugins are installed with apt-get when missing. A run
 * that dies without `stop()` leaves its bridge and namespaces behind; the next `createPodNetwork()` removes
 * those whose owning process is gone (the owner is recorded in a file under os.tmpdir()).
 */
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canSignal } from './pid.js';

/** Where Debian's containernetworking-plugins puts its binaries. */
const CNI_BIN_DIR = '/usr/lib/cni';
const CNI_PACKAGE = 'containernetworking-plugins';
const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;
/** What the portmap plugin (hostPort) runs. */
const IPTABLES_PACKAGE = 'iptables';
/** The service range of test/support/controlplane.ts: routed into each node's eth0, where kube-proxy takes it. */
const SERVICE_CIDR = '10.0.0.0/24';
/** Network namespace names: `kon-` + the bridge's 6 hex digits + `-` + the node index. */
const NETNS_PREFIX = 'kon-';
const NETWORK_NAME = 'kubelet-operator';
/** Bridge names: `kob-` + 6 hex digits (Linux interface names have at most 15 characters). */
const BRIDGE_PREFIX = 'kob-';
const OWNER_DIR_PREFIX = 'kubelet-operator-podnet-';
/** Second octets tried for the /16, in order, skipping any that a route on this machine already covers. */
const CANDIDATE_OCTETS = Array.from({ length: 56 }, (_, i) => 200 + i);

export interface PodNetwork {
  /** The bridge's interface name. */
  bridge: string;
  /** The whole range, e.g. `10.244.0.0/16`. */
  cidr: string;
  /** The host's own address on the bridge, e.g. `10.244.0.1`. */
  gateway: string;
  /** The range pods get addresses from, e.g. `10.244.0.0/16` limited to `.1.1`-`.255.254`. */
  podRange: { subnet: string; rangeStart: string; rangeEnd: string };
  /** The range node IPAM hands out /24s from (the upper half of `cidr`), e.g. `10.244.128.0/17`. */
  clusterCIDR: string;
  /** The `i`-th node address (0-based), added to the bridge on first use. */
  nodeIP(i: number): Promise<string>;
  /**
   * A network namespace for the `i`-th node (0-based), its address on a veth into the bridge (the same address
   * `nodeIP(i)` would give; use one or the other per index). Routes made so far are in it already.
   */
  addNode(i: number): Promise<NodeNetns>;
  /**
   * Routes a node's pod range via its address: on the host and in every other node's namespace (now and
   * later). Idempotent.
   */
  routePodCIDR(nodeIP: string, podCIDR: string): Promise<void>;
  /**
   * Makes the containerd instance at `containerdDir` (scripts/containerd.sh layout: `cni/bin`, `cni/net.d`)
   * use this network: copies the plugins in and writes the network configuration in place (containerd
   * notices a written file, not one moved in).
   */
  attachContainerd(containerdDir: string): Promise<void>;
  /** Removes the nodes' namespaces, the bridge and the owner record. Idempotent. */
  stop(): Promise<void>;
}

/** A node's own network namespace (PodNetwork.addNode). */
export interface NodeNetns {
  /** The namespace's name (`ip netns`). */
  name: string;
  /** Its path, for nsenter and containerd: `/run/netns/<name>`. */
  path: string;
  /** The node's address: its InternalIP, where host-network pods listen and its node API is dialled. */
  ip: string;
  /**
   * The CNI configuration template for a containerd in this namespace (containerd's conf_template): a bridge
   * `cbr0` with the node's pod range, host-local addresses, a default route for pods (nothing beyond the
   * cluster is routed in the namespace, so it stays on this machine), portmap for hostPorts.
   */
  cniConfTemplate: string;
  /** Copies the CNI plugins into a containerd instance dir (scripts/containerd.sh layout: `cni/bin`). */
  attachContainerd(containerdDir: string): Promise<void>;
  /**
   * A TCP socket listening on `ip:port` inside the namespace, handed to this process (a helper process enters
   * the namespace, listens and passes the socket over its IPC channel): the node API serves it with
   * `ServedNodeApi.adopt`, and sees the node's address as each connection's local address.
   */
  listen(port: number): Promise<net.Server>;
}

/** Runs `argv` in the network namespace at `path` (nsenter: the network namespace alone). */
function inNetns(path: string, argv: readonly string[]): Promise<string> {
  return run('nsenter', [`--net=${path}`, ...argv]).then((r) => {
    if (r.code !== 0)
      throw new Error(
        `nsenter --net=${path} ${argv.join(' ')} failed: ${r.stderr.trim() || r.stdout.trim()}`,
      );
    return r.stdout;
  });
}

const LISTENER_SCRIPT = `
const net = require('node:net');
const server = net.createServer();
server.once('error', (err) => { process.send({ error: String(err) }); process.disconnect(); });
server.listen({ host: process.argv[1], port: Number(process.argv[2]) }, () =>
  process.send({ ok: true }, server, () => { server.close(); process.disconnect(); }));
`;

/** Listens on host:port inside the namespace at `path` and hands the socket to this process. */
export function listenInNetns(path: string, host: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'nsenter',
      [`--net=${path}`, process.execPath, '-e', LISTENER_SCRIPT, host, String(port)],
      {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    let settled = false;
    child.on('message', (m: { ok?: boolean; error?: string }, handle: unknown) => {
      settled = true;
      if (m.ok && handle instanceof net.Server) resolve(handle);
      else
        reject(new Error(`listening on ${host}:${port} in ${path}: ${m.error ?? 'no socket handed over'}`));
    });
    child.on('error', (err) => !settled && reject(err));
    child.on('exit', (code) => {
      if (!settled)
        reject(new Error(`listening on ${host}:${port} in ${path}: helper exited ${code}: ${stderr.trim()}`));
    });
  });
}

function run(
  cmd: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, [...args], { timeout: 600_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const c = (err as { code?: unknown } | null)?.code;
      resolve({
        code: err ? (typeof c === 'number' ? c : 1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      });
    });
  });
}

async function ip(args: readonly string[]): Promise<string> {
  const r = await run('ip', args);
  if (r.code !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

let pluginsReady: Promise<void> | undefined;

/** Installs Debian's CNI plugins once per process when they are missing. */
export function ensureCniPlugins(): Promise<void> {
  pluginsReady ??= (async () => {
    const present = (): boolean =>
      CNI_PLUGINS.every((p) => existsSync(join(CNI_BIN_DIR, p))) && existsSync('/usr/sbin/iptables');
    if (present()) return;
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = (): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        execFile(
          'apt-get',
          [
            // A fresh machine's boot-time updates hold the lock for minutes: wait for it.
            '-o',
            'DPkg::Lock::Timeout=900',
            'install',
            '-y',
            '-q',
            '--no-install-recommends',
            CNI_PACKAGE,
            IPTABLES_PACKAGE,
          ],
          { env, timeout: 900_000, maxBuffer: 64 * 1024 * 1024 },
          (err, stdout, stderr) =>
            resolve({ code: err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) }),
        );
      });
    let r = await install();
    if (r.code !== 0) {
      await run('apt-get', ['update', '-q']);
      r = await install();
    }
    if (r.code !== 0 || !present()) {
      pluginsReady = undefined;
      throw new Error(
        `the pod network needs Debian's ${CNI_PACKAGE} (${CNI_PLUGINS.join(', ')} in ${CNI_BIN_DIR}) and ` +
          `${IPTABLES_PACKAGE} (portmap's), and apt-get install failed: ` +
          r.stderr.trim().split('\n').slice(-5).join(' | '),
      );
    }
  })();
  return pluginsReady;
}

/** What a run records of itself, so that the next run removes what it leaves behind. */
interface OwnerRecord {
  pid: number;
  bridge: string;
  /** The nodes' network namespaces. */
  netns?: string[];
}

/** Removes what runs whose process is gone left behind: bridges, node namespaces, owner records. */
export async function reapOrphanNetworks(): Promise<void> {
  await reapOrphanBridges();
}

/** Removes the bridges (and owner records) of runs whose process is gone. */
async function reapOrphanBridges(): Promise<void> {
  let entries: string[] = [];
  try {
    entries = (await readdir(tmpdir())).filter((e) => e.startsWith(OWNER_DIR_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(tmpdir(), entry);
    try {
      const owner = JSON.parse(await readFile(join(dir, 'owner.json'), 'utf8')) as OwnerRecord;
      if (canSignal(owner.pid)) continue;
      for (const ns of owner.netns ?? []) await run('ip', ['netns', 'del', ns]);
      await run('ip', ['link', 'del', owner.bridge]);
    } catch {
      // An unreadable record: its bridge (if any) is found by name below when no live owner claims it.
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** The second octets of 10.x.0.0/16 that some route or address on this machine already overlaps. */
async function usedOctets(): Promise<Set<number>> {
  const used = new Set<number>();
  const text = (await ip(['-4', 'route', 'show', 'table', 'all'])) + (await ip(['-4', '-o', 'addr', 'show']));
  for (const m of text.matchAll(/\b10\.(\d{1,3})\.\d{1,3}\.\d{1,3}(?:\/(\d{1,2}))?/g)) {
    const prefix = m[2] === undefined ? 32 : Number(m[2]);
    if (prefix < 8) continue;
    if (prefix < 16) {
      // A wider 10.x route covers a block of second octets.
      const size = 2 ** (16 - prefix);
      const start = Math.floor(Number(m[1]) / size) * size;
      for (let o = start; o < start + size; o++) used.add(o);
    } else {
      used.add(Number(m[1]));
    }
  }
  return used;
}

function ownerDir(bridge: string): string {
  return join(tmpdir(), `${OWNER_DIR_PREFIX}${bridge}`);
}

/** Creates the bridge and its /16; see the module comment. Needs root. */
export async function createPodNetwork(): Promise<PodNetwork> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw new Error('the pod network (a bridge and CNI) needs root on Linux');
  }
  await ensureCniPlugins();
  await reapOrphanNetworks();

  const used = await usedOctets();
  const octet = CANDIDATE_OCTETS.find((o) => !used.has(o));
  if (octet === undefined)
    throw new Error('no free 10.x.0.0/16 for the pod network: every candidate is routed');
  const suffix = Math.floor(Math.random() * 0xffffff)
    .toString(16)
    .padStart(6, '0');
  const bridge = `${BRIDGE_PREFIX}${suffix}`;
  const base = `10.${octet}`;
  const cidr = `${base}.0.0/16`;
  const gateway = `${base}.0.1`;

  const owner = ownerDir(bridge);
  await mkdir(owner, { recursive: true });
  const record: OwnerRecord = { pid: process.pid, bridge, netns: [] };
  const saveRecord = (): Promise<void> => writeFile(join(owner, 'owner.json'), JSON.stringify(record));
  await saveRecord();
  const cleanupSync = (): void => {
    // Best effort at exit: the next run's reaper removes what this misses.
    try {
      for (const ns of record.netns ?? []) execFile('ip', ['netns', 'del', ns]);
      execFile('ip', ['link', 'del', bridge]);
    } catch {
      // ignore
    }
  };
  process.on('exit', cleanupSync);

  try {
    await ip(['link', 'add', 'name', bridge, 'type', 'bridge']);
    await ip(['addr', 'add', `${gateway}/16`, 'dev', bridge]);
    await ip(['link', 'set', bridge, 'up']);
  } catch (err) {
    await run('ip', ['link', 'del', bridge]);
    await rm(owner, { recursive: true, force: true });
    process.off('exit', cleanupSync);
    throw err;
  }

  const nodeAddrs = new Map<number, Promise<string>>();
  const nodeSpaces = new Map<number, Promise<NodeNetns>>();
  /** Pod range -> the address of the node that owns it. */
  const podRoutes = new Map<string, string>();
  let stopped: Promise<void> | undefined;
  const podRange = { subnet: cidr, rangeStart: `${base}.1.1`, rangeEnd: `${base}.255.254` };
  const addressOf = (i: number): string => {
    if (!Number.isInteger(i) || i < 0 || i > 200) throw new Error(`node index ${i} out of range 0-200`);
    return `${base}.0.${10 + i}`;
  };
  const routeIn = (nsName: string | undefined, podCIDR: string, via: string): Promise<string> =>
    nsName === undefined
      ? ip(['route', 'replace', podCIDR, 'via', via, 'dev', bridge])
      : ip(['-n', nsName, 'route', 'replace', podCIDR, 'via', via, 'dev', 'eth0']);

  const makeNode = async (i: number): Promise<NodeNetns> => {
    const addr = addressOf(i);
    const name = `${NETNS_PREFIX}${suffix}-${i}`;
    const path = `/run/netns/${name}`;
    const hostEnd = `kov${suffix}${i}`;
    record.netns!.push(name);
    await saveRecord();
    await ip(['netns', 'add', name]);
    await ip(['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name]);
    await ip(['link', 'set', hostEnd, 'master', bridge, 'up']);
    await ip(['-n', name, 'addr', 'add', `${addr}/16`, 'dev', 'eth0']);
    await ip(['-n', name, 'link', 'set', 'lo', 'up']);
    await ip(['-n', name, 'link', 'set', 'eth0', 'up']);
    // The service range goes out eth0, so a connection to a ClusterIP gets as far as kube-proxy's rules in
    // this namespace (a ClusterIP nobody serves is then rejected by them, or answers nothing).
    await ip(['-n', name, 'route', 'add', SERVICE_CIDR, 'dev', 'eth0']);
    // Forwarding for its pods, and bridged pod-to-pod traffic through iptables (kube-proxy's Service rules
    // for two pods on one node): both settings of this namespace alone.
    await inNetns(path, [
      'sysctl',
      '-q',
      '-w',
      'net.ipv4.ip_forward=1',
      'net.bridge.bridge-nf-call-iptables=1',
    ]);
    for (const [podCIDR, via] of podRoutes) if (via !== addr) await routeIn(name, podCIDR, via);
    const ipamDir = join(owner, name, 'ipam');
    const template = {
      cniVersion: '1.0.0',
      name: NETWORK_NAME,
      plugins: [
        {
          type: 'bridge',
          bridge: 'cbr0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: '{{.PodCIDR}}' }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: ipamDir,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    };
    return {
      name,
      path,
      ip: addr,
      cniConfTemplate: JSON.stringify(template, null, 2) + '\n',
      attachContainerd: async (containerdDir) => {
        const binDir = join(containerdDir, 'cni', 'bin');
        await mkdir(binDir, { recursive: true });
        await mkdir(join(containerdDir, 'cni', 'net.d'), { recursive: true });
        for (const p of CNI_PLUGINS) await copyFile(join(CNI_BIN_DIR, p), join(binDir, p));
      },
      listen: (port) => listenInNetns(path, addr, port),
    };
  };

  return {
    bridge,
    cidr,
    gateway,
    podRange,
    clusterCIDR: `${base}.128.0/17`,
    nodeIP: (i) => {
      if (nodeSpaces.has(i)) throw new Error(`node ${i} has a namespace of its own: use its ip`);
      let p = nodeAddrs.get(i);
      if (!p) {
        const addr = addressOf(i);
        p = ip(['addr', 'add', `${addr}/32`, 'dev', bridge]).then(() => addr);
        nodeAddrs.set(i, p);
      }
      return p;
    },
    addNode: (i) => {
      if (nodeAddrs.has(i)) throw new Error(`node ${i} already has an address on the bridge`);
      let p = nodeSpaces.get(i);
      if (!p) {
        p = makeNode(i);
        nodeSpaces.set(i, p);
      }
      return p;
    },
    routePodCIDR: async (via, podCIDR) => {
      if (podRoutes.get(podCIDR) === via) return;
      podRoutes.set(podCIDR, via);
      await routeIn(undefined, podCIDR, via);
      for (const node of await Promise.all(nodeSpaces.values()))
        if (node.ip !== via) await routeIn(node.name, podCIDR, via);
    },
    attachContainerd: async (containerdDir) => {
      const binDir = join(containerdDir, 'cni', 'bin');
      const confDir = join(containerdDir, 'cni', 'net.d');
      await mkdir(binDir, { recursive: true });
      await mkdir(confDir, { recursive: true });
      for (const p of CNI_PLUGINS) await copyFile(join(CNI_BIN_DIR, p), join(binDir, p));
      const conf = {
        cniVersion: '1.0.0',
        name: NETWORK_NAME,
        plugins: [
          {
            type: 'bridge',
            bridge,
            // The host address is ours (set above): the plugin neither claims it nor turns on forwarding.
            isGateway: false,
            ipMasq: false,
            hairpinMode: true,
            ipam: {
              type: 'host-local',
              ranges: [[podRange]],
              dataDir: join(containerdDir, 'cni', 'ipam'),
            },
          },
        ],
      };
      await writeFile(join(confDir, '10-kubelet-operator.conflist'), JSON.stringify(conf, null, 2) + '\n');
    },
    stop: () =>
      (stopped ??= (async () => {
        for (const ns of record.netns ?? []) await run('ip', ['netns', 'del', ns]);
        await run('ip', ['link', 'del', bridge]);
        await rm(owner, { recursive: true, force: true });
        process.off('exit', cleanupSync);
      })()),
  };
}

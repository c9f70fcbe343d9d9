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
 * Needs root and the `ip` command (iproute2); the CNI plugins are installed with apt-get when missing. A run
 * that dies without `stop()` leaves its bridge behind; the next `createPodNetwork()` removes bridges whose
 * owning process is gone (the owner is recorded in a file under os.tmpdir()).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's containernetworking-plugins puts its binaries. */
const CNI_BIN_DIR = '/usr/lib/cni';
const CNI_PACKAGE = 'containernetworking-plugins';
const CNI_PLUGINS = ['bridge', 'host-local', 'loopback'] as const;
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
  /** The `i`-th node address (0-based), added to the bridge on first use. */
  nodeIP(i: number): Promise<string>;
  /**
   * Makes the containerd instance at `containerdDir` (scripts/containerd.sh layout: `cni/bin`, `cni/net.d`)
   * use this network: copies the plugins in and writes the network configuration in place (containerd
   * notices a written file, not one moved in).
   */
  attachContainerd(containerdDir: string): Promise<void>;
  /** Removes the bridge and the owner record. Idempotent. */
  stop(): Promise<void>;
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
    if (CNI_PLUGINS.every((p) => existsSync(join(CNI_BIN_DIR, p)))) return;
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = (): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        execFile(
          'apt-get',
          ['install', '-y', '-q', '--no-install-recommends', CNI_PACKAGE],
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
    if (r.code !== 0 || !CNI_PLUGINS.every((p) => existsSync(join(CNI_BIN_DIR, p)))) {
      pluginsReady = undefined;
      throw new Error(
        `the pod network needs Debian's ${CNI_PACKAGE} (${CNI_PLUGINS.join(', ')} in ${CNI_BIN_DIR}), and ` +
          `apt-get install ${CNI_PACKAGE} failed: ${r.stderr.trim().split('\n').slice(-5).join(' | ')}`,
      );
    }
  })();
  return pluginsReady;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
      const owner = JSON.parse(await readFile(join(dir, 'owner.json'), 'utf8')) as {
        pid: number;
        bridge: string;
      };
      if (alive(owner.pid)) continue;
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
  await reapOrphanBridges();

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
  await writeFile(join(owner, 'owner.json'), JSON.stringify({ pid: process.pid, bridge }));
  const cleanupSync = (): void => {
    // Best effort at exit: the next run's reaper removes what this misses.
    try {
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
  let stopped: Promise<void> | undefined;
  const podRange = { subnet: cidr, rangeStart: `${base}.1.1`, rangeEnd: `${base}.255.254` };
  return {
    bridge,
    cidr,
    gateway,
    podRange,
    nodeIP: (i) => {
      if (!Number.isInteger(i) || i < 0 || i > 200) throw new Error(`node index ${i} out of range 0-200`);
      let p = nodeAddrs.get(i);
      if (!p) {
        const addr = `${base}.0.${10 + i}`;
        p = ip(['addr', 'add', `${addr}/32`, 'dev', bridge]).then(() => addr);
        nodeAddrs.set(i, p);
      }
      return p;
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
        await run('ip', ['link', 'del', bridge]);
        await rm(owner, { recursive: true, force: true });
        process.off('exit', cleanupSync);
      })()),
  };
}

/**
 * The kubelet core is pure: its decisions (phase, conditions, computePodActions, status manager logic,
 * prober state machine, PLEG, back-off, pod workers) import no Kubernetes client, gRPC, file system,
 * network or timers, and no shell module that does. The shell that does I/O inside src/kubelet is named
 * here explicitly; everything else under src/kubelet is core and is checked, including what it imports
 * (type-only imports are allowed: they vanish at run time).
 *
 * The kubelet (and the node API around it) also never asks which runtime it has: what differs between
 * runtimes is declared by each implementation as RuntimeCapabilities (src/runtime/types.ts), so
 * `runtime.kind === 'sim'` checks and duck typing of the simulated runtime's extras are refused here.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const KUBELET = path.join(ROOT, 'src/kubelet');

/** Modules under src/kubelet that do I/O on purpose (the kubelet's shell around the core). */
const SHELL = new Set([
  'kubelet.ts',
  'kubelet_cleanup.ts',
  'kubelet_config.ts',
  'kubelet_runtime.ts',
  'kubelet_shell.ts',
  'kubelet_sync.ts',
  'podmanager.ts',
  'statusclient.ts',
  'prober/runner.ts',
  'prober/http.ts',
  'prober/tcp.ts',
  'prober/grpc.ts',
  'kuberuntime/manager.ts',
  'kuberuntime/killpod.ts',
  'kuberuntime/removepod.ts',
  'kuberuntime/containers.ts',
  'kuberuntime/killcontainer.ts',
  'kuberuntime/sandboxes.ts',
  'kuberuntime/context.ts',
  'kuberuntime/podstatus.ts',
  'kuberuntime/images.ts',
  'kuberuntime/hooks.ts',
  'kuberuntime/gc.ts',
  'kuberuntime/removeleftovers.ts',
  'cm/podcgroup.ts',
  // The CPU manager's sysfs reads and checkpoint file around the pure cpumanager/ and topologymanager/.
  'cm/cpumanager/shell.ts',
  'kuberuntime/syncresult.ts',
  'kuberuntime/resizepod.ts',
  'kubelet_volumes.ts',
  'volume/realfs.ts',
  'volume/mounter.ts',
  'stats/provider.ts',
  'stats/du.ts',
  'podcertificate/keys.ts',
  'podcertificate/manager.ts',
  // The eviction manager's loop: timers, the Summary read and kills around the pure eviction/manager.ts.
  'eviction/shell.ts',
  // The node shutdown manager's groups and waits: timers and kills around the pure nodeshutdown/manager.ts.
  'nodeshutdown/shell.ts',
  // The local gRPC APIs' sockets around the pure apis/podresources/answers.ts and apis/pods/answers.ts.
  'apis/server.ts',
  'apis/pods/podproto.ts',
  // The image GC's loops: listing, removing and Events around the pure images/imagegc.ts.
  'images/imagegc_manager.ts',
  // The pull records' files (KubeletEnsureSecretPulledImages) around the pure images/pullcredentials.ts.
  'images/pullrecords.ts',
  // Running credential provider plugins, and their ServiceAccount reads, around the pure credentialprovider/plugin.ts.
  'credentialprovider/exec.ts',
  // The plugin watcher, its gRPC calls and the CSI and DRA handlers' writes around the pure
  // pluginmanager/reconciler.ts, csinodeinfo.ts and dradrivers.ts.
  'pluginmanager/manager.ts',
  'pluginmanager/csihandler.ts',
  'pluginmanager/drahandler.ts',
  'pluginmanager/node.ts',
  // The CSI volume plugin's gRPC client and API reads around the pure volume/csi.ts and csimounter.ts.
  'volume/csiclient.ts',
  'volume/csihost.ts',
  // The DRA manager's claim reads, plugin calls, checkpoint and CDI spec reads around the pure
  // cm/dra/claiminfo.ts and cm/dra/cdi.ts.
  'cm/dra/manager.ts',
  // The device manager's registration socket, plugin connections and checkpoint file; its decisions are in
  // cm/devicemanager/state.ts.
  'cm/devicemanager/manager.ts',
  'cm/devicemanager/endpoint.ts',
]);

const FORBIDDEN_PACKAGES = [/^node:/, /^@kubernetes\//, /^@grpc\//, /^winston$/, /^p-queue$/];
/** Project modules outside src/kubelet that do I/O. */
const FORBIDDEN_PROJECT = [
  /src\/kube\/(client|informer|events)\.ts$/,
  /src\/runtime\/(cri|sim)\//,
  /src\/server\//,
];

/** Where runtime-kind checks are refused: the kubelet and the node API that serves its pods. */
const CAPABILITY_ROOTS = ['src/kubelet', 'src/server'];

/** Runtime-kind checks allowed in the kubelet, by file (relative to ROOT) and why: none; ask `capabilities`. */
const KNOWN_RUNTIME_KIND_CHECKS = new Map<string, string>();

/** A comparison of something's kind with a runtime kind, either way round, or a `case` on one. */
const KIND_CHECKS = [
  /kind\s*[!=]==?\s*['"`](?:sim|cri)['"`]/i,
  /['"`](?:sim|cri)['"`]\s*[!=]==?\s*[\w.?]*kind\b/i,
  /\bcase\s+['"`](?:sim|cri)['"`]\s*:/,
];
/**
 * The simulated runtime's extras reached for on the runtime object itself (`sim.probePort`,
 * `(rt as Partial<X>).readLogs`, `'readLogs' in rt`) instead of through its typed capabilities.
 */
const DUCK_TYPING = [
  /(?<!capabilities\??)\.(?:probePort|readLogs)\b/,
  /['"`](?:probePort|readLogs)['"`]\s+in\b/,
];

function isRuntimeKindCheck(line: string): boolean {
  return KIND_CHECKS.some((r) => r.test(line)) || DUCK_TYPING.some((r) => r.test(line));
}

/**
 * Source without comments, lines kept where they were (a rough cut that is enough here: no `//` or `/*`
 * inside our string literals).
 */
function code(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ''))
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** `file:line: text` for every runtime-kind check or duck typing in `file`. */
function runtimeKindFindings(file: string): string[] {
  const rel = path.relative(ROOT, file);
  return code(file)
    .split('\n')
    .flatMap((line, i) => (isRuntimeKindCheck(line) ? [`${rel}:${i + 1}: ${line.trim()}`] : []));
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Value (non type-only) import specifiers of a module. */
function valueImports(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*'([^']+)'/gms;
  for (const m of src.matchAll(re)) {
    if (m[2]) continue; // import type / export type
    const names = m[3] ?? '';
    // `import { type A, type B } from` is type-only too.
    const inner = names.match(/^\{([^}]*)\}$/s)?.[1];
    if (inner !== undefined && inner.split(',').every((n) => !n.trim() || n.trim().startsWith('type ')))
      continue;
    out.push(m[4]!);
  }
  for (const m of src.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]!);
  return out;
}

function resolve(from: string, spec: string): string {
  return path.resolve(path.dirname(from), spec.replace(/\.js$/, '.ts'));
}

const core = walk(KUBELET).filter((f) => !SHELL.has(path.relative(KUBELET, f)));

describe('kubelet core purity', () => {
  it('has core modules to check, and every shell module named exists', () => {
    expect(core.length).to.be.greaterThan(40);
    for (const s of SHELL) expect(statSync(path.join(KUBELET, s)).isFile(), s).to.equal(true);
  });

  it('core modules import no client, gRPC, fs, network or I/O module, directly or through src/', () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    const visit = (file: string, via: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const spec of valueImports(file)) {
        if (!spec.startsWith('.')) {
          if (FORBIDDEN_PACKAGES.some((r) => r.test(spec))) problems.push(`${via} imports ${spec}`);
          continue;
        }
        const target = resolve(file, spec);
        const rel = path.relative(ROOT, target);
        if (SHELL.has(path.relative(KUBELET, target))) problems.push(`${via} imports shell module ${rel}`);
        else if (FORBIDDEN_PROJECT.some((r) => r.test(target))) problems.push(`${via} imports ${rel}`);
        else visit(target, `${via} -> ${rel}`);
      }
    };
    for (const f of core) visit(f, path.relative(ROOT, f));
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });

  it('asks runtime capabilities, never the runtime kind, and duck-types no runtime extras', () => {
    const files = CAPABILITY_ROOTS.flatMap((r) => walk(path.join(ROOT, r)));
    expect(files.length).to.be.greaterThan(100);
    const found = files.flatMap(runtimeKindFindings);
    const unexpected = found.filter((f) => !KNOWN_RUNTIME_KIND_CHECKS.has(f.slice(0, f.indexOf(':'))));
    expect(unexpected, unexpected.join('\n')).to.deep.equal([]);
    const stale = [...KNOWN_RUNTIME_KIND_CHECKS.keys()].filter(
      (f) => !found.some((x) => x.startsWith(`${f}:`)),
    );
    expect(stale, `no longer needed in KNOWN_RUNTIME_KIND_CHECKS: ${stale.join(', ')}`).to.deep.equal([]);
  });

  it('the runtime-kind check catches what it is meant to catch', () => {
    const samples = [
      "if (ctx.runtime.kind === 'sim') {",
      "deps.runtime.kind !== 'cri'",
      "'sim' === rt.kind",
      "case 'cri':",
      "deps.runtime.kind === 'sim' && typeof sim.probePort === 'function'",
      "typeof (rt as Partial<LineLogRuntime>).readLogs === 'function'",
      "if ('probePort' in runtime) {",
      'lines = rt.readLogs(id);',
    ];
    for (const s of samples) expect(isRuntimeKindCheck(s), s).to.equal(true);
    for (const s of [
      "if (err.kind === 'NotFound')",
      'const answer = deps.runtime.capabilities.probePort;',
      'runtime.capabilities?.readLogs(id)',
      "runtime: Pick<Runtime, 'execSync'> & { capabilities: Pick<RuntimeCapabilities, 'probePort'> };",
      'capabilities: { ...runtime.capabilities, probePort: portProber },',
      "st.kind === 'dir'",
    ])
      expect(isRuntimeKindCheck(s), s).to.equal(false);
  });

  it('core modules create no timers (time comes from an injected Clock)', () => {
    const offenders = core.filter((f) =>
      /\bset(Timeout|Interval|Immediate)\s*\(/.test(readFileSync(f, 'utf8')),
    );
    expect(offenders.map((f) => path.relative(ROOT, f))).to.deep.equal([]);
  });
});

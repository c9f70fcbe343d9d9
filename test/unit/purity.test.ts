/**
 * The kubelet core is pure: its decisions (phase, conditions, computePodActions, status manager logic,
 * prober state machine, PLEG, back-off, pod workers) import no Kubernetes client, gRPC, file system,
 * network or timers, and no shell module that does. The shell that does I/O inside src/kubelet lives in
 * `shell/` folders (eslint refuses the direct imports); everything else under src/kubelet is core and is
 * checked here through what it imports anywhere in src/ (type-only imports are allowed: they vanish at run
 * time), and for timers.
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

/** Modules under src/kubelet that do I/O on purpose: those in a `shell/` folder (the kubelet's shell around the core). */
function isShell(relToKubelet: string): boolean {
  return relToKubelet.split(path.sep).slice(0, -1).includes('shell');
}

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

const core = walk(KUBELET).filter((f) => !isShell(path.relative(KUBELET, f)));

describe('kubelet core purity', () => {
  it('has core modules to check, and shell modules only in shell/ folders', () => {
    expect(core.length).to.be.greaterThan(40);
    const shell = walk(KUBELET).filter((f) => isShell(path.relative(KUBELET, f)));
    expect(shell.length).to.be.greaterThan(20);
    expect(isShell(path.join('kuberuntime', 'shell', 'manager.ts'))).to.equal(true);
    expect(isShell(path.join('eviction', 'shell.ts'))).to.equal(false);
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
        if (target.startsWith(KUBELET) && isShell(path.relative(KUBELET, target)))
          problems.push(`${via} imports shell module ${rel}`);
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

/**
 * The kubelet core is pure: its decisions (phase, conditions, computePodActions, status manager logic,
 * prober state machine, PLEG, back-off, pod workers) import no Kubernetes client, gRPC, file system,
 * network or timers, and no shell module that does. The shell that does I/O inside src/kubelet is named
 * here explicitly; everything else under src/kubelet is core and is checked, including what it imports
 * (type-only imports are allowed: they vanish at run time).
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
  'kubelet_shell.ts',
  'kubelet_sync.ts',
  'podmanager.ts',
  'statusclient.ts',
  'prober/runners.ts',
  'kuberuntime/manager.ts',
  'kuberuntime/containers.ts',
  'kuberuntime/sandboxes.ts',
  'kuberuntime/context.ts',
  'kuberuntime/podstatus.ts',
  'kuberuntime/images.ts',
  'kuberuntime/hooks.ts',
  'kuberuntime/gc.ts',
  'kuberuntime/syncresult.ts',
  'kubelet_volumes.ts',
  'volume/realfs.ts',
  'volumemanager/mounter.ts',
]);

const FORBIDDEN_PACKAGES = [/^node:/, /^@kubernetes\//, /^@grpc\//, /^winston$/, /^p-queue$/];
/** Project modules outside src/kubelet that do I/O. */
const FORBIDDEN_PROJECT = [
  /src\/kube\/(client|informer|events)\.ts$/,
  /src\/runtime\/(cri|sim)\//,
  /src\/server\//,
];

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

  it('core modules create no timers (time comes from an injected Clock)', () => {
    const offenders = core.filter((f) =>
      /\bset(Timeout|Interval|Immediate)\s*\(/.test(readFileSync(f, 'utf8')),
    );
    expect(offenders.map((f) => path.relative(ROOT, f))).to.deep.equal([]);
  });
});

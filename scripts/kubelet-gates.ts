// Prints the feature gates a kubelet of a given Kubernetes release has on by default and actually reads,
// one per line (tab-separated: gate, stage at that release, the module that defines it, the kubelet's
// packages that read it). The input of docs/kubelet-features.md; rerun it when the pinned release moves.
//
//   npx tsx scripts/kubelet-gates.ts [v1.37.2]
//
// How: a throw-away Go module requiring k8s.io/kubernetes at that release (its staging modules at the
// matching v0.x.y, as scripts/kube-binaries.sh builds it) answers `go list -deps k8s.io/kubernetes/cmd/kubelet`
// for linux: the packages in the kubelet binary and their non-test Go files. Gate specs are read from the
// `VersionedSpecs` maps in those files (kubernetes' pkg/features, which also restates the apiserver's and
// component-base's gates, wins over the others), the default taken from the last spec at or before the
// release. A gate counts as read where a file names it through an import of a package that defines gates
// (`features.X`, `genericfeatures.X`, `logsapi.X`), or calls `Enabled(X)` inside such a package.
// Needs Go; the modules come from the module cache (GOMODCACHE), or the module proxy when missing there.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

interface Spec {
  version: number[];
  default: boolean;
  preRelease: string;
  locked: boolean;
}
interface Pkg {
  importPath: string;
  dir: string;
  files: string[];
}

const KUBE_VERSION = process.argv[2] ?? 'v1.37.2';
const m = /^v1\.(\d+)\.(\d+)$/.exec(KUBE_VERSION);
if (!m) throw new Error(`expected a release like v1.37.2, got ${KUBE_VERSION}`);
const STAGING_VERSION = `v0.${m[1]}.${m[2]}`;
const TARGET = [1, Number(m[1])];
const KUBE = 'k8s.io/kubernetes/';

const go = (args: string[], cwd: string): string =>
  execFileSync('go', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod' },
    maxBuffer: 256 << 20,
  });

function kubeletPackages(): Pkg[] {
  const work = mkdtempSync(path.join(tmpdir(), 'kubelet-gates-'));
  try {
    writeFileSync(path.join(work, 'go.mod'), 'module kubelet-operator.invalid/kubelet-gates\n\ngo 1.26\n');
    const modJson = JSON.parse(
      go(['mod', 'download', '-json', `k8s.io/kubernetes@${KUBE_VERSION}`], work),
    ) as {
      GoMod: string;
    };
    // The staging repos kubernetes replaces with ./staging/src/...: the same code is published at v0.x.y.
    const staging = [
      ...readFileSync(modJson.GoMod, 'utf8').matchAll(/^\s*(k8s\.io\/[\w.-]+) => \.\/staging\//gm),
    ];
    go(
      [
        'mod',
        'edit',
        `-require=k8s.io/kubernetes@${KUBE_VERSION}`,
        ...staging.map(([, mod]) => `-replace=${mod}=${mod}@${STAGING_VERSION}`),
      ],
      work,
    );
    const out = go(
      ['list', '-deps', '-f', '{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles " "}}', `${KUBE}cmd/kubelet`],
      work,
    );
    return out
      .trim()
      .split('\n')
      .map((line) => {
        const [importPath = '', dir = '', files = ''] = line.split('\t');
        return { importPath, dir, files: files ? files.split(' ') : [] };
      });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function parseVersion(s: string): number[] {
  return s.split('.').map(Number);
}
function cmpVersion(a: number[], b: number[]): number {
  return (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0);
}

/** The `Gate: { {Version: ..., Default: ..., PreRelease: ...}, ... }` entries of every VersionedSpecs map in `src`. */
function parseSpecs(src: string): Map<string, Spec[]> {
  const specs = new Map<string, Spec[]>();
  let gate: string | undefined;
  for (const line of src.split('\n')) {
    const key = /^\s*(?:\w+\.)?(\w+): \{\s*$/.exec(line);
    if (key) {
      gate = key[1];
      continue;
    }
    const version = /Version: version\.MustParse\("([\d.]+)"\)/.exec(line);
    if (gate && version) {
      const list = specs.get(gate) ?? [];
      list.push({
        version: parseVersion(version[1] ?? ''),
        default: /\bDefault: true/.test(line),
        preRelease: /PreRelease: (?:featuregate\.)?(\w+)/.exec(line)?.[1] ?? '?',
        locked: /LockToDefault: true/.test(line),
      });
      specs.set(gate, list);
    }
  }
  return specs;
}

const pkgs = kubeletPackages();
const read = (p: Pkg, f: string): string => readFileSync(path.join(p.dir, f), 'utf8');

// Gate definitions: packages holding a VersionedSpecs map (plus client-go's, whose map uses its own types).
const specFiles = new Set<string>();
const gateSpecs = new Map<string, { specs: Spec[]; definedIn: string }>();
const featurePkgs = new Set<string>();
for (const p of pkgs) {
  if (!p.importPath.includes('.')) continue; // the standard library
  for (const f of p.files) {
    const src = read(p, f);
    if (!/\]\s*(featuregate\.)?VersionedSpecs\{/.test(src)) continue;
    specFiles.add(path.join(p.dir, f));
    featurePkgs.add(p.importPath);
    const owner = p.importPath.startsWith(KUBE)
      ? 'kubernetes'
      : p.importPath.split('/').slice(0, 2).join('/');
    for (const [gate, specs] of parseSpecs(src)) {
      const prev = gateSpecs.get(gate);
      // kubernetes' own map restates other modules' gates as the kube binaries register them: it wins.
      if (!prev || p.importPath === `${KUBE}pkg/features`) {
        gateSpecs.set(gate, { specs, definedIn: prev && owner === 'kubernetes' ? prev.definedIn : owner });
      }
    }
  }
}

/** Who reads a gate: the kubelet's own code, API defaulting/validation, or a library the binary links. */
function area(pkg: string): string {
  const rules: [RegExp, string][] = [
    [/^(cmd\/kubelet|pkg\/kubelet|pkg\/volume|pkg\/credentialprovider|pkg\/probe)(\/|$)/, 'kubelet'],
    [/^pkg\/apis?\//, 'api'],
    [/^pkg\/(scheduler|controller)(\/|$)/, 'scheduler/controller'],
    [/^k8s\.io\/(apiserver|client-go|component-base)\//, pkg.split('/')[1] ?? 'other'],
  ];
  return rules.find(([re]) => re.test(pkg))?.[1] ?? 'other';
}
// Reads: `alias.Gate` through an import of a gate-defining package, or `Enabled(Gate)` inside one.
const reads = new Map<string, Set<string>>();
for (const p of pkgs) {
  if (!p.importPath.includes('.')) continue;
  for (const f of p.files) {
    const src = read(p, f);
    const inSpecFile = specFiles.has(path.join(p.dir, f)); // its map keys name gates without reading them
    const aliases: string[] = [];
    for (const [, alias, imp = ''] of src.matchAll(/^\s*(?:import\s+)?(\w+\s+)?"([\w./-]+)"\s*$/gm)) {
      if (featurePkgs.has(imp)) aliases.push(alias ? alias.trim() : imp.split('/').pop()!);
    }
    const names = new Set<string>();
    if (aliases.length > 0 && !inSpecFile) {
      const re = new RegExp(`\\b(?:${aliases.join('|')})\\.(\\w+)\\b`, 'g');
      for (const [, name = ''] of src.matchAll(re)) names.add(name);
    }
    if (featurePkgs.has(p.importPath)) {
      for (const [, name = ''] of src.matchAll(/Enabled\((\w+)\)/g)) names.add(name);
    }
    for (const name of names) {
      if (!gateSpecs.has(name)) continue;
      const set = reads.get(name) ?? new Set<string>();
      set.add(p.importPath.startsWith(KUBE) ? p.importPath.slice(KUBE.length) : p.importPath);
      reads.set(name, set);
    }
  }
}

// Without kubernetes' own gate map the list would be silently short.
if (!pkgs.some((p) => p.importPath === `${KUBE}pkg/features`)) {
  throw new Error('k8s.io/kubernetes/pkg/features is not among the kubelet packages');
}
const rows: string[] = [];
for (const [gate, { specs, definedIn }] of [...gateSpecs].sort(([a], [b]) => a.localeCompare(b))) {
  const at = specs.filter((s) => cmpVersion(s.version, TARGET) <= 0).pop();
  const where = reads.get(gate);
  if (!at?.default || !where) continue;
  const stage = `${at.preRelease}${at.locked ? ' locked' : ''} since ${at.version.join('.')}`;
  const areas = [...new Set([...where].map(area))].sort().join(',');
  rows.push([gate, stage, definedIn, areas, [...where].sort().join(' ')].join('\t'));
}
console.log(`# kubelet ${KUBE_VERSION}: gates on by default and read by the kubelet binary (linux)`);
console.log(['gate', 'stage', 'defined in', 'read by', 'read in (non-test, linux)'].join('\t'));
for (const r of rows) console.log(r);

/**
 * Which upstream e2e specs a run selects, and what became of each (pure: no I/O).
 *
 * A selection is what ginkgo is told (label filter, focus and skip regular expressions) plus the same rule as
 * a predicate over a spec's text and labels, so the report can tell "not selected" apart from "selected but
 * excluded" and "skipped by the spec itself" (ginkgo reports all three as skipped).
 *
 * Exclusions live in one file (excluded.yaml): the full text of a spec, the runtimes it applies to, and the
 * kubelet feature we lack (or the machine's limit) that makes it fail. Excluded specs are not run; they count as
 * skipped and are listed with their reason.
 */

/** Specs that are slow, disruptive or behind a feature gate: never in a preset (the suite's own default skip). */
export const DEFAULT_SKIP = String.raw`\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:|\[Alpha\]|\[Beta\]`;
/** The kubelet's areas of the NodeConformance specs. */
export const NODE_FOCUS = String.raw`\[sig-node\]|\[sig-storage\]|\[sig-network\]`;

export type RuntimeKind = 'cri' | 'sim';

export interface SpecRef {
  /** Container texts and the leaf text, joined by single spaces (ginkgo's full text). */
  text: string;
  labels: readonly string[];
}

export interface Exclusion {
  spec: string;
  reason: string;
  /** The runtimes the exclusion applies to; all when absent. */
  runtimes?: RuntimeKind[];
}

export interface Selection {
  name: string;
  /** ginkgo --label-filter, when any. */
  labelFilter?: string;
  /** ginkgo --focus values (OR). */
  focus: string[];
  /** ginkgo --skip values (OR). */
  skip: string[];
  /** The same rule as a predicate. */
  selects(spec: SpecRef): boolean;
  /** The specs a preset file names: each must be reported by ginkgo, or the run fails naming it. */
  expected?: readonly string[];
}

/**
 * A regular expression matching exactly the spec `text`. ginkgo's full text may start with the (empty) text of
 * an outer container, so the start is a line start or a space rather than `^` alone.
 */
export function exactRegex(text: string): string {
  return `(^|\\s)${text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}$`;
}

function anyMatch(patterns: readonly string[], text: string): boolean {
  return patterns.some((p) => new RegExp(p).test(text));
}

/** Every NodeConformance spec of the kubelet's areas (sig-node, sig-storage, sig-network), non-Slow and the like. */
export function nodeConformance(extraSkip: readonly string[] = []): Selection {
  const skip = [DEFAULT_SKIP, ...extraSkip];
  return {
    name: 'node',
    labelFilter: 'NodeConformance',
    focus: [NODE_FOCUS],
    skip,
    selects: (s) =>
      s.labels.includes('NodeConformance') && anyMatch([NODE_FOCUS], s.text) && !anyMatch(skip, s.text),
  };
}

/** The specs that must not run beside others: the `[Conformance]` preset runs them after the rest, one at a time. */
export const SERIAL = String.raw`\[Serial\]|\[Disruptive\]`;

/**
 * The suite that certifies a Kubernetes cluster: every spec labelled Conformance, whatever its area, in two
 * phases as the certification runs them: the `parallel` ones on several ginkgo processes, then the `serial`
 * ones (`[Serial]`, `[Disruptive]`) in one process.
 */
export function conformance(phase: 'parallel' | 'serial', extraSkip: readonly string[] = []): Selection {
  const inPhase = (text: string): boolean => new RegExp(SERIAL).test(text) === (phase === 'serial');
  return {
    name: `conformance (${phase})`,
    labelFilter: 'Conformance',
    focus: phase === 'serial' ? [SERIAL] : [],
    skip: phase === 'serial' ? [...extraSkip] : [SERIAL, ...extraSkip],
    selects: (s) => s.labels.includes('Conformance') && inPhase(s.text) && !anyMatch(extraSkip, s.text),
  };
}

/** Exactly the listed specs (a preset file), minus `extraSkip`. */
export function listed(name: string, specs: readonly string[], extraSkip: readonly string[] = []): Selection {
  const wanted = new Set(specs);
  return {
    name,
    focus: specs.map(exactRegex),
    skip: [...extraSkip],
    selects: (s) => wanted.has(s.text) && !anyMatch(extraSkip, s.text),
    expected: specs.filter((s) => !anyMatch(extraSkip, s)),
  };
}

/** A user's focus regex, with the default skip. */
export function focused(regex: string, extraSkip: readonly string[] = [], defaultSkip = true): Selection {
  const skip = [...(defaultSkip ? [DEFAULT_SKIP] : []), ...extraSkip];
  return {
    name: `focus ${regex}`,
    focus: [regex],
    skip,
    selects: (s) => new RegExp(regex).test(s.text) && !anyMatch(skip, s.text),
  };
}

/** The exclusions that apply to a run on `runtime`. */
export function exclusionsFor(all: readonly Exclusion[], runtime: RuntimeKind): Exclusion[] {
  return all.filter((e) => !e.runtimes || e.runtimes.includes(runtime));
}

/** Checks the exclusion file's entries: a spec and a reason each, no spec twice per runtime. */
export function validateExclusions(raw: unknown): Exclusion[] {
  if (!Array.isArray(raw)) throw new Error('excluded.yaml: expected a list of {spec, reason, runtimes?}');
  const seen = new Set<string>();
  return raw.map((e: unknown, i) => {
    const o = e as Partial<Exclusion> | null;
    if (!o || typeof o.spec !== 'string' || o.spec.trim() === '')
      throw new Error(`excluded.yaml entry ${i}: spec must be the spec's full text`);
    if (typeof o.reason !== 'string' || o.reason.trim().length < 10)
      throw new Error(
        `excluded.yaml entry ${i} (${o.spec}): reason must say which kubelet feature is missing`,
      );
    const runtimes = o.runtimes;
    if (
      runtimes !== undefined &&
      (!Array.isArray(runtimes) || runtimes.some((r) => r !== 'cri' && r !== 'sim'))
    )
      throw new Error(`excluded.yaml entry ${i} (${o.spec}): runtimes must be a list of cri and sim`);
    for (const r of runtimes ?? ['cri', 'sim']) {
      const key = `${r}\u0000${o.spec}`;
      if (seen.has(key)) throw new Error(`excluded.yaml: ${o.spec} is listed twice for ${r}`);
      seen.add(key);
    }
    return { spec: o.spec, reason: o.reason.trim(), ...(runtimes ? { runtimes } : {}) };
  });
}

export type Outcome = 'passed' | 'failed' | 'skipped' | 'excluded';

export interface SpecResult {
  text: string;
  /** The spec's first container text without its tags, e.g. `[sig-node] Pods`. */
  area: string;
  outcome: Outcome;
  /** The failure's first lines (joined by ` / `), the skip message, or the exclusion's reason. */
  detail: string;
  seconds: number;
}

/** What ginkgo's JSON report says of one spec (the fields read here). */
export interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[] | null;
  ContainerHierarchyLabels?: (string[] | null)[] | null;
  LeafNodeType?: string;
  LeafNodeText?: string;
  LeafNodeLabels?: string[] | null;
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string; ForwardedPanic?: string } | null;
}

export function specRef(r: GinkgoSpecReport): SpecRef {
  const text = [...(r.ContainerHierarchyTexts ?? []), r.LeafNodeText ?? ''].filter((t) => t !== '').join(' ');
  const labels = [...(r.ContainerHierarchyLabels ?? []).flatMap((l) => l ?? []), ...(r.LeafNodeLabels ?? [])];
  return { text, labels };
}

/**
 * The first `count` non-empty lines of `s`, trimmed and joined by ` / `, cut at `max` characters. A skip
 * message or a panic needs its first line; a gomega failure's first line is only `Expected`, with the value
 * and the matcher on the next lines, and CI shows nothing but this table.
 */
function firstLines(s: string | undefined, count: number, max: number): string {
  return (s ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(0, count)
    .join(' / ')
    .slice(0, max);
}

const firstLine = (s: string | undefined): string => firstLines(s, 1, 240);
const failureLines = (s: string | undefined): string => firstLines(s, 8, 600);

/**
 * The selected specs of a ginkgo report, each with its outcome. Suite-level nodes (BeforeSuite and the like)
 * count only when they failed: a failed setup fails the run.
 */
export function classify(
  reports: readonly GinkgoSpecReport[],
  selection: Pick<Selection, 'selects'>,
  exclusions: readonly Exclusion[],
): SpecResult[] {
  const excluded = new Map(exclusions.map((e) => [e.spec, e.reason]));
  const out: SpecResult[] = [];
  for (const r of reports) {
    const ref = specRef(r);
    const area = areaOf(r.ContainerHierarchyTexts?.[0] ?? ref.text);
    const seconds = (r.RunTime ?? 0) / 1e9;
    const state = r.State ?? 'unknown';
    if (r.LeafNodeType !== 'It') {
      if (state !== 'passed' && state !== 'skipped')
        out.push({
          text: `[${r.LeafNodeType ?? 'node'}] ${ref.text}`.trim(),
          area: 'suite',
          outcome: 'failed',
          detail: failureLines(r.Failure?.Message),
          seconds,
        });
      continue;
    }
    if (!selection.selects(ref)) continue;
    const reason = excluded.get(ref.text);
    if (reason !== undefined) {
      out.push({ text: ref.text, area, outcome: 'excluded', detail: reason, seconds: 0 });
    } else if (state === 'passed') {
      out.push({ text: ref.text, area, outcome: 'passed', detail: '', seconds });
    } else if (state === 'skipped' || state === 'pending') {
      out.push({
        text: ref.text,
        area,
        outcome: 'skipped',
        detail: firstLine(r.Failure?.Message) || 'not run',
        seconds,
      });
    } else {
      const detail = failureLines(r.Failure?.Message) || firstLine(r.Failure?.ForwardedPanic) || state;
      out.push({ text: ref.text, area, outcome: 'failed', detail: `${state}: ${detail}`, seconds });
    }
  }
  return out;
}

/**
 * What a run's results lack to count as a run: a failed result for each spec the selection names that ginkgo
 * never reported (renamed or removed upstream, or a typo in a preset file), and one when no spec was selected
 * at all (a focus that matches nothing, or exclusions that cover everything), so a run can never pass on
 * nothing. Pure: the caller appends these to the results.
 */
export function incompleteness(
  results: readonly SpecResult[],
  selection: Pick<Selection, 'expected' | 'name'>,
): SpecResult[] {
  const out: SpecResult[] = [];
  const reported = new Set(results.map((r) => r.text));
  for (const text of selection.expected ?? []) {
    if (reported.has(text)) continue;
    out.push({
      text,
      // Without a report the container texts are unknown: the area is the sig alone.
      area: /^\[sig-[a-z-]+\]/.exec(text)?.[0] ?? 'suite',
      outcome: 'failed',
      detail: `not reported by ginkgo: the ${selection.name} preset names a spec e2e.test does not have (renamed or removed upstream?)`,
      seconds: 0,
    });
  }
  if (out.length === 0 && !results.some((r) => r.outcome !== 'excluded')) {
    out.push({
      text: 'test:upstream selection',
      area: 'suite',
      outcome: 'failed',
      detail: `${selection.name} selected no spec to run: a run that runs nothing does not pass`,
      seconds: 0,
    });
  }
  return out;
}

/** The closing line: `N passed, N failed, N skipped` (excluded specs count as skipped). */
export function summaryLine(results: readonly SpecResult[]): string {
  const n = (o: Outcome): number => results.filter((r) => r.outcome === o).length;
  return `${n('passed')} passed, ${n('failed')} failed, ${n('skipped') + n('excluded')} skipped`;
}

/** A container text without its bracketed tags: `[sig-node] Pods [NodeConformance]` -> `[sig-node] Pods`. */
export function areaOf(containerText: string): string {
  const sig = /^\[(sig-[a-z-]+)\]/.exec(containerText)?.[0] ?? '';
  const rest = containerText
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  return `${sig} ${rest}`.trim();
}

/**
 * Shapes shared by the conformance runner and the per-area interpreters.
 *
 * A case file (see the schema block at the top of kubelet-cases.yaml) holds fixtures and cases. Each area
 * interpreter turns one case's `given` into calls on src/kubelet and compares with `expect`.
 */

export interface FixtureContainer {
  name: string;
  restartPolicy?: string;
  livenessProbe?: boolean;
  startupProbe?: boolean;
  readinessProbe?: boolean;
}

/** A pod fixture: container lists are names or objects with a name. */
export interface FixturePod {
  initContainers?: (string | FixtureContainer)[];
  containers?: (string | FixtureContainer)[];
  ephemeralContainers?: (string | FixtureContainer)[];
  [other: string]: unknown;
}

export interface ConformanceCase {
  id: string;
  area: string;
  subarea?: string;
  upstream_test?: Record<string, unknown>;
  given: Record<string, unknown>;
  expect: Record<string, unknown>;
  note?: string;
  crossChecked?: boolean;
}

export interface CaseFile {
  path: string;
  meta: Record<string, unknown>;
  fixtures: { pods: Record<string, FixturePod> };
  cases: ConformanceCase[];
}

export type Verdict = { pass: true } | { pass: false; reason: string };

/** Evaluates one case. Throws Uninterpretable when the case says something the interpreter cannot read. */
export type AreaInterpreter = (c: ConformanceCase, file: CaseFile) => Verdict | Promise<Verdict>;

/** The case uses a shape or a token the interpreter does not understand: it counts as failed, by name. */
export class Uninterpretable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Uninterpretable';
  }
}

export const pass: Verdict = { pass: true };
export const fail = (reason: string): Verdict => ({ pass: false, reason });

// Golden files for the simulated runtime's behaviour profiles (kwok's habit: policy in data, checked by
// golden files). Each case in sim-profiles/ is a YAML input — a container (image, command, args, env,
// stdin), its annotations and the node's SimProfiles data — and a JSON file with the resolved behaviour:
// what a pull of the image does and how the container starts, runs, logs, exits, answers SIGTERM, exec
// and probes. `UPDATE_GOLDEN=1 npx mocha ... test/unit/runtime/sim-profiles.test.ts` rewrites the JSON
// files from the current code (formatted as `npm run lint` wants them); review the diff before committing.
// The comparison is of the parsed JSON, so formatting never fails a case.
import { expect } from 'chai';
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BehaviourResolver, type Behaviour } from '../../../src/runtime/sim/behaviour.js';
import { parseImageReference } from '../../../src/runtime/sim/images.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { errorMessage } from '../../../src/util/errors.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sim-profiles');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

const CaseSchema = z.strictObject({
  /** What the case shows; not used by the test. */
  description: z.string(),
  container: z.strictObject({
    name: z.string().default('app'),
    image: z.string(),
    command: z.array(z.string()).optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    stdin: z.boolean().optional(),
  }),
  /** Container annotations, as the kubelet layer copies them from the pod. */
  annotations: z.record(z.string(), z.string()).default({}),
  /** The node's SimProfiles data (`{ defaults?, images? }`). */
  profiles: z.unknown().optional(),
});

type Case = z.output<typeof CaseSchema>;

/** JSON has no Infinity: an unbounded window is written as "Infinity", an unset value as null. */
const finite = (n: number): number | string => (Number.isFinite(n) ? n : 'Infinity');

function behaviourJSON(b: Behaviour): Record<string, unknown> {
  return {
    startLatencyMs: b.startLatencyMs,
    createError: b.createError ?? null,
    startError: b.startError ?? null,
    exitAfterMs: b.exitAfterMs ?? null,
    exitCode: b.exitCode,
    oomKilled: b.oomKilled,
    ignoresSigterm: b.ignoresSigterm,
    sigtermExitCode: b.sigtermExitCode,
    exec: b.exec.map((r) => ({
      ...(r.argv ? { argv: r.argv } : {}),
      ...(r.pattern ? { pattern: r.pattern.source } : {}),
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
      delayMs: r.delayMs,
      fromMs: r.fromMs,
      untilMs: finite(r.untilMs),
    })),
    ports: Object.fromEntries(
      [...b.ports].map(([port, p]) => [
        String(port),
        { readyAfterMs: p.readyAfterMs, failAfterMs: finite(p.failAfterMs), fails: p.fails },
      ]),
    ),
    logs: b.logs,
    // Only when declared, so the cases without usage keep their files.
    ...(b.usage && {
      usage: Object.fromEntries(Object.entries(b.usage).map(([resource, curve]) => [resource, curve.spec])),
    }),
  };
}

/** The resolved behaviour of a case, or the error it resolves to, as JSON-ready data. */
function resolve(c: Case): Record<string, unknown> {
  try {
    const resolver = new BehaviourResolver(c.profiles ?? {});
    const image = parseImageReference(c.container.image);
    if (!image) throw new Error(`not an image reference: ${c.container.image}`);
    const sandbox: PodSandboxConfig = {
      metadata: { name: 'pod', uid: 'uid', namespace: 'default', attempt: 0 },
      labels: {},
      annotations: c.annotations,
    };
    const config: ContainerConfig = {
      metadata: { name: c.container.name, attempt: 0 },
      image: c.container.image,
      ...(c.container.command ? { command: c.container.command } : {}),
      ...(c.container.args ? { args: c.container.args } : {}),
      envs: Object.entries(c.container.env ?? {}).map(([key, value]) => ({ key, value })),
      ...(c.container.stdin !== undefined ? { stdin: c.container.stdin } : {}),
      labels: {},
      annotations: c.annotations,
    };
    const pull = resolver.pullProfile(image, sandbox);
    return {
      image: image.ref,
      pull: { latencyMs: pull.pullLatencyMs ?? 0, error: pull.pullError ?? null },
      behaviour: behaviourJSON(resolver.forContainer(config, image)),
    };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

const inputs = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

describe('sim behaviour profiles: golden files', () => {
  it('has cases, and an input for every expected file', () => {
    expect(inputs.length).to.be.at.least(10);
    const orphans = readdirSync(DIR)
      .filter((f) => f.endsWith('.json'))
      .filter((f) => !inputs.includes(f.replace(/\.json$/, '.yaml')));
    expect(orphans, 'expected files without an input').to.deep.equal([]);
  });

  for (const file of inputs) {
    it(file.replace(/\.yaml$/, ''), async () => {
      const input = CaseSchema.parse(parseYaml(readFileSync(path.join(DIR, file), 'utf8')));
      const actual = `${JSON.stringify(resolve(input), null, 2)}\n`;
      const goldenPath = path.join(DIR, file.replace(/\.yaml$/, '.json'));
      if (UPDATE) {
        const options = await prettier.resolveConfig(goldenPath);
        writeFileSync(goldenPath, await prettier.format(actual, { ...options, filepath: goldenPath }));
        return;
      }
      if (!existsSync(goldenPath))
        expect.fail(`${path.basename(goldenPath)} is missing: run with UPDATE_GOLDEN=1 to write it`);
      const expected: unknown = JSON.parse(readFileSync(goldenPath, 'utf8'));
      expect(JSON.parse(actual), `${file} (UPDATE_GOLDEN=1 rewrites it)`).to.deep.equal(expected);
    });
  }
});

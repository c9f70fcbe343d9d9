/**
 * Behaviour profiles: the policy half of the simulated runtime (kwok's rule: mechanism in code, policy in
 * data). A profile says how long a pull or a start takes, whether it fails, how the main process runs and
 * exits, how it answers SIGTERM, exec and probes, and what it logs. Every field is optional; the runtime
 * layers profiles from least to most specific and each layer replaces only the fields it names:
 *
 *   1. derived from the container's command (command.ts: `sleep 5` exits 0 after 5 s, ...)
 *   2. `defaults` of the SimProfiles data, then the entry in `images` for the image
 *      (keys are references in any form: `busybox`, `docker.io/library/busybox:1.36`, or a repository
 *      without a tag, which matches every tag)
 *   3. the container annotation `sim.kubelet-operator.dev/behaviour` (all containers of the pod), then
 *      `sim.kubelet-operator.dev/behaviour.<container name>`; values are YAML or JSON profiles. The kubelet
 *      layer copies these from the pod's annotations.
 *
 * Merging: `ports` merge per port; `exec` rules of the more specific layer come first (first match wins);
 * `usage` merges per resource (an annotation that declares cpu keeps the image's memory), a layer's
 * `memoryUsageBytes` counting as its `usage.memory` when it declares none; every other field, `run`
 * included, is replaced whole. Invalid data is an InvalidArgument error that names the source and the field.
 *
 * `usage` declares what the container uses, as curves of time (curve.ts): cpu in cores, memory and disk (its
 * writable layer) in bytes, each a quantity (`250m`, `1.5`, `64Mi`, a number) or
 * `{ ramp: { from, to, durationSeconds } }`, `{ periodic: { min, max, periodSeconds, shape, phase, duty } }`,
 * `{ expr: "<expression of t, clock, restarts>" }` (expr.ts). README.md next to this file has examples.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { KindError } from '../../util/errors.js';
import { parseQuantityNano, quantityValue } from '../../util/quantity.js';
import { exprProblem } from './expr.js';

export const SimAnnotationPrefix = 'sim.kubelet-operator.dev/';
export const SimBehaviourAnnotation = `${SimAnnotationPrefix}behaviour`;
/** The per-container form: `sim.kubelet-operator.dev/behaviour.<container name>`. */
export const simContainerBehaviourAnnotation = (container: string): string =>
  `${SimBehaviourAnnotation}.${container}`;

const ms = z.number().int().nonnegative();
const exitCode = z.number().int().min(0).max(255);

const ExecRuleSchema = z
  .strictObject({
    /** Matches when the exec command equals this argv exactly. */
    argv: z.array(z.string()).min(1).optional(),
    /** Matches when this regular expression finds a match in the argv joined by single spaces. */
    pattern: z
      .string()
      .refine((p) => compiles(p), 'not a valid regular expression')
      .optional(),
    exitCode: exitCode.optional(),
    stdout: z.string().optional(),
    stderr: z.string().optional(),
    /** How long the command runs; longer than the exec timeout gives DeadlineExceeded. */
    delayMs: ms.optional(),
    /** The rule applies only this long after the container started (and before `untilMs`). */
    fromMs: ms.optional(),
    untilMs: ms.optional(),
  })
  .refine(
    (r) => (r.argv === undefined) !== (r.pattern === undefined),
    'exactly one of argv or pattern is required',
  );

const PortRuleSchema = z.strictObject({
  /** Probes fail until this long after the container started. */
  readyAfterMs: ms.optional(),
  /** Probes fail from this long after the container started (a server that goes bad). */
  failAfterMs: ms.optional(),
  /** Probes always fail (connection refused for tcp, HTTP 500 for http). */
  fails: z.boolean().optional(),
});

const FileWriteSchema = z.strictObject({
  /** An absolute path in the container, under one of its writable volume mounts. */
  path: z.string().startsWith('/'),
  content: z.string(),
  /** Append (`>>`) instead of replacing the file (`>`). */
  append: z.boolean().optional(),
});

const LogLineSchema = z.preprocess(
  (v) => (typeof v === 'string' ? { line: v } : v),
  z.strictObject({
    line: z.string(),
    stream: z.enum(['stdout', 'stderr']).optional(),
    /** Written this long after the container started. */
    afterMs: ms.optional(),
  }),
);

/** A quantity of cores (`250m`, `1.5`, 2) or bytes (`64Mi`, 1048576), as a non-negative number of them. */
const quantity = (unit: 'cores' | 'bytes') =>
  z.unknown().transform((v, ctx) => {
    const example = unit === 'cores' ? '"250m" or 1.5' : '"64Mi" or 1048576';
    if (typeof v !== 'number' && typeof v !== 'string') {
      ctx.addIssue(`expected a quantity such as ${example}`);
      return z.NEVER;
    }
    let n: number;
    try {
      n = unit === 'cores' ? Number(parseQuantityNano(v)) / 1e9 : quantityValue(v);
    } catch {
      ctx.addIssue(`${JSON.stringify(v)} is not a quantity such as ${example}`);
      return z.NEVER;
    }
    if (n < 0) {
      ctx.addIssue('must not be negative');
      return z.NEVER;
    }
    return n;
  });

/** A usage curve (curve.ts); anything but an object is a quantity, `{ constant: <quantity> }`. */
const curve = (unit: 'cores' | 'bytes') =>
  z.preprocess(
    (v) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v : { constant: v }),
    z
      .strictObject({
        constant: quantity(unit).optional(),
        /** Linear from `from` at the start to `to` after `durationSeconds`, then `to`. */
        ramp: z
          .strictObject({
            from: quantity(unit),
            to: quantity(unit),
            durationSeconds: z.number().nonnegative(),
          })
          .optional(),
        periodic: z
          .strictObject({
            min: quantity(unit),
            max: quantity(unit),
            periodSeconds: z.number().positive(),
            shape: z.enum(['sine', 'square', 'triangle', 'sawtooth']).optional(),
            /** Phase 0 at the container's start (default) or at the epoch of the runtime's clock. */
            phase: z.enum(['start', 'clock']).optional(),
            /** Square only: the fraction of the period at `max` (the end of it); default 0.5. */
            duty: z.number().min(0).max(1).optional(),
          })
          .refine((p) => p.min <= p.max, 'min must not exceed max')
          .optional(),
        expr: z
          .string()
          .superRefine((text, ctx) => {
            const problem = exprProblem(text);
            if (problem !== undefined) ctx.addIssue(`invalid expression: ${problem}`);
          })
          .optional(),
      })
      .refine(
        (c) => [c.constant, c.ramp, c.periodic, c.expr].filter((k) => k !== undefined).length === 1,
        'exactly one of a quantity, constant, ramp, periodic or expr is required',
      ),
  );

const UsageSchema = z.strictObject({
  /** Cores; capped by the container's CFS quota. */
  cpu: curve('cores').optional(),
  /** Working set bytes; above the container's memory limit the container is OOM-killed. */
  memory: curve('bytes').optional(),
  /** Bytes in the container's writable layer. */
  disk: curve('bytes').optional(),
});

const RunSchema = z.strictObject({
  /** Absent: the process runs until stopped. */
  exitAfterMs: ms.optional(),
  /** Default 0, or 137 when oomKilled. */
  exitCode: exitCode.optional(),
  oomKilled: z.boolean().optional(),
});

export const SimProfileSchema = z
  .strictObject({
    pullLatencyMs: ms,
    /** Every pull of the image fails with this message (after containerd's prefix). */
    pullError: z.string().min(1),
    /**
     * The image sits in a private registry: a pull without these basic-auth credentials fails as containerd's
     * does on a 401. Read from the node's image profiles only (a pod's annotation cannot grant itself access).
     */
    pullCredentials: z.strictObject({ username: z.string().min(1), password: z.string() }),
    /** CreateContainer fails with this message. */
    createError: z.string().min(1),
    /** StartContainer fails with this message; the container is left exited 128, reason StartError. */
    startError: z.string().min(1),
    startLatencyMs: ms,
    /**
     * In-place resize: UpdateContainerResources returns at once, and ContainerStatus reports the new resources
     * only this long after it (the runtime catching up). Default 0: at once.
     */
    resizeLatencyMs: ms,
    /** UpdateContainerResources fails with this message (nothing changes). */
    resizeError: z.string().min(1),
    /** A constant memory usage of the running container (default 0); the same layer's `usage.memory` wins. */
    memoryUsageBytes: z.number().int().min(0),
    /** What the running container uses over time (module comment). */
    usage: UsageSchema,
    /**
     * The image's USER as its OCI config states it (`1234`, `nonroot`, `1000:1000`); unset = root. Image
     * status reports it as containerd does: a numeric user as uid, a name as username.
     */
    user: z.string(),
    /**
     * The groups the image's /etc/group gives its user: the runtime adds them to the process's groups under
     * the Merge supplemental groups policy (the default), not under Strict. Default none.
     */
    groups: z.array(z.number().int().min(0).max(4294967295)),
    /** The image's ENTRYPOINT and CMD, used as the runtime uses them when the container gives none. */
    entrypoint: z.array(z.string()),
    cmd: z.array(z.string()),
    run: RunSchema,
    /** True: SIGTERM does nothing and stop waits its full timeout, then kills (137). */
    ignoresSigterm: z.boolean(),
    /** Exit code after a SIGTERM that the process honours (default 143). */
    sigtermExitCode: exitCode,
    exec: z.array(ExecRuleSchema),
    ports: z.record(
      z
        .string()
        .refine((k) => /^\d{1,5}$/.test(k) && Number(k) >= 1 && Number(k) <= 65535, 'port must be 1-65535'),
      PortRuleSchema,
    ),
    logs: z.array(LogLineSchema),
    /**
     * Files the container writes when it starts, in order (an init container's env file for a later
     * container's `fileKeyRef`); a path not under a writable mount of the container, or whose directory is
     * missing, is not written.
     */
    files: z.array(FileWriteSchema),
  })
  .partial();

export const SimProfilesSchema = z.strictObject({
  defaults: SimProfileSchema.optional(),
  images: z.record(z.string().min(1), SimProfileSchema).optional(),
});

export type SimProfile = z.output<typeof SimProfileSchema>;
export type SimProfiles = z.output<typeof SimProfilesSchema>;
export type ExecRule = z.output<typeof ExecRuleSchema>;
export type PortRule = z.output<typeof PortRuleSchema>;
export type LogLine = z.output<typeof LogLineSchema>;
export type Usage = z.output<typeof UsageSchema>;
/** A validated curve: quantities already in cores or bytes. */
export type CurveSpec = NonNullable<Usage['cpu']>;

/** Validates profile data (already parsed from YAML/JSON). `source` names it in errors. */
export function parseSimProfiles(data: unknown, source = 'sim profiles'): SimProfiles {
  return check(SimProfilesSchema, data ?? {}, source);
}

/** Validates YAML (or JSON) text holding SimProfiles. */
export function parseSimProfilesYaml(text: string, source = 'sim profiles'): SimProfiles {
  return parseSimProfiles(parseText(text, source), source);
}

export function parseSimProfile(data: unknown, source: string): SimProfile {
  return check(SimProfileSchema, data, source);
}

/** The profile layers a container's annotations add, general first; [] when there are none. */
export function annotationProfiles(annotations: Record<string, string>, containerName: string): SimProfile[] {
  const out: SimProfile[] = [];
  for (const key of [SimBehaviourAnnotation, simContainerBehaviourAnnotation(containerName)]) {
    const text = annotations[key];
    if (text === undefined) continue;
    out.push(parsedAnnotation(`annotation ${key}`, text));
  }
  return out;
}

/**
 * Annotation profiles already parsed, by source and text, failures included: a pod's annotation is read at
 * every pull and container start of every container, and parsing a large YAML document takes milliseconds
 * to seconds; the same text always gives the same profile (returned as is: profiles are never modified).
 */
const parsedAnnotations = new Map<string, SimProfile | KindError>();
const PARSED_ANNOTATIONS_MAX = 512;

function parsedAnnotation(source: string, text: string): SimProfile {
  const key = `${source}\n${text}`;
  let parsed = parsedAnnotations.get(key);
  if (parsed === undefined) {
    try {
      parsed = parseSimProfile(parseText(text, source), source);
    } catch (err) {
      parsed =
        err instanceof KindError
          ? err
          : new KindError('InvalidArgument', `${source}: ${String(err)}`, { source });
    }
    if (parsedAnnotations.size >= PARSED_ANNOTATIONS_MAX) {
      parsedAnnotations.delete(parsedAnnotations.keys().next().value!);
    }
  } else parsedAnnotations.delete(key); // most recently used last
  parsedAnnotations.set(key, parsed);
  if (parsed instanceof KindError) throw parsed;
  return parsed;
}

/** Layers `over` on `base` (see the module comment for the rules). Neither argument is modified. */
export function mergeProfiles(base: SimProfile, over: SimProfile): SimProfile {
  const out: SimProfile = { ...base, ...over };
  if (base.ports && over.ports) out.ports = { ...base.ports, ...over.ports };
  if (base.exec && over.exec) out.exec = [...over.exec, ...base.exec];
  const memory =
    over.usage?.memory ??
    (over.memoryUsageBytes !== undefined ? { constant: over.memoryUsageBytes } : undefined);
  if (base.usage || memory) out.usage = { ...base.usage, ...over.usage, ...(memory && { memory }) };
  return out;
}

function parseText(text: string, source: string): unknown {
  // JSON first when it looks like JSON: the native parser takes microseconds where the YAML parser took a
  // tenth of a second on a deeply nested or long document, all of it holding the event loop.
  if (/^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Flow-style YAML, or not valid at all: the YAML parser decides and words the error.
    }
  }
  try {
    return parseYaml(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new KindError('InvalidArgument', `${source}: not valid YAML or JSON: ${msg}`, { source });
  }
}

function check<S extends z.ZodType>(schema: S, data: unknown, source: string): z.output<S> {
  const r = schema.safeParse(data);
  if (r.success) return r.data;
  const problems = r.error.issues.flatMap((issue) => {
    const at = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => `${[...at, k].join('.')}: unknown field`);
    }
    if (issue.code === 'invalid_key') {
      return [`${at.join('.')}: invalid key: ${issue.issues.map((i) => i.message).join(', ')}`];
    }
    return [`${at.length ? at.join('.') : '(top level)'}: ${issue.message}`];
  });
  throw new KindError('InvalidArgument', `${source}: invalid behaviour profile: ${problems.join('; ')}`, {
    source,
    fields: problems,
  });
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

/**
 * Turns profile data into the resolved behaviour of one container: the layers of profile.ts applied in
 * order, defaults filled in, regular expressions and usage curves compiled. Resolved behaviours are immutable
 * and shared by every container with the same image, argv, environment-dependence and annotations (a small
 * cache), so 100,000 containers of a few kinds cost a few behaviours.
 */
import type { ContainerConfig, PodSandboxConfig } from '../types.js';
import { KindError } from '../../util/errors.js';
import { deriveProfile, type FileView } from './command.js';
import { compileUsage, type UsageCurves } from './curve.js';
import { processUser, type ProcessUser } from './identity.js';
import { parseImageReference, type ImageReference } from './images.js';
import {
  annotationProfiles,
  mergeProfiles,
  parseSimProfiles,
  SimBehaviourAnnotation,
  simContainerBehaviourAnnotation,
  parseSimProfile,
  type SimProfile,
} from './profile.js';

export interface ExecMatcher {
  argv?: readonly string[];
  pattern?: RegExp;
  exitCode: number;
  stdout: string;
  stderr: string;
  delayMs: number;
  fromMs: number;
  untilMs: number;
}

export interface PortBehaviour {
  readyAfterMs: number;
  failAfterMs: number;
  fails: boolean;
}

export interface Behaviour {
  readonly startLatencyMs: number;
  readonly createError: string | undefined;
  readonly startError: string | undefined;
  readonly resizeLatencyMs: number;
  readonly resizeError: string | undefined;
  /** What the running container uses (curve.ts); undefined when the profile declares nothing. */
  readonly usage: UsageCurves | undefined;
  /** undefined: runs until stopped. */
  readonly exitAfterMs: number | undefined;
  readonly exitCode: number;
  readonly oomKilled: boolean;
  readonly ignoresSigterm: boolean;
  readonly sigtermExitCode: number;
  readonly exec: readonly ExecMatcher[];
  readonly ports: ReadonlyMap<number, PortBehaviour>;
  readonly logs: readonly { line: string; stream: 'stdout' | 'stderr'; afterMs: number }[];
  /** What it writes into its mounts as it starts (profile `files`). */
  readonly files: readonly { path: string; content: string; append: boolean }[];
}

const CACHE_LIMIT = 4096;

/** Holds the validated SimProfiles data and resolves behaviours from it. */
export class BehaviourResolver {
  private readonly defaults: SimProfile;
  private readonly byRef = new Map<string, SimProfile>();
  private readonly byRepo = new Map<string, SimProfile>();
  private readonly cache = new Map<string, Behaviour>();

  /** Throws InvalidArgument for invalid profile data or an image key that is not a reference. */
  constructor(data: unknown) {
    const profiles = parseSimProfiles(data);
    this.defaults = profiles.defaults ?? {};
    for (const [key, profile] of Object.entries(profiles.images ?? {})) {
      const r = parseImageReference(key);
      if (!r) {
        throw new KindError('InvalidArgument', `sim profiles: images.${key}: not an image reference`, {
          field: `images.${key}`,
        });
      }
      const untagged = !/[:@][^/]*$/.test(key);
      if (untagged) this.byRepo.set(`${r.host}/${r.repository}`, profile);
      else this.byRef.set(r.ref, profile);
    }
  }

  /** Defaults and the image's own entry: what a pull of the image sees. */
  imageProfile(r: ImageReference): SimProfile {
    const own = this.byRef.get(r.ref) ?? this.byRepo.get(`${r.host}/${r.repository}`);
    return own ? mergeProfiles(this.defaults, own) : this.defaults;
  }

  /** The pull-time profile, including the pod-wide behaviour annotation of the sandbox, if any. */
  pullProfile(r: ImageReference, sandbox: PodSandboxConfig | undefined): SimProfile {
    const base = this.imageProfile(r);
    const text = sandbox?.annotations?.[SimBehaviourAnnotation];
    if (text === undefined) return base;
    return mergeProfiles(base, annotationProfiles({ [SimBehaviourAnnotation]: text }, '')[0]!);
  }

  /** Who a container of `image` created from `config` runs as (identity.ts processUser). */
  processUser(config: ContainerConfig, image: ImageReference): ProcessUser {
    const p = this.imageProfile(image);
    return processUser(config, p.user, p.groups);
  }

  /** Throws InvalidArgument when an annotation holds invalid data. */
  forContainer(config: ContainerConfig, image: ImageReference, files?: FileView): Behaviour {
    const name = config.metadata.name;
    const general = config.annotations?.[SimBehaviourAnnotation];
    const own = config.annotations?.[simContainerBehaviourAnnotation(name)];
    const imageLayer = this.imageProfile(image);
    const argv =
      config.command && config.command.length > 0
        ? [...config.command, ...(config.args ?? [])]
        : [
            ...(imageLayer.entrypoint ?? []),
            ...(config.args && config.args.length > 0 ? config.args : (imageLayer.cmd ?? [])),
          ];
    const env = argv.some((a) => a.includes('$') || /\b(env|printenv)\b/.test(a))
      ? Object.fromEntries((config.envs ?? []).map((e) => [e.key, e.value]))
      : {};
    // A command that prints files, the hostname or who it is depends on more than its words: never cached.
    const readsFiles = files !== undefined && argv.some((a) => /\b(cat|hostname|env|printenv|id)\b/.test(a));
    const key = JSON.stringify([image.ref, argv, env, config.stdin === true, general ?? null, own ?? null]);
    const hit = readsFiles ? undefined : this.cache.get(key);
    if (hit) return hit;

    let profile = mergeProfiles(
      deriveProfile(argv, { env, stdin: config.stdin === true, ...(readsFiles ? { files } : {}) }),
      imageLayer,
    );
    for (const layer of annotationProfiles(config.annotations ?? {}, name))
      profile = mergeProfiles(profile, layer);
    const behaviour = compile(profile);
    if (readsFiles) return behaviour;
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(key, behaviour);
    return behaviour;
  }
}

/** Validates one profile from data and resolves it alone (no command, no image): for tests and tools. */
export function compileProfile(data: unknown, source = 'profile'): Behaviour {
  return compile(parseSimProfile(data, source));
}

function compile(p: SimProfile): Behaviour {
  const oom = p.run?.oomKilled === true;
  return Object.freeze({
    startLatencyMs: p.startLatencyMs ?? 0,
    createError: p.createError,
    startError: p.startError,
    resizeLatencyMs: p.resizeLatencyMs ?? 0,
    resizeError: p.resizeError,
    usage: compileUsage(p),
    exitAfterMs: p.run?.exitAfterMs,
    exitCode: p.run?.exitCode ?? (oom ? 137 : 0),
    oomKilled: oom,
    ignoresSigterm: p.ignoresSigterm ?? false,
    sigtermExitCode: p.sigtermExitCode ?? 143,
    exec: (p.exec ?? []).map((r) => ({
      ...(r.argv !== undefined && { argv: r.argv }),
      ...(r.pattern !== undefined && { pattern: new RegExp(r.pattern) }),
      exitCode: r.exitCode ?? 0,
      stdout: r.stdout ?? '',
      stderr: r.stderr ?? '',
      delayMs: r.delayMs ?? 0,
      fromMs: r.fromMs ?? 0,
      untilMs: r.untilMs ?? Infinity,
    })),
    ports: new Map(
      Object.entries(p.ports ?? {}).map(([port, r]) => [
        Number(port),
        {
          readyAfterMs: r.readyAfterMs ?? 0,
          failAfterMs: r.failAfterMs ?? Infinity,
          fails: r.fails ?? false,
        },
      ]),
    ),
    logs: (p.logs ?? []).map((l) => ({
      line: l.line,
      stream: l.stream ?? 'stdout',
      afterMs: l.afterMs ?? 0,
    })),
    files: (p.files ?? []).map((f) => ({ path: f.path, content: f.content, append: f.append === true })),
  });
}

/** The first exec rule that matches argv `sinceStartMs` after the container started. */
export function matchExec(
  b: Behaviour,
  argv: readonly string[],
  sinceStartMs: number,
): ExecMatcher | undefined {
  if (b.exec.length === 0) return undefined;
  const joined = argv.join(' ');
  return b.exec.find(
    (r) =>
      sinceStartMs >= r.fromMs &&
      sinceStartMs < r.untilMs &&
      (r.argv
        ? r.argv.length === argv.length && r.argv.every((a, i) => a === argv[i])
        : r.pattern!.test(joined)),
  );
}

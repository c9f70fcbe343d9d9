// The node flags the image runs the operator with, read from the Dockerfile's ENTRYPOINT, and whether it
// starts from a compile cache (ENV NODE_COMPILE_CACHE), so the benchmarks measure the process as it ships
// (issue #17 asks for its figures "with the default node flags of the image").
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../test/support/controlplane.js';

/**
 * The flags between `node` and `dist/main.js` in the exec-form ENTRYPOINT of `dockerfile` (its text). Throws
 * when there is no such ENTRYPOINT: a benchmark must not quietly run a process other than the image's.
 */
export function entrypointNodeFlags(dockerfile: string): string[] {
  const lines = dockerfile.split('\n').filter((l) => l.startsWith('ENTRYPOINT '));
  const line = lines.at(-1);
  let argv: unknown;
  try {
    argv = line === undefined ? undefined : JSON.parse(line.slice('ENTRYPOINT '.length));
  } catch {
    argv = undefined;
  }
  if (
    !Array.isArray(argv) ||
    argv[0] !== 'node' ||
    argv.at(-1) !== 'dist/main.js' ||
    !argv.every((a) => typeof a === 'string')
  ) {
    throw new Error(
      `Dockerfile: expected ENTRYPOINT ["node", <flags>..., "dist/main.js"], found ${line ?? 'none'}`,
    );
  }
  return (argv as string[]).slice(1, -1);
}

/** The repository's Dockerfile, as text. */
function repoDockerfile(): string {
  return readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
}

/** The node flags of the repository's image (see entrypointNodeFlags). */
export function imageNodeFlags(): string[] {
  return entrypointNodeFlags(repoDockerfile());
}

/** Whether `dockerfile` (its text) sets NODE_COMPILE_CACHE: the image starts from a compile cache. */
export function setsCompileCache(dockerfile: string): boolean {
  return dockerfile.split('\n').some((l) => /^ENV NODE_COMPILE_CACHE=\S/.test(l));
}

/** Whether the repository's image starts from a compile cache (see setsCompileCache). */
export function imageCompileCache(): boolean {
  return setsCompileCache(repoDockerfile());
}

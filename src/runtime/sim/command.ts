/**
 * Behaviour derived from a container's command, so that the same pod spec behaves alike on the simulated
 * runtime and on containerd with the busybox image. The grammar (argv = command + args, or the image's
 * entrypoint + cmd; a leading directory such as /bin/ is ignored):
 *
 *   (no argv)                     runs until stopped
 *   sleep N[s|m|h|d] ...          exits 0 after the sum; `sleep infinity` runs until stopped
 *   true | :  /  false            exits 0 / 1 at once
 *   echo [-n] [-e] WORDS          writes the words to stdout, exits 0
 *   printf FORMAT [ARGS]          %s/%d substitution and \n \t escapes, exits 0
 *   httpd [-f] [-p [IP:]PORT]     serves PORT (default 80) from then on; with -f it stays in the
 *                                 foreground until stopped, without it the daemon forks and PID 1 exits 0
 *   sh|ash [-opts]c 'SCRIPT'      the script, statement by statement, separated by ; && || & newline:
 *     the forms above, plus `exit [N]`, `exec CMD`, `wait` (for `CMD &` background jobs),
 *     `trap ACTION TERM`, NAME=value prefixes (ignored), redirections (`>&2` writes to stderr; `> FILE`
 *     and `>> FILE` with an absolute path write the output there as the container starts, other targets
 *     discard it), and quick file utilities (touch, rm, test, ...) that succeed at once;
 *     `cat FILE` prints a file the container mounts (a volume, /etc/hosts) and `hostname` the sandbox's
 *     hostname, when the runtime knows them. A loop, `if`, a pipe or a subshell stops the analysis: the script runs until
 *     stopped from there. A syntax error exits 2 with sh's message on stderr.
 *   sh (no -c)                    exits 0 at once (no stdin), or runs until stopped when stdin is open
 *   anything else                 runs until stopped
 *
 * SIGTERM follows the kernel's rule for PID 1 of a PID namespace: a signal whose handler is the default is
 * not delivered, so busybox applets (sleep, sh, httpd, ...) ignore SIGTERM and StopContainer waits its
 * full timeout, then SIGKILLs (137). A script that traps TERM with an action that exits honours it promptly
 * when it waits in `wait` or a loop (exit N from the trap; a bare `exit` gives 143 in `wait`); a trap set
 * before a foreground `sleep` runs only after that sleep, which the simulation treats as ignoring. Commands
 * that are not busybox applets are assumed to be applications that exit on SIGTERM (143).
 *
 * In exec mode (execSync without a matching profile rule) the same grammar runs, except that an unknown
 * command, a loop or a pipe succeeds at once with no output: exec probes such as `cat /tmp/healthy` pass.
 */
import type { SimProfile } from './profile.js';
import { basename, BUSYBOX_PID1, Interpreter, SHELLS, type FileView, type Stream } from './interpreter.js';

export type { FileView } from './interpreter.js';

export interface CommandContext {
  env?: Readonly<Record<string, string>>;
  /** The container keeps stdin open (CRI `stdin`): `sh` and `cat` then wait on it. */
  stdin?: boolean;
  files?: FileView;
}

/** The profile layer implied by a container's argv (see the module comment for the grammar). */
export function deriveProfile(argv: readonly string[], ctx: CommandContext = {}): SimProfile {
  const it = new Interpreter('run', ctx.env ?? {}, ctx.stdin === true, true, ctx.files);
  it.top(argv);
  const profile: SimProfile = {};
  profile.run = it.state === 'forever' ? {} : { exitAfterMs: it.t, exitCode: it.status };
  if (it.out.length > 0) {
    profile.logs = it.out.flatMap((c) =>
      c.text
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => ({ line, stream: c.stream, afterMs: c.atMs })),
    );
  }
  if (it.ports.size > 0) {
    profile.ports = Object.fromEntries(
      [...it.ports].map(([port, at]) => [String(port), { readyAfterMs: at }]),
    );
  }
  if (it.writes.length > 0) {
    profile.files = it.writes.map((w) => ({
      path: w.path,
      content: w.text,
      ...(w.append && { append: true }),
    }));
  }
  Object.assign(profile, sigterm(argv, it));
  return profile;
}

function sigterm(
  argv: readonly string[],
  it: Interpreter,
): Pick<SimProfile, 'ignoresSigterm' | 'sigtermExitCode'> {
  const pid1 = it.execed ?? (argv.length > 0 ? basename(argv[0]!) : '');
  const handles = { ignoresSigterm: false, sigtermExitCode: 143 };
  if (it.execed !== undefined || !SHELLS.has(pid1)) {
    return pid1 === '' || !BUSYBOX_PID1.has(pid1) ? handles : { ignoresSigterm: true };
  }
  const trap = it.trap;
  if (trap?.kind === 'exit' && (it.lastBlock === 'wait' || it.lastBlock === 'loop')) {
    return { ignoresSigterm: false, sigtermExitCode: trap.code ?? (it.lastBlock === 'wait' ? 143 : 0) };
  }
  return { ignoresSigterm: true };
}

export interface ExecOutcome {
  /** How long the command runs; undefined when it never finishes. */
  durationMs: number | undefined;
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** What `execSync(argv)` does by default (see the module comment). */
export function evaluateExec(
  argv: readonly string[],
  env: Readonly<Record<string, string>> = {},
  files: FileView = {},
): ExecOutcome {
  const it = new Interpreter('exec', env, false, false, files);
  it.top(argv);
  const text = (s: Stream): string =>
    it.out
      .filter((c) => c.stream === s)
      .map((c) => c.text)
      .join('');
  return {
    durationMs: it.state === 'forever' ? undefined : it.t,
    exitCode: it.status,
    stdout: text('stdout'),
    stderr: text('stderr'),
  };
}

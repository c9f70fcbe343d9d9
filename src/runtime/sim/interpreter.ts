/**
 * The interpreter behind the command grammar of command.ts: it runs argv, and the shell scripts handed to
 * `sh -c`, statement by statement on a simulated timeline, collecting output, served ports, the SIGTERM trap
 * and how the run ends. Pure; command.ts turns a run into a behaviour profile or an exec outcome.
 */
import { ShellSyntaxError, tokenize, type Token } from './shell.js';

export type Stream = 'stdout' | 'stderr';
type Mode = 'run' | 'exec';
type Block = 'none' | 'foreground' | 'wait' | 'loop';

interface Chunk {
  atMs: number;
  stream: Stream;
  text: string;
}

/** Output a statement sent to a file (`> FILE`, `>> FILE`). */
export interface FileWrite {
  atMs: number;
  path: string;
  text: string;
  append: boolean;
}

export const SHELLS = new Set(['sh', 'ash']);
/** Utilities that finish at once and succeed as far as the simulation can tell. */
const QUICK = new Set([
  ...['[', '[[', 'basename', 'cat', 'chmod', 'chown', 'cp', 'cut', 'date', 'dirname', 'env', 'grep', 'head'],
  ...['hostname', 'id', 'ln', 'ls', 'mkdir', 'mktemp', 'mv', 'nslookup', 'printenv', 'pwd', 'readlink', 'rm'],
  ...['rmdir', 'sed', 'sort', 'stat', 'sync', 'tail', 'test', 'touch', 'tr', 'uname', 'wc', 'wget', 'whoami'],
]);
/** Busybox applets as PID 1: no SIGTERM handler, so SIGTERM is not delivered. */
export const BUSYBOX_PID1 = new Set([
  ...QUICK,
  ...SHELLS,
  ...['sleep', 'true', 'false', 'echo', 'printf', 'httpd', 'nc', 'ping', 'top', 'watch', 'yes', 'syslogd'],
]);
const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'while', 'until', 'for', 'do', 'done', 'case']);
const KEYWORDS2 = new Set(['esac', 'function', '{', '}', '!']);

export const basename = (s: string): string => s.slice(s.lastIndexOf('/') + 1);

/**
 * One run of argv (and the scripts it hands to `sh -c`) on a simulated timeline: `t` advances with sleeps,
 * output is stamped with it, and the run ends exited (with `status`) or running forever.
 */
export class Interpreter {
  t = 0;
  status = 0;
  state: 'running' | 'exited' | 'forever' = 'running';
  lastBlock: Block = 'none';
  readonly out: Chunk[] = [];
  /** In run mode, what the script wrote to absolute file paths, in order. */
  readonly writes: FileWrite[] = [];
  readonly ports = new Map<number, number>();
  /** When the last background job ends; Infinity when one never does. */
  bgEnd = 0;
  /** SIGTERM disposition set by `trap`: undefined = default. */
  trap: { kind: 'ignore' } | { kind: 'exit'; code?: number } | undefined;
  /** Basename of the program that replaced PID 1 through `exec`. */
  execed: string | undefined;

  constructor(
    readonly mode: Mode,
    readonly env: Readonly<Record<string, string>>,
    readonly stdin: boolean,
    readonly pid1: boolean,
    readonly files: FileView = {},
  ) {}

  /** Runs argv as the process itself: `sh -c` interprets the script in this shell, as PID 1. */
  top(argv: readonly string[]): void {
    if (argv.length === 0) this.forever('foreground');
    else this.simple(argv, 'stdout', true);
    if (this.state === 'running') this.state = 'exited';
  }

  script(src: string): void {
    let tokens: Token[];
    try {
      tokens = tokenize(src, this.env);
    } catch (err) {
      if (!(err instanceof ShellSyntaxError)) throw err;
      this.write('stderr', `sh: syntax error: ${err.message}\n`);
      return this.exit(2);
    }
    let words: string[] = [];
    let redirs: Extract<Token, { t: 'redir' }>[] = [];
    let connector: ';' | '&&' | '||' = ';';
    for (let i = 0; i <= tokens.length; i++) {
      const tok = tokens[i];
      if (tok && tok.t === 'word') {
        if (words.length === 0 && (KEYWORDS.has(tok.v) || KEYWORDS2.has(tok.v))) return this.unsupported();
        words.push(tok.v);
        continue;
      }
      if (tok && tok.t === 'redir') {
        redirs.push(tok);
        continue;
      }
      const op = tok?.v ?? ';';
      if (op === '|' || op === '(' || op === ')') return this.unsupported();
      if (words.length === 0 && redirs.length === 0) continue;
      const runIt = connector === '&&' ? this.status === 0 : connector === '||' ? this.status !== 0 : true;
      if (runIt) {
        const stream = outputStream(redirs);
        const file = this.mode === 'run' ? fileTarget(redirs) : undefined;
        if (op === '&') this.background(words, stream);
        else if (file) this.toFile(words, file);
        else this.simple(words, stream, false);
      }
      if (this.state !== 'running') return;
      connector = op === '&&' || op === '||' ? op : ';';
      words = [];
      redirs = [];
    }
  }

  private simple(argv: readonly string[], stream: Stream | null, asProcess: boolean): void {
    let a = argv;
    while (a.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(a[0]!)) a = a.slice(1);
    const name = basename(a[0] ?? '');
    const rest = a.slice(1);
    if (a.length === 0) {
      this.status = 0;
      return;
    }
    switch (name) {
      case 'sh':
      case 'ash':
        return this.shell(rest, stream, asProcess);
      case 'exec':
        if (rest.length === 0) return void (this.status = 0);
        if (this.pid1) this.execed = basename(rest[0]!);
        this.simple(rest, stream, false);
        if (this.state === 'running') this.exit(this.status);
        return;
      case 'sleep':
        return this.sleep(rest);
      case 'true':
      case ':':
        return void (this.status = 0);
      case 'false':
        return void (this.status = 1);
      case 'echo':
        return this.echo(rest, stream);
      case 'env':
      case 'printenv':
        return this.printEnv(name, rest, stream);
      case 'printf':
        return this.printf(rest, stream);
      case 'exit':
        return this.exit(rest[0] !== undefined && /^\d+$/.test(rest[0]) ? Number(rest[0]) : this.status);
      case 'trap':
        return this.setTrap(rest);
      case 'httpd':
        return this.httpd(rest);
      case 'wait':
        this.status = 0;
        if (this.bgEnd === Infinity) return this.forever('wait');
        if (this.bgEnd > this.t) {
          this.t = this.bgEnd;
          this.lastBlock = 'wait';
        }
        return;
      case 'cat':
        if (rest.length === 0 && this.mode === 'run' && this.stdin) return this.forever('foreground');
        return this.cat(rest, stream);
      case 'hostname':
        if (this.files.hostname !== undefined && rest.length === 0) {
          if (stream) this.write(stream, `${this.files.hostname}\n`);
          return void (this.status = 0);
        }
        return void (this.status = 0);
      case 'id':
        return this.id(rest, stream);
      case 'tail':
        if (rest.some((r) => /^-[a-zA-Z]*[fF]/.test(r)) && this.mode === 'run')
          return this.forever('foreground');
        return void (this.status = 0);
      default:
        if (QUICK.has(name)) return void (this.status = 0);
        if (this.mode === 'exec') return void (this.status = 0);
        return this.forever('foreground');
    }
  }

  /**
   * `env` / `printenv` without arguments: the process environment (the image's PATH and HOME, the sandbox's
   * HOSTNAME, then the container's variables); `printenv NAME...` the values. `env CMD` is not simulated.
   */
  private printEnv(name: string, args: readonly string[], stream: Stream | null): void {
    this.status = 0;
    const vars: Record<string, string> = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ...(this.files.hostname ? { HOSTNAME: this.files.hostname } : {}),
      HOME: '/root',
      ...this.env,
    };
    if (args.length === 0) {
      if (stream)
        this.write(
          stream,
          Object.entries(vars)
            .map(([k, v]) => `${k}=${v}\n`)
            .join(''),
        );
      return;
    }
    if (name === 'env') return; // env with a command or options: runs it, which the simulation does not
    for (const a of args) {
      const v = vars[a];
      if (v === undefined) this.status = 1;
      else if (stream) this.write(stream, `${v}\n`);
    }
  }

  /**
   * `id` as busybox prints it with no /etc/passwd or /etc/group to name anyone: `id` the whole identity,
   * `id -u`, `id -g` and `id -G` one part. Without a known identity it succeeds quietly (unknown).
   */
  private id(args: readonly string[], stream: Stream | null): void {
    this.status = 0;
    const u = this.files.user;
    if (!u || !stream) return;
    const flags = args.filter((a) => a.startsWith('-')).join('');
    const groups = u.groups.length > 0 ? u.groups : [u.gid];
    if (flags.includes('G')) this.write(stream, `${groups.join(' ')}\n`);
    else if (flags.includes('g')) this.write(stream, `${u.gid}\n`);
    else if (flags.includes('u')) this.write(stream, `${u.uid}\n`);
    else this.write(stream, `uid=${u.uid} gid=${u.gid} groups=${groups.join(',')}\n`);
  }

  /** `cat FILE...`: the contents of files the container has mounted; other paths succeed quietly (unknown). */
  private cat(args: readonly string[], stream: Stream | null): void {
    this.status = 0;
    for (const path of args) {
      if (path.startsWith('-')) continue;
      const content = this.files.readFile?.(path);
      if (content === null) {
        this.write('stderr', `cat: can't open '${path}': No such file or directory\n`);
        this.status = 1;
      } else if (content !== undefined && stream) {
        this.write(stream, content);
      }
    }
  }

  private shell(args: readonly string[], stream: Stream | null, asProcess: boolean): void {
    let i = 0;
    let hasC = false;
    while (i < args.length && args[i]!.startsWith('-') && args[i] !== '-' && args[i] !== '--') {
      if (args[i]!.includes('c')) hasC = true;
      i++;
    }
    if (args[i] === '--') i++;
    const operand = args[i];
    if (!hasC) {
      if (operand !== undefined)
        return this.mode === 'exec' ? void (this.status = 0) : this.forever('foreground');
      if (this.mode === 'run' && this.stdin) return this.forever('foreground');
      return void (this.status = 0);
    }
    if (operand === undefined) {
      this.write('stderr', 'sh: -c requires an argument\n');
      return void (this.status = 2);
    }
    if (asProcess) return this.script(operand);
    const child = new Interpreter(this.mode, this.env, false, false, this.files);
    child.t = this.t;
    child.script(operand);
    this.adopt(child, stream);
    this.t = child.t;
    if (child.state === 'forever') return this.forever(child.lastBlock);
    this.status = child.status;
  }

  /** A statement whose standard output goes to a file: what it prints there becomes a write (stderr stays). */
  private toFile(argv: readonly string[], file: { path: string; append: boolean }): void {
    const atMs = this.t;
    const mark = this.out.length;
    this.simple(argv, 'stdout', false);
    const produced = this.out.splice(mark);
    this.out.push(...produced.filter((c) => c.stream === 'stderr'));
    const text = produced
      .filter((c) => c.stream === 'stdout')
      .map((c) => c.text)
      .join('');
    // After what the command itself wrote to files (a nested `sh -c`), as the redirection's file is written last.
    this.writes.push({ atMs, path: file.path, text, append: file.append });
  }

  private background(argv: readonly string[], stream: Stream | null): void {
    const child = new Interpreter(this.mode, this.env, false, false, this.files);
    child.t = this.t;
    child.simple(argv, stream, false);
    this.adopt(child, stream);
    this.bgEnd = Math.max(this.bgEnd, child.state === 'forever' ? Infinity : child.t);
    this.status = 0;
  }

  private adopt(child: Interpreter, stream: Stream | null): void {
    if (stream !== null) this.out.push(...child.out);
    this.writes.push(...child.writes);
    for (const [port, at] of child.ports) if (!this.ports.has(port)) this.ports.set(port, at);
  }

  private sleep(args: readonly string[]): void {
    let total = 0;
    for (const a of args) {
      const m = /^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$/.exec(a);
      if (/^inf(inity)?$/i.test(a)) return this.forever('foreground');
      if (!m) {
        this.write('stderr', `sleep: invalid number '${a}'\n`);
        return void (this.status = 1);
      }
      total += Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
    }
    if (args.length === 0) {
      this.write('stderr', 'sleep: missing operand\n');
      return void (this.status = 1);
    }
    this.t += Math.round(total * 1000);
    this.lastBlock = 'foreground';
    this.status = 0;
  }

  private echo(args: readonly string[], stream: Stream | null): void {
    let newline = true;
    let escapes = false;
    let i = 0;
    for (; i < args.length && /^-[neE]+$/.test(args[i]!); i++) {
      if (args[i]!.includes('n')) newline = false;
      if (args[i]!.includes('e')) escapes = true;
    }
    const text = args.slice(i).join(' ');
    if (stream) this.write(stream, (escapes ? unescape(text) : text) + (newline ? '\n' : ''));
    this.status = 0;
  }

  private printf(args: readonly string[], stream: Stream | null): void {
    const [format = '', ...values] = args;
    let k = 0;
    const text = unescape(format).replace(/%([%sd])/g, (_m, f: string) =>
      f === '%' ? '%' : (values[k++] ?? ''),
    );
    if (stream) this.write(stream, text);
    this.status = 0;
  }

  private httpd(args: readonly string[]): void {
    let port = 80;
    let foreground = false;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (/^-[a-zA-Z]*f/.test(a) && !a.startsWith('-p')) foreground = true;
      const p = a === '-p' ? args[++i] : a.startsWith('-p') ? a.slice(2) : undefined;
      if (p !== undefined) port = Number(p.slice(p.lastIndexOf(':') + 1)) || port;
    }
    if (!this.ports.has(port)) this.ports.set(port, this.t);
    if (foreground && this.mode === 'run') return this.forever('foreground');
    this.status = 0;
  }

  private setTrap(args: readonly string[]): void {
    this.status = 0;
    if (args.length < 2) return;
    const [action, ...signals] = args;
    if (!signals.some((s) => /^(sig)?term$|^15$/i.test(s))) return;
    if (action === '-') this.trap = undefined;
    else if (action === '') this.trap = { kind: 'ignore' };
    else {
      const m = /(?:^|[\s;&|])exit(?:\s+(\d+))?(?:$|[\s;&|])/.exec(action!);
      this.trap = m
        ? { kind: 'exit', ...(m[1] !== undefined && { code: Number(m[1]) & 255 }) }
        : { kind: 'ignore' };
    }
  }

  private unsupported(): void {
    if (this.mode === 'exec') return this.exit(0);
    this.forever('loop');
  }

  private forever(block: Block): void {
    this.state = 'forever';
    this.lastBlock = block;
  }

  exit(code: number): void {
    this.state = 'exited';
    this.status = code & 255;
  }

  private write(stream: Stream, text: string): void {
    if (text !== '') this.out.push({ atMs: this.t, stream, text });
  }
}

function outputStream(redirs: readonly Extract<Token, { t: 'redir' }>[]): Stream | null {
  let stream: Stream | null = 'stdout';
  for (const r of redirs) {
    if (r.fd !== 1 || r.op === '<') continue;
    stream = r.target === '&2' ? 'stderr' : r.target === '&1' ? 'stdout' : null;
  }
  return stream;
}

/** Where a statement's standard output goes when that is a file: the last `>`/`>>` of fd 1 to an absolute path. */
function fileTarget(
  redirs: readonly Extract<Token, { t: 'redir' }>[],
): { path: string; append: boolean } | undefined {
  let target: { path: string; append: boolean } | undefined;
  for (const r of redirs) {
    if (r.fd !== 1 || r.op === '<') continue;
    target =
      r.target.startsWith('/') && r.target !== '/dev/null'
        ? { path: r.target, append: r.op === '>>' }
        : undefined;
  }
  return target;
}

function unescape(s: string): string {
  return s.replace(/\\([ntr\\])/g, (_m, c: string) => ({ n: '\n', t: '\t', r: '\r', '\\': '\\' })[c] ?? c);
}

/** What a simulated container can see of its files. */
export interface FileView {
  /**
   * A file's content by its path in the container: a string, `null` when the path is under one of the
   * container's mounts but does not exist, undefined when the simulation cannot tell (an image file).
   */
  readFile?: (path: string) => string | null | undefined;
  /** What `hostname` prints. */
  hostname?: string;
  /** Who the process runs as, for `id`: uid, primary gid, and every group (the gid first). */
  user?: { uid: number; gid: number; groups: readonly number[] };
}

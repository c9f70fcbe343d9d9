/**
 * Usage expressions of behaviour profiles (`usage.cpu: { expr: "0.2 + 0.1 * sin(t / 60)" }`): a tiny
 * arithmetic language of time and restart count, parsed by recursive descent and compiled to closures, never
 * evaluated with `eval`. Compiled once per distinct text (a bounded cache), so 10,000 containers sharing a
 * profile share one function.
 *
 * Grammar (lowest precedence first; `^` binds tighter than unary minus and is right-associative, so
 * `-2^2` is -4 and `2^3^2` is 512):
 *
 *   sum     = product { ("+" | "-") product }
 *   product = unary { ("*" | "/" | "%") unary }
 *   unary   = ("-" | "+") unary | power
 *   power   = primary [ "^" unary ]
 *   primary = number | name | name "(" sum { "," sum } ")" | "(" sum ")"
 *
 * Numbers may carry a Kubernetes quantity suffix: `250m` is 0.25, `64Mi` is 67108864, `2k` is 2000.
 * Names: `t` (seconds since the container started), `clock` (seconds since the epoch on the runtime's
 * clock), `restarts` (the container's restart count), `pi`, `e`. Functions: min, max (one or more
 * arguments), abs, floor, ceil, round, sqrt, sin, cos, exp, log (natural), clamp(x, lo, hi), and step(x)
 * (0 for x < 0, else 1). `%` is the remainder with the sign of the dividend (as in JavaScript).
 */

/** t = seconds since start, clock = seconds since the epoch, restarts = restart count. */
export type ExprFn = (t: number, clock: number, restarts: number) => number;

/** An expression that does not parse; `column` is 1-based. */
export class ExprError extends Error {
  constructor(
    message: string,
    readonly column: number,
  ) {
    super(`at column ${column}: ${message}`);
    this.name = 'ExprError';
  }
}

const MAX_LENGTH = 2000;
const MAX_DEPTH = 64;
const CACHE_LIMIT = 1024;
const cache = new Map<string, ExprFn>();

/** The compiled expression (cached by text). Throws ExprError. */
export function compileExpr(text: string): ExprFn {
  const hit = cache.get(text);
  if (hit) return hit;
  if (text.length > MAX_LENGTH) throw new ExprError(`longer than ${MAX_LENGTH} characters`, 1);
  const fn = new Parser(text).parse();
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(text, fn);
  return fn;
}

/** Why `text` does not compile, or undefined when it does. */
export function exprProblem(text: string): string | undefined {
  try {
    compileExpr(text);
    return undefined;
  } catch (err) {
    return err instanceof ExprError ? err.message : String(err);
  }
}

const SUFFIX: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};
const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const QUANTITY_SUFFIX = /(?:[KMGTPE]i|[numkMGTPE])(?![A-Za-z0-9_])/y;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

type Node = ExprFn & { constant?: number };

const constant = (v: number): Node => Object.assign(() => v, { constant: v });

const VARIABLES: Record<string, Node> = {
  t: (t) => t,
  clock: (_t, c) => c,
  restarts: (_t, _c, r) => r,
  pi: constant(Math.PI),
  e: constant(Math.E),
};

interface Fn {
  readonly arity: readonly [number, number];
  /** Over every argument (variadic functions and constant folding). */
  readonly apply: (args: number[]) => number;
  /** The one-argument form, called without an array. */
  readonly one?: (x: number) => number;
}
const unary = (one: (x: number) => number): Fn => ({ arity: [1, 1], apply: (a) => one(a[0]!), one });
const FUNCTIONS: Record<string, Fn> = {
  min: { arity: [1, Infinity], apply: (a) => Math.min(...a) },
  max: { arity: [1, Infinity], apply: (a) => Math.max(...a) },
  abs: unary(Math.abs),
  floor: unary(Math.floor),
  ceil: unary(Math.ceil),
  round: unary(Math.round),
  sqrt: unary(Math.sqrt),
  sin: unary(Math.sin),
  cos: unary(Math.cos),
  exp: unary(Math.exp),
  log: unary(Math.log),
  step: unary((x) => (x < 0 ? 0 : 1)),
  clamp: { arity: [3, 3], apply: ([x, lo, hi]) => Math.min(Math.max(x!, lo!), hi!) },
};

const BINARY: Record<string, (a: number, b: number) => number> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  '/': (a, b) => a / b,
  '%': (a, b) => a % b,
  '^': (a, b) => a ** b,
};

function binary(op: string, l: Node, r: Node): Node {
  const f = BINARY[op]!;
  if (l.constant !== undefined && r.constant !== undefined) return constant(f(l.constant, r.constant));
  return (t, c, n) => f(l(t, c, n), r(t, c, n));
}

function call(fn: Fn, args: Node[]): Node {
  if (args.every((a) => a.constant !== undefined)) return constant(fn.apply(args.map((a) => a.constant!)));
  const one = fn.one;
  if (one && args.length === 1) {
    const [a] = args as [Node];
    return (t, c, n) => one(a(t, c, n));
  }
  return (t, c, n) => fn.apply(args.map((a) => a(t, c, n)));
}

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly text: string) {}

  parse(): ExprFn {
    this.skip();
    if (this.pos >= this.text.length) throw this.error('empty expression');
    const node = this.sum();
    if (this.pos < this.text.length) throw this.error(`unexpected ${this.describe()}`);
    return node;
  }

  private sum(): Node {
    let node = this.product();
    for (let op = this.peek(); op === '+' || op === '-'; op = this.peek()) {
      this.advance();
      node = binary(op, node, this.product());
    }
    return node;
  }

  private product(): Node {
    let node = this.unary();
    for (let op = this.peek(); op === '*' || op === '/' || op === '%'; op = this.peek()) {
      this.advance();
      node = binary(op, node, this.unary());
    }
    return node;
  }

  private unary(): Node {
    const op = this.peek();
    if (op !== '-' && op !== '+') return this.power();
    this.advance();
    const operand = this.nested(() => this.unary());
    if (op === '+') return operand;
    if (operand.constant !== undefined) return constant(-operand.constant);
    return (t, c, n) => -operand(t, c, n);
  }

  private power(): Node {
    const base = this.primary();
    if (this.peek() !== '^') return base;
    this.advance();
    return binary(
      '^',
      base,
      this.nested(() => this.unary()),
    );
  }

  private primary(): Node {
    const ch = this.peek();
    if (ch === '(') {
      this.advance();
      const inner = this.nested(() => this.sum());
      this.expect(')');
      return inner;
    }
    const number = this.match(NUMBER);
    if (number !== undefined) {
      const suffix = this.match(QUANTITY_SUFFIX);
      this.skip();
      if (this.peekName()) throw this.error(`unexpected ${this.describe()} after a number`);
      return constant(Number(number) * (suffix === undefined ? 1 : SUFFIX[suffix]!));
    }
    const start = this.pos;
    const name = this.match(NAME);
    if (name === undefined) throw this.error(`expected a number, a name or "(", found ${this.describe()}`);
    this.skip();
    if (this.peek() !== '(') {
      const v = Object.hasOwn(VARIABLES, name) ? VARIABLES[name] : undefined;
      if (!v) throw this.error(`unknown name "${name}" (variables are t, clock, restarts)`, start);
      return v;
    }
    const fn = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (!fn) throw this.error(`unknown function "${name}"`, start);
    this.advance();
    const args = [this.nested(() => this.sum())];
    while (this.peek() === ',') {
      this.advance();
      args.push(this.nested(() => this.sum()));
    }
    this.expect(')');
    const [lo, hi] = fn.arity;
    if (args.length < lo || args.length > hi) {
      const want = lo === hi ? `${lo}` : `at least ${lo}`;
      throw this.error(`${name}() takes ${want} argument${lo === 1 ? '' : 's'}`, start);
    }
    return call(fn, args);
  }

  private nested(f: () => Node): Node {
    if (++this.depth > MAX_DEPTH) throw this.error(`nested deeper than ${MAX_DEPTH}`);
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private match(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    const m = re.exec(this.text);
    if (!m) return undefined;
    this.pos += m[0].length;
    return m[0];
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private peekName(): boolean {
    return /[A-Za-z_.]/.test(this.text[this.pos] ?? '');
  }

  private advance(): void {
    this.pos++;
    this.skip();
  }

  private skip(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private expect(ch: string): void {
    if (this.peek() !== ch) throw this.error(`expected "${ch}", found ${this.describe()}`);
    this.advance();
  }

  private describe(): string {
    return this.pos >= this.text.length ? 'end of expression' : `"${this.text[this.pos]}"`;
  }

  private error(message: string, at = this.pos): ExprError {
    return new ExprError(message, at + 1);
  }
}

/**
 * Structured logs (JSON lines) through winston. Every line carries the fields of its context (node, pod,
 * container), so a line explains itself without its neighbours. `child()` adds fields.
 */
import winston from 'winston';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface Logger {
  error(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
  info(msg: string, meta?: Record<string, unknown>): void;
  debug(msg: string, meta?: Record<string, unknown>): void;
  child(meta: Record<string, unknown>): Logger;
}

class WinstonLogger implements Logger {
  constructor(private readonly w: winston.Logger) {}
  error(msg: string, meta?: Record<string, unknown>): void {
    this.w.error(msg, meta);
  }
  warn(msg: string, meta?: Record<string, unknown>): void {
    this.w.warn(msg, meta);
  }
  info(msg: string, meta?: Record<string, unknown>): void {
    this.w.info(msg, meta);
  }
  debug(msg: string, meta?: Record<string, unknown>): void {
    this.w.debug(msg, meta);
  }
  child(meta: Record<string, unknown>): Logger {
    return new WinstonLogger(this.w.child(meta));
  }
}

/** JSON lines on stderr (stdout stays free for command output), or appended to `file` when given. */
export function createLogger(
  level: LogLevel = 'info',
  base: Record<string, unknown> = {},
  file?: string,
): Logger {
  const w = winston.createLogger({
    level,
    defaultMeta: base,
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    transports: [
      file
        ? new winston.transports.File({ filename: file })
        : new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] }),
    ],
  });
  return new WinstonLogger(w);
}

/** A logger that drops everything (tests that assert on other things). */
export const silentLogger: Logger = {
  error() {},
  warn() {},
  info() {},
  debug() {},
  child() {
    return silentLogger;
  },
};

/** Collects lines in memory, for tests that assert on logging. */
export class MemoryLogger implements Logger {
  readonly lines: { level: LogLevel; msg: string; meta: Record<string, unknown> }[] = [];
  constructor(
    private readonly base: Record<string, unknown> = {},
    private readonly sink?: MemoryLogger['lines'],
  ) {}
  private push(level: LogLevel, msg: string, meta?: Record<string, unknown>): void {
    (this.sink ?? this.lines).push({ level, msg, meta: { ...this.base, ...meta } });
  }
  error(msg: string, meta?: Record<string, unknown>): void {
    this.push('error', msg, meta);
  }
  warn(msg: string, meta?: Record<string, unknown>): void {
    this.push('warn', msg, meta);
  }
  info(msg: string, meta?: Record<string, unknown>): void {
    this.push('info', msg, meta);
  }
  debug(msg: string, meta?: Record<string, unknown>): void {
    this.push('debug', msg, meta);
  }
  child(meta: Record<string, unknown>): Logger {
    return new MemoryLogger({ ...this.base, ...meta }, this.sink ?? this.lines);
  }
}

/**
 * ExecSync in a simulated container: what the command does comes from the container's profile (an exec
 * rule matching the command and the time since start) or, failing that, from the command grammar run against
 * the container's environment and files (command.ts). Time passes on the runtime's clock: a command slower
 * than its timeout fails DeadlineExceeded after the timeout, and one that never ends dies with PID 1 (137).
 */
import { KindError } from '../../util/errors.js';
import type { ExecSyncResult } from '../types.js';
import { matchExec } from './behaviour.js';
import { evaluateExec, type FileView } from './command.js';
import { criState, execTimedOut, notRunning } from './errors.js';
import type { Processes } from './process.js';
import type { ContainerRecord } from './records.js';

export interface ExecContext {
  processes: Processes;
  /** clock.now() in ms. */
  nowMs: number;
  /** What the container sees of its files and hostname. */
  files: FileView;
}

export async function execInContainer(
  c: ContainerRecord,
  cmd: string[],
  timeoutSeconds: number,
  ctx: ExecContext,
): Promise<ExecSyncResult> {
  if (c.state !== 'running') throw notRunning(c.id, criState(c.state));
  if (!Array.isArray(cmd) || cmd.length === 0)
    throw new KindError('InvalidArgument', 'exec command must not be empty');
  const rule = matchExec(c.behaviour, cmd, ctx.nowMs - c.startedMs);
  const outcome = rule
    ? { durationMs: rule.delayMs, exitCode: rule.exitCode, stdout: rule.stdout, stderr: rule.stderr }
    : evaluateExec(cmd, c.spec.env, ctx.files);
  const limitMs = timeoutSeconds > 0 ? timeoutSeconds * 1000 : Infinity;
  const duration = outcome.durationMs ?? Infinity;
  if (duration > limitMs) {
    await ctx.processes.delay(limitMs);
    throw execTimedOut(c.id, timeoutSeconds, cmd);
  }
  if (duration === Infinity) {
    // Runs until the container's PID 1 dies, which takes the exec'd process with it.
    await ctx.processes.waitForExit(c);
    return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 137 };
  }
  if (duration > 0) await ctx.processes.delay(duration);
  return {
    stdout: Buffer.from(outcome.stdout),
    stderr: Buffer.from(outcome.stderr),
    exitCode: outcome.exitCode,
  };
}

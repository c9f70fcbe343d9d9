/**
 * The exec prober (kubelet: pkg/probe/exec): the command runs in the container through the runtime's
 * ExecSync. Exit 0 is success; another exit is a failure whose output is the command's (stdout then
 * stderr, cut to 10 KiB); running out of time is a failure, not an error.
 */
import type { Runtime } from '../../runtime/types.js';
import { isDeadlineExceeded } from '../../util/errors.js';
import { truncateOutput, type ProbeExecution } from './probe.js';

/** Rejects when the command could not be run at all (unknown container, runtime down). */
export async function execProbe(
  runtime: Pick<Runtime, 'execSync'>,
  runtimeContainerId: string,
  command: readonly string[],
  timeoutSeconds: number,
): Promise<ProbeExecution> {
  try {
    const r = await runtime.execSync(runtimeContainerId, [...command], timeoutSeconds);
    const output = truncateOutput(r.stdout.toString() + r.stderr.toString());
    return { result: r.exitCode === 0 ? 'success' : 'failure', output };
  } catch (err) {
    // The CRI client turns DeadlineExceeded into a timeout error; the exec prober reports it as a failure.
    if (isDeadlineExceeded(err))
      return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    throw err;
  }
}

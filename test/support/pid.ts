/** Whether a process with this pid exists and takes our signals (signal 0 probes without delivering anything). */
export function canSignal(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether this process runs in a user namespace (KubeletInUserNamespace: Node `nodeInfo.runningInUserNamespace`),
 * found as the kubelet finds it (moby/sys/userns RunningInUserNS): the first line of /proc/self/uid_map is
 * `0 0 4294967295` in the initial user namespace and anything else inside one; an empty file is a namespace
 * whose maps are not written yet; no file (a kernel without user namespaces) or an unreadable line is no user
 * namespace.
 */
import { readFileSync } from 'node:fs';

/** The decision on the file's first line (pure). */
export function uidMapInUserNamespace(firstLine: string): boolean {
  if (firstLine === '') return true;
  const m = /^\s*(\d+)\s+(\d+)\s+(\d+)/.exec(firstLine);
  if (!m) return false;
  return !(m[1] === '0' && m[2] === '0' && m[3] === '4294967295');
}

let cached: boolean | undefined;

/** Read once per process, as the kubelet's sync.OnceValue does. */
export function runningInUserNamespace(): boolean {
  if (cached !== undefined) return cached;
  let text: string;
  try {
    text = readFileSync('/proc/self/uid_map', 'utf8');
  } catch {
    return (cached = false);
  }
  return (cached = uidMapInUserNamespace(text.split('\n')[0] ?? ''));
}

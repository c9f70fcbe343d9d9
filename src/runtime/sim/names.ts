/**
 * Sandbox and container names as containerd reserves them: `<pod>_<namespace>_<uid>_<attempt>` and
 * `<container>_<pod>_<namespace>_<uid>_<attempt>`, one record per name. Kubernetes names and UIDs never
 * contain '_', so such a key splits back into its fields, UID included: the store finds the holder of an
 * ordinary key among the records of that UID and keeps a table only of the odd keys (names with '_').
 */
import type { ContainerRecord } from './records.js';

/** A sandbox's name key; `attempt` as the record keeps it (the config's, 0 when absent). */
export function sandboxNameKey(md: {
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
}): string {
  return `${md.name}_${md.namespace}_${md.uid}_${md.attempt}`;
}

/** The name key of container `name` (attempt `attempt`) in a sandbox with metadata `md`. */
export function containerKey(
  name: string,
  attempt: number,
  md: { name: string; namespace: string; uid: string },
): string {
  return `${name}_${md.name}_${md.namespace}_${md.uid}_${attempt}`;
}

export function containerNameKey(c: ContainerRecord): string {
  return containerKey(c.spec.metadata.name, c.spec.metadata.attempt, c.sandbox);
}

/** A key that does not split into its fields: one of them has a '_'. */
export function isOddName(key: string, container: boolean): boolean {
  return key.split('_').length !== (container ? 5 : 4);
}

/** The UID in an ordinary key, and whether it is a container's (five fields) or a sandbox's (four). */
export function parseNameKey(key: string): { uid: string; container: boolean } | undefined {
  const parts = key.split('_');
  if (parts.length === 4) return { uid: parts[2]!, container: false };
  if (parts.length === 5) return { uid: parts[3]!, container: true };
  return undefined;
}

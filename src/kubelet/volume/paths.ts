/**
 * POSIX path arithmetic for the volume code, without node:path: the volume core (atomic writer, ownership,
 * the in-memory file system) must stay importable from the pure kubelet core. Semantics are Go's `path`
 * package, which is what the kubelet's volume plugins use.
 */

/** Go's path.Clean: the shortest lexically equivalent path ("" -> "."). */
export function cleanPath(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const body = out.join('/');
  if (rooted) return `/${body}`;
  return body === '' ? '.' : body;
}

/** Go's path.Join: the non-empty parts joined with "/" and cleaned; "" when every part is empty. */
export function joinPath(...parts: string[]): string {
  const nonEmpty = parts.filter((p) => p !== '');
  return nonEmpty.length === 0 ? '' : cleanPath(nonEmpty.join('/'));
}

export function isAbsolutePath(p: string): boolean {
  return p.startsWith('/');
}

/** Everything but the last element of a cleaned path ("/a/b" -> "/a", "a" -> ".", "/" -> "/"). */
export function dirName(p: string): string {
  const c = cleanPath(p);
  const i = c.lastIndexOf('/');
  if (i < 0) return '.';
  return i === 0 ? '/' : c.slice(0, i);
}

/** The last element of a cleaned path ("/a/b" -> "b", "/" -> "/"). */
export function baseName(p: string): string {
  const c = cleanPath(p);
  if (c === '/') return '/';
  return c.slice(c.lastIndexOf('/') + 1);
}

/** A relative path and each of its ancestors: "a/b/c" -> ["a/b/c", "a/b", "a"]. */
export function selfAndAncestors(rel: string): string[] {
  const out: string[] = [];
  for (let p = rel; p !== '' && p !== '.';) {
    out.push(p);
    const i = p.lastIndexOf('/');
    p = i < 0 ? '' : p.slice(0, i);
  }
  return out;
}

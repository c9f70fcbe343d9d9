/**
 * `/logs/`: the node's log directory, as the kubelet serves /var/log (NodeLogQuery, with
 * `enableSystemLogQuery` off, its default): Go's http.FileServer under the prefix `/logs/`. A directory is
 * listed as Go lists one (sorted names, `/` after a directory, as HTML), a file is sent whole, the query is
 * not read (`?query=` lists the directory, as the kubelet's plain file server answers), only GET is allowed.
 * A VirtualNode's log directory is `<stateDir>/nodes/<node>/logs` (src/app/podenvironment.ts nodeLogDir), beside
 * its pod directories.
 *
 * Differences from Go's file server: no Range or If-Modified-Since (the whole file, always 200); a name that
 * resolves outside the directory (a symbolic link out of it) is 404 where http.Dir would follow it; a
 * directory that does not exist yet is listed empty (a kubelet's /var/log always exists).
 *
 * Contract: the decisions (what the path means, which answer, the listing's HTML, the content type) are
 * pure; serveNodeLogs does the file system reads.
 */
import { createReadStream } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';

export const NODE_LOGS_PREFIX = '/logs/';

/** What a `/logs/...` request path names, before the file system is asked. */
export type NodeLogPath =
  /** `urlPath` is what Go's FileServer sees (leading `/`, decoded); `name` the cleaned relative name. */
  { kind: 'path'; urlPath: string; name: string } | { kind: 'error'; status: number; text: string };

/**
 * The request path (as sent, percent-encoded) under `/logs/`, as http.StripPrefix and FileServer read it:
 * decoded, then cleaned from `/` (a `..` never climbs above the directory).
 */
export function parseNodeLogPath(rawPath: string): NodeLogPath {
  if (!rawPath.startsWith(NODE_LOGS_PREFIX))
    return { kind: 'error', status: 404, text: '404 page not found' };
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath.slice(NODE_LOGS_PREFIX.length));
  } catch {
    return { kind: 'error', status: 400, text: 'invalid URL escape' };
  }
  const urlPath = `/${decoded}`;
  if (urlPath.includes('\0')) return { kind: 'error', status: 404, text: '404 page not found' };
  const name = path.posix.normalize(urlPath).replace(/^\/+/, '').replace(/\/+$/, '');
  return { kind: 'path', urlPath, name };
}

/** What the file system holds at a name (and, for a directory, whether it has an index.html file). */
export type NodeLogEntry =
  { type: 'dir'; hasIndex: boolean } | { type: 'file' } | { type: 'missing' } | { type: 'forbidden' };

export type NodeLogAnswer =
  | { kind: 'redirect'; location: string }
  | { kind: 'list' }
  | { kind: 'file'; index: boolean }
  | { kind: 'error'; status: number; text: string };

/** Go's FileServer's answer for `urlPath` (query appended to redirects) given what is there. */
export function nodeLogAnswer(urlPath: string, rawQuery: string, entry: NodeLogEntry): NodeLogAnswer {
  const q = rawQuery ? `?${rawQuery}` : '';
  if (urlPath.endsWith('/index.html')) return { kind: 'redirect', location: `./${q}` };
  switch (entry.type) {
    case 'missing':
      return { kind: 'error', status: 404, text: '404 page not found' };
    case 'forbidden':
      return { kind: 'error', status: 403, text: '403 Forbidden' };
    case 'dir':
      if (!urlPath.endsWith('/'))
        return { kind: 'redirect', location: `${path.posix.basename(urlPath)}/${q}` };
      return entry.hasIndex ? { kind: 'file', index: true } : { kind: 'list' };
    case 'file': {
      if (!urlPath.endsWith('/')) return { kind: 'file', index: false };
      const base = path.posix.basename(urlPath);
      if (base === '' || base === '.') {
        return { kind: 'error', status: 500, text: 'http: attempting to traverse a non-directory' };
      }
      return { kind: 'redirect', location: `../${base}${q}` };
    }
    default:
      return entry satisfies never;
  }
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&#34;',
  "'": '&#39;',
};

/** A path as Go's url.URL{Path: name}.String() writes it: `?`, `#`, `%` and the like escaped, `/` kept. */
function urlPathString(name: string): string {
  const escaped = encodeURI(name).replace(
    /[?#!*'()]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`,
  );
  // A first segment with a colon would read as a scheme: Go puts "./" before it.
  const first = escaped.split('/')[0] ?? '';
  return first.includes(':') ? `./${escaped}` : escaped;
}

/** Go's directory listing: the entries sorted by name, a directory's with `/`. */
export function dirListingHtml(entries: readonly { name: string; dir: boolean }[]): string {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let out = '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n';
  for (const e of sorted) {
    const name = e.dir ? `${e.name}/` : e.name;
    out += `<a href="${urlPathString(name)}">${name.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!)}</a>\n`;
  }
  return `${out}</pre>\n`;
}

const BY_EXTENSION: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  // Debian's /etc/mime.types, which Go reads: a node's *.log files.
  '.log': 'text/x-log; charset=utf-8',
  '.json': 'application/json',
  '.gz': 'application/gzip',
  '.xml': 'text/xml; charset=utf-8',
};

/**
 * The Content-Type Go would send: by extension for the common ones, else sniffed from the first bytes: text
 * (no control bytes but tab, newline, form feed, carriage return and escape) is `text/plain; charset=utf-8`.
 */
export function nodeLogContentType(name: string, head: Buffer): string {
  const byExt = BY_EXTENSION[path.posix.extname(name).toLowerCase()];
  if (byExt) return byExt;
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'application/x-gzip';
  for (const b of head) {
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) {
      return 'application/octet-stream';
    }
  }
  return 'text/plain; charset=utf-8';
}

// ------------------------------------------------------------------------------------------------- I/O

function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null ? (err as { code?: string }).code : undefined;
}

/** The real path of `name` under `root`, or what keeps it from being served. */
async function resolveUnder(root: string, name: string): Promise<string | NodeLogEntry> {
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch {
    return { type: 'missing' };
  }
  try {
    const real = await realpath(path.join(realRoot, name));
    if (real !== realRoot && !real.startsWith(`${realRoot}/`)) return { type: 'missing' };
    return real;
  } catch (err) {
    return errnoOf(err) === 'EACCES' ? { type: 'forbidden' } : { type: 'missing' };
  }
}

async function entryAt(file: string): Promise<NodeLogEntry> {
  try {
    const st = await stat(file);
    if (!st.isDirectory()) return { type: 'file' };
    const index = await stat(path.join(file, 'index.html')).catch(() => undefined);
    return { type: 'dir', hasIndex: index?.isFile() === true };
  } catch (err) {
    return errnoOf(err) === 'EACCES' ? { type: 'forbidden' } : { type: 'missing' };
  }
}

function replyText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    ...headers,
  });
  res.end(`${text}\n`);
}

/** Serves `/logs/...` of the node whose log directory is `root` (an already admitted request). */
export async function serveNodeLogs(
  req: IncomingMessage,
  res: ServerResponse,
  rawPath: string,
  rawQuery: string,
  root: string,
): Promise<void> {
  if (req.method !== 'GET') return replyText(res, 405, 'Method Not Allowed', { Allow: 'GET' });
  const p = parseNodeLogPath(rawPath);
  if (p.kind === 'error') return replyText(res, p.status, p.text);
  const resolved = await resolveUnder(root, p.name);
  // The directory itself, not made yet: listed empty.
  if (typeof resolved !== 'string' && resolved.type === 'missing' && p.name === '') {
    const answer = nodeLogAnswer(p.urlPath, rawQuery, { type: 'dir', hasIndex: false });
    if (answer.kind === 'redirect') {
      res.writeHead(301, { Location: answer.location });
      return void res.end();
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    return void res.end(dirListingHtml([]));
  }
  const entry = typeof resolved === 'string' ? await entryAt(resolved) : resolved;
  const answer = nodeLogAnswer(p.urlPath, rawQuery, entry);
  switch (answer.kind) {
    case 'error':
      return replyText(res, answer.status, answer.text);
    case 'redirect':
      res.writeHead(301, { Location: answer.location });
      return void res.end();
    case 'list': {
      const dir = resolved as string;
      let names: { name: string; dir: boolean }[];
      try {
        const list = await readdir(dir, { withFileTypes: true });
        names = list.map((d) => ({ name: d.name, dir: d.isDirectory() }));
      } catch {
        return replyText(res, 500, 'Error reading directory');
      }
      const st = await stat(dir).catch(() => undefined);
      res.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        ...(st ? { 'Last-Modified': new Date(st.mtimeMs).toUTCString() } : {}),
      });
      return void res.end(dirListingHtml(names));
    }
    case 'file': {
      const file = answer.index ? path.join(resolved as string, 'index.html') : (resolved as string);
      let size: number;
      let mtimeMs: number;
      let head: Buffer;
      try {
        const fh = await open(file, 'r');
        try {
          const st = await fh.stat();
          size = st.size;
          mtimeMs = st.mtimeMs;
          const buf = Buffer.alloc(Math.min(512, size));
          const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
          head = buf.subarray(0, bytesRead);
        } finally {
          await fh.close();
        }
      } catch (err) {
        return errnoOf(err) === 'EACCES'
          ? replyText(res, 403, '403 Forbidden')
          : replyText(res, 404, '404 page not found');
      }
      res.writeHead(200, {
        'Content-Type': nodeLogContentType(path.basename(file), head),
        'Content-Length': String(size),
        'Last-Modified': new Date(mtimeMs).toUTCString(),
      });
      if (size === 0) return void res.end();
      await new Promise<void>((resolve) => {
        const s = createReadStream(file, { start: 0, end: size - 1 });
        s.on('error', () => {
          res.destroy();
          resolve();
        });
        s.on('end', () => resolve());
        res.on('close', () => {
          s.destroy();
          resolve();
        });
        s.pipe(res);
      });
      return;
    }
    default:
      return answer satisfies never;
  }
}

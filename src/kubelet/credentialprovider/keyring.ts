/**
 * The kubelet's credential keyring (pkg/credentialprovider): registry credentials from a pod's
 * imagePullSecrets (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg) and from credential provider
 * plugins, matched to an image by registry host globs and path prefixes, most specific key first. Pure: the
 * secrets come in as objects, nothing is read here.
 */
/** sha256 in hex, given by the caller (node:crypto in the shell): the keyring stays free of Node modules. */
export type Sha256Hex = (text: string) => string;

/** What goes to the runtime with a pull (CRI AuthConfig). */
export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  email?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

/** Where credentials came from: a pod's Secret or, through a plugin, its ServiceAccount (none: the node's). */
export interface CredentialSource {
  secret?: { uid: string; namespace: string; name: string };
  serviceAccount?: { uid: string; namespace: string; name: string };
}

/** kubelet TrackedAuthConfig: credentials, their hash and their source (for KubeletEnsureSecretPulledImages). */
export interface TrackedAuthConfig {
  auth: AuthConfig;
  /** sha256 of the credentials as the kubelet serializes them. */
  hash: string;
  source?: CredentialSource;
}

/** One registry entry of a docker config: the key is a registry host with an optional path. */
export interface DockerConfigEntry {
  username: string;
  password: string;
  email: string;
}
export type DockerConfig = Map<string, DockerConfigEntry>;

/** The base64(user:password) `auth` field, padded or not; throws the kubelet's error otherwise. */
export function decodeDockerConfigFieldAuth(field: string): { username: string; password: string } {
  // Go decodes strictly: padded text as padded base64, the rest as unpadded.
  const padded = field.trim().endsWith('=');
  const ok = padded
    ? /^[A-Za-z0-9+/]*={1,2}$/.test(field) && field.length % 4 === 0
    : /^[A-Za-z0-9+/]*$/.test(field) && field.length % 4 !== 1;
  if (!ok) throw new Error('illegal base64 data in the auth field');
  const decoded = Buffer.from(field, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0)
    throw new Error('unable to parse auth field, must be formatted as base64(username:password)');
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function entriesOf(raw: unknown): DockerConfig {
  if (raw === null || raw === undefined) return new Map();
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new Error('registry entries must be a JSON object');
  const out: DockerConfig = new Map();
  for (const [key, v] of Object.entries(raw as Record<string, unknown>)) {
    if (v === null) continue;
    if (typeof v !== 'object' || Array.isArray(v))
      throw new Error(`registry entry ${JSON.stringify(key)} must be an object`);
    const o = v as Record<string, unknown>;
    let username = str(o.username);
    let password = str(o.password);
    const auth = str(o.auth);
    if (auth !== '') ({ username, password } = decodeDockerConfigFieldAuth(auth));
    out.set(key, { username, password, email: str(o.email) });
  }
  return out;
}

/** A `.dockerconfigjson` value: `{"auths": {<registry>: {...}}}`. */
export function parseDockerConfigJSON(text: string): DockerConfig {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('a docker config must be a JSON object');
  return entriesOf((parsed as Record<string, unknown>).auths);
}

/** A `.dockercfg` value: `{<registry>: {...}}`. */
export function parseDockercfg(text: string): DockerConfig {
  return entriesOf(JSON.parse(text));
}

/** Go's json.Marshal string escaping of <, > and &, so hashes equal the kubelet's. */
function goJSONString(s: string): string {
  return JSON.stringify(s).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** The JSON the kubelet's hashAuthConfig hashes: the credentials' fields in order, empty ones left out. */
export function authConfigJSON(a: AuthConfig): string {
  const fields: [string, string | undefined][] = [
    ['username', a.username],
    ['password', a.password],
    ['auth', a.auth],
    ['email', a.email],
    ['serveraddress', a.serverAddress],
    ['identitytoken', a.identityToken],
    ['registrytoken', a.registryToken],
  ];
  const body = fields
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `"${k}":${goJSONString(v!)}`)
    .join(',');
  return `{${body}}`;
}

/** A schemeless `host[:port][/path]` split into host labels, port and path. */
function splitSchemeless(s: string): { labels: string[]; port: string; path: string } | undefined {
  // Go's url.Parse takes a leading `[` as an IPv6 literal and fails on what follows; globs never are one.
  if (s.startsWith('[') || /[\s#?]/.test(s)) return undefined;
  const slash = s.indexOf('/');
  const hostPort = slash < 0 ? s : s.slice(0, slash);
  const path = slash < 0 ? '' : s.slice(slash);
  let host = hostPort;
  let port = '';
  const m = /^(.*):(\d*)$/.exec(hostPort);
  if (m) {
    host = m[1]!;
    port = m[2]!;
  }
  return { labels: host.split('.'), port, path };
}

/** Go's filepath.Match on one label (no separators in labels): `*`, `?`, `[...]`, `\` escapes. */
export function globMatch(pattern: string, name: string): boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) return false; // a bad pattern matches nothing, as the kubelet treats its error
      let cls = pattern.slice(i + 1, end);
      if (cls.startsWith('^')) cls = `^${cls.slice(1)}`;
      re += `[${cls.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else if (c === '\\' && i + 1 < pattern.length) {
      re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    } else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  try {
    return new RegExp(`${re}$`).test(name);
  } catch {
    return false;
  }
}

/**
 * The kubelet's URLsMatchStr: same port, same number of host labels each matching its glob, and the
 * target's path starting with the glob's.
 */
export function urlsMatch(glob: string, target: string): boolean {
  const g = splitSchemeless(glob);
  const t = splitSchemeless(target);
  if (!g || !t) return false;
  if (g.port !== t.port || g.labels.length !== t.labels.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return g.labels.every((label, i) => globMatch(label, t.labels[i]!));
}

const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/** Whether an image (repository, no tag) is Docker Hub's, where `index.docker.io` credentials apply. */
function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === '') return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/** kubelet BasicDockerKeyring: entries by key, keys looked up in reverse lexical order (most specific first). */
export class DockerKeyring {
  private readonly creds = new Map<string, TrackedAuthConfig[]>();
  private index: string[] = [];

  constructor(private readonly sha256: Sha256Hex) {}

  add(source: CredentialSource | undefined, cfg: DockerConfig): void {
    for (const [registry, entry] of cfg) {
      let repository = registry;
      if (!repository.startsWith('https://') && !repository.startsWith('http://'))
        repository = `https://${repository}`;
      try {
        new URL(repository);
      } catch {
        continue; // the kubelet logs and skips an entry that is no URL
      }
      // Host as written (URL would lowercase it), port kept.
      const afterScheme = repository.replace(/^https?:\/\//, '');
      const slash = afterScheme.indexOf('/');
      const host = slash < 0 ? afterScheme : afterScheme.slice(0, slash);
      let path = slash < 0 ? '' : afterScheme.slice(slash).split(/[?#]/)[0]!;
      if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
      const key = path.length > 0 && path !== '/' ? host + path : host;
      const auth: AuthConfig = {
        ...(entry.username ? { username: entry.username } : {}),
        ...(entry.password ? { password: entry.password } : {}),
        ...(entry.email ? { email: entry.email } : {}),
      };
      const tracked: TrackedAuthConfig = {
        auth,
        hash: this.sha256(authConfigJSON(auth)),
        ...(source ? { source } : {}),
      };
      const list = this.creds.get(key) ?? [];
      list.push(tracked);
      this.creds.set(key, list);
    }
    this.index = [...this.creds.keys()].sort().reverse();
  }

  /** Every credential whose key matches `image` (a repository: no tag or digest), most specific key first. */
  lookup(image: string): TrackedAuthConfig[] {
    const out: TrackedAuthConfig[] = [];
    for (const key of this.index) if (urlsMatch(key, image)) out.push(...this.creds.get(key)!);
    if (out.length > 0) return out;
    if (isDefaultRegistryMatch(image)) return [...(this.creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}

/** A Secret as a pod's imagePullSecrets bring it: data values in base64, as the API returns them. */
export interface PullSecret {
  metadata?: { uid?: string; namespace?: string; name?: string };
  type?: string;
  data?: Record<string, string>;
}

/**
 * kubelet MakeDockerKeyring's secrets part: the dockerconfigjson and dockercfg secrets of the pod in order,
 * others ignored. Throws on a secret whose contents do not parse (the kubelet fails the pull with that error).
 */
export function keyringFromSecrets(secrets: readonly PullSecret[], keyring: DockerKeyring): DockerKeyring {
  for (const s of secrets) {
    const coords = {
      uid: s.metadata?.uid ?? '',
      namespace: s.metadata?.namespace ?? '',
      name: s.metadata?.name ?? '',
    };
    const json = s.data?.['.dockerconfigjson'];
    const cfg = s.data?.['.dockercfg'];
    if (s.type === 'kubernetes.io/dockerconfigjson' && json) {
      keyring.add({ secret: coords }, parseDockerConfigJSON(Buffer.from(json, 'base64').toString('utf8')));
    } else if (s.type === 'kubernetes.io/dockercfg' && cfg) {
      keyring.add({ secret: coords }, parseDockercfg(Buffer.from(cfg, 'base64').toString('utf8')));
    }
  }
  return keyring;
}

/**
 * The repository of an image reference, normalized as the kubelet's ParseImageName does: Docker Hub's short
 * names get `docker.io/` and `library/`, tag and digest go.
 */
export function repositoryToPull(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > lastSlash) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  let domain: string;
  let rest: string;
  if (slash < 0 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = 'docker.io';
    rest = name;
  } else {
    domain = first;
    rest = name.slice(slash + 1);
  }
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  return `${domain}/${rest}`;
}

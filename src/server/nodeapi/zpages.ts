/**
 * The kubelet's `/statusz` and `/flagz` (ComponentStatusz, ComponentFlagz; k8s.io/apiserver
 * pkg/server/statusz and flagz), pure: what a node reports in, status, headers and body out.
 *
 * Both answer plain text by default (no Accept, or one that text/plain satisfies): a header naming the
 * component, a warning that the format is for people, then `name<delimiter>value` lines. The delimiter is
 * drawn at random from `:`, `: `, `=` and ` ` (statusz per request, flagz once per server), as upstream does
 * so that no one parses it. The structured forms are kinds of group config.k8s.io, asked for by content
 * negotiation (`Accept: application/json;as=Statusz;g=config.k8s.io;v=v1beta1`, or application/yaml):
 * v1beta1, and v1alpha1 with a deprecation Warning header. Any other Accept (`application/json` without a
 * kind, an unknown version, `text/html`) gets 406 with a Status listing the media types.
 */
import {
  JSON_MEDIA,
  TEXT_MEDIA,
  YAML_MEDIA,
  mediaTypeWithGVK,
  negotiate,
  notAcceptable,
  writeObject,
  type GroupVersionKind,
  type HttpAnswer,
  type NegotiationRequest,
  type Restrictions,
} from './negotiate.js';

export const STATUSZ_PATH = '/statusz';
export const FLAGZ_PATH = '/flagz';
/** The component name both pages carry (server.ComponentKubelet). */
export const COMPONENT_KUBELET = 'kubelet';

/** What the apiserver's codec factory offers for these pages, in its order (CBOR is off by default). */
const SUPPORTED = [JSON_MEDIA, YAML_MEDIA, TEXT_MEDIA] as const;
export const ZPAGE_DELIMITERS = [':', ': ', '=', ' '] as const;
const WARNING =
  'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.';
const GROUP = 'config.k8s.io';
const VERSIONS = ['v1alpha1', 'v1beta1'] as const;
const DEPRECATED = new Set(['v1alpha1']);

type ZPage = 'statusz' | 'flagz';

/** The kinds the page converts to; text only without a conversion (StatuszEndpointRestrictions). */
function restrictionsFor(kind: string): Restrictions {
  return {
    allowsTransform: (type, subType, gvk) => {
      if (type === 'text' && subType === 'plain') return gvk === undefined;
      return (
        gvk !== undefined &&
        gvk.group === GROUP &&
        gvk.kind === kind &&
        (VERSIONS as readonly string[]).includes(gvk.version)
      );
    },
    allowsStreamSchema: () => false,
  };
}

/**
 * One page's answer: text unless the Accept header negotiates the structured kind, 406 when it negotiates
 * nothing. `object` builds the structured form for a version; `text` the plain form.
 */
function answer(
  page: ZPage,
  kind: string,
  req: NegotiationRequest,
  object: (apiVersion: string) => unknown,
  text: () => string,
): HttpAnswer {
  const plain = (): HttpAnswer => ({
    status: 200,
    headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    body: text(),
  });
  if ((req.accept ?? '').trim() === '') return plain();
  const n = negotiate(req.accept ?? '', SUPPORTED, restrictionsFor(kind));
  if (!n) return notAcceptable(req, SUPPORTED);
  if (n.media === TEXT_MEDIA) return plain();
  const gvk = n.convert as GroupVersionKind;
  const out = writeObject(
    n,
    req,
    200,
    object(`${gvk.group}/${gvk.version}`),
    mediaTypeWithGVK(n.media.mediaType, gvk),
  );
  if (DEPRECATED.has(gvk.version))
    out.headers.Warning = `299 - "This version of the ${page} endpoint is deprecated. Please use a newer version."`;
  return out;
}

const header = (page: ZPage): string => `\n${COMPONENT_KUBELET} ${page}\n${WARNING}\n`;

/** Go's html.EscapeString. */
function htmlEscape(s: string): string {
  return s.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&#39;', '"': '&#34;' })[c]!,
  );
}

/** What a node reports on /statusz. */
export interface StatuszData {
  /** When the node's kubelet started (ms since the epoch); reported to the second. */
  startTime: number;
  now: number;
  /** The Go version of a kubelet binary; empty for us (no Go toolchain built this process). */
  goVersion: string;
  /** The kubelet version as its binary would parse it (`1.37.2-...`, no `v`). */
  binaryVersion: string;
  /** The Kubernetes minor it emulates (`1.37`); empty to leave out. */
  emulationVersion: string;
  /** The debugging paths served, by first segment (the kubelet lists /configz /debug /flagz /healthz /metrics). */
  paths: readonly string[];
}

/**
 * The binary and emulation versions a kubelet of this version string reports (compatibility's effective
 * version: the version without its `v`, and its major.minor).
 */
export function kubeletVersionInfo(version: string): { binaryVersion: string; emulationVersion: string } {
  const m = /^v?(\d+)\.(\d+)/.exec(version);
  return { binaryVersion: version.replace(/^v/, ''), emulationVersion: m ? `${m[1]}.${m[2]}` : '' };
}

/** The first segment of every listed path, once each, sorted (aggregatePaths). */
export function aggregatePaths(listed: readonly string[]): string[] {
  const hidden = new Set(['/apis', '/api', '/openid', '/openapi', '/.well-known']);
  const out = new Set<string>();
  for (const p of listed) {
    const first = p.split('/')[1];
    if (!first) continue;
    if (!hidden.has(`/${first}`)) out.add(`/${first}`);
  }
  return [...out].sort();
}

function startSecond(d: StatuszData): number {
  return Math.floor(d.startTime / 1000) * 1000;
}

function uptimeSeconds(d: StatuszData): number {
  return Math.max(0, Math.floor((d.now - startSecond(d)) / 1000));
}

/** time.UnixDate (`Mon Jan _2 15:04:05 MST 2006`), in UTC. */
export function unixDate(ms: number): string {
  const d = new Date(ms);
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const two = (n: number): string => String(n).padStart(2, '0');
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${days[d.getUTCDay()]} ${months[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${time} UTC ${d.getUTCFullYear()}`;
}

/** The Statusz object of a version (v1alpha1 and v1beta1 have the same fields). */
export function statuszObject(d: StatuszData, apiVersion: string): Record<string, unknown> {
  return {
    kind: 'Statusz',
    apiVersion,
    metadata: { name: COMPONENT_KUBELET },
    startTime: new Date(startSecond(d)).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    uptimeSeconds: uptimeSeconds(d),
    goVersion: d.goVersion,
    binaryVersion: d.binaryVersion,
    ...(d.emulationVersion ? { emulationVersion: d.emulationVersion } : {}),
    paths: d.paths.length > 0 ? [...d.paths] : null,
  };
}

/** The plain-text /statusz. */
export function statuszText(d: StatuszData, delimiter: string): string {
  const up = uptimeSeconds(d);
  const uptime = `${Math.floor(up / 3600)} hr ${String(Math.floor(up / 60) % 60).padStart(2, '0')} min ${String(up % 60).padStart(2, '0')} sec`;
  const delim = htmlEscape(delimiter);
  const emulation = d.emulationVersion ? `Emulation version${delim} ${htmlEscape(d.emulationVersion)}` : '';
  const paths = d.paths.length > 0 ? `Paths${delim} ${htmlEscape(d.paths.join(' '))}` : '';
  return (
    `${header('statusz')}\n` +
    `Started${delim} ${htmlEscape(unixDate(startSecond(d)))}\n` +
    `Up${delim} ${htmlEscape(uptime)}\n` +
    `Go version${delim} ${htmlEscape(d.goVersion)}\n` +
    `Binary version${delim} ${htmlEscape(d.binaryVersion)}\n` +
    `${emulation}\n${paths}\n`
  );
}

/** GET /statusz; `delimiter` is one of ZPAGE_DELIMITERS. */
export function statuszAnswer(req: NegotiationRequest, d: StatuszData, delimiter: string): HttpAnswer {
  return answer(
    'statusz',
    'Statusz',
    req,
    (apiVersion) => statuszObject(d, apiVersion),
    () => statuszText(d, delimiter),
  );
}

/** The Flagz object of a version: flag name to value, as the flags print their values. */
export function flagzObject(
  flags: Readonly<Record<string, string>>,
  apiVersion: string,
): Record<string, unknown> {
  const sorted = Object.fromEntries(
    Object.keys(flags)
      .sort()
      .map((k) => [k, flags[k]!]),
  );
  return {
    kind: 'Flagz',
    apiVersion,
    metadata: { name: COMPONENT_KUBELET },
    ...(Object.keys(sorted).length > 0 ? { flags: sorted } : {}),
  };
}

/** The plain-text /flagz: `name<separator>value`, sorted by name. */
export function flagzText(flags: Readonly<Record<string, string>>, separator: string): string {
  const lines = Object.keys(flags)
    .sort()
    .map((k) => `${k}${separator}${flags[k]}\n`);
  return header('flagz') + lines.join('');
}

/** GET /flagz; `separator` is one of ZPAGE_DELIMITERS, the same for every answer of a server. */
export function flagzAnswer(
  req: NegotiationRequest,
  flags: Readonly<Record<string, string>>,
  separator: string,
): HttpAnswer {
  return answer(
    'flagz',
    'Flagz',
    req,
    (apiVersion) => flagzObject(flags, apiVersion),
    () => flagzText(flags, separator),
  );
}

/**
 * Content negotiation as the apiserver library does it for the kubelet's `/statusz` and `/flagz`
 * (k8s.io/apiserver endpoints/handlers/negotiation, with goautoneg's Accept parsing), and the way such a
 * handler writes an object or its error: JSON as Go's encoding/json writes it, YAML as sigs.k8s.io/yaml does
 * (goyaml.ts), and a 406 as a `Status` in whatever the Accept header still allows, else indented JSON.
 *
 * Pure: a request's Accept, query and User-Agent in, status, headers and body out.
 */
import { toGoYaml } from './goyaml.js';

/** A media type a handler can write (apimachinery's SerializerInfo, the parts negotiation reads). */
export interface MediaType {
  mediaType: string;
  type: string;
  subType: string;
  /** Has a streaming form (JSON does): a `stream=` parameter may name it. */
  streams: boolean;
}

export const JSON_MEDIA: MediaType = {
  mediaType: 'application/json',
  type: 'application',
  subType: 'json',
  streams: true,
};
export const YAML_MEDIA: MediaType = {
  mediaType: 'application/yaml',
  type: 'application',
  subType: 'yaml',
  streams: false,
};
export const TEXT_MEDIA: MediaType = {
  mediaType: 'text/plain',
  type: 'text',
  subType: 'plain',
  streams: false,
};

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** Which conversions an endpoint allows (negotiation.EndpointRestrictions). */
export interface Restrictions {
  allowsTransform(type: string, subType: string, gvk: GroupVersionKind | undefined): boolean;
  allowsStreamSchema(schema: string): boolean;
}

/** apiserver's default: no conversion, `stream=watch`. */
export const DEFAULT_RESTRICTIONS: Restrictions = {
  allowsTransform: (_t, _s, gvk) => gvk === undefined,
  allowsStreamSchema: (s) => s === 'watch',
};

interface AcceptClause {
  type: string;
  subType: string;
  q: number;
  params: Map<string, string>;
}

/** Go's strings.TrimFunc with ' ': spaces only, not tabs. */
const trimSpaces = (s: string): string => s.replace(/^ +| +$/g, '');

/** strings.Index-based split at the first `sep`: [before, after] ('' after when absent). */
function splitFirst(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

/** strconv.ParseFloat(s, 32) as goautoneg uses it: 0 on a syntax error. */
function parseQ(s: string): number {
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return 0;
  return Math.fround(Number(s));
}

/** goautoneg.ParseAccept: clauses by quality, concrete types before wildcards; malformed ones dropped. */
export function parseAccept(header: string): AcceptClause[] {
  const clauses: AcceptClause[] = [];
  let remaining = header;
  while (remaining.length > 0) {
    let part: string;
    [part, remaining] = splitFirst(remaining, ',');
    part = trimSpaces(part);
    const [typePart, paramPart] = splitFirst(part, ';');
    const [t, rest] = splitFirst(typePart, '/');
    const type = trimSpaces(t);
    let subType: string;
    if (rest.length === 0) {
      if (type !== '*') continue;
      subType = '*';
    } else {
      const [st, more] = splitFirst(rest, '/');
      if (more.length > 0) continue;
      subType = trimSpaces(st);
    }
    const clause: AcceptClause = { type, subType, q: 1, params: new Map() };
    let params = paramPart;
    while (params.length > 0) {
      let p: string;
      [p, params] = splitFirst(params, ';');
      const [k, v] = splitFirst(p, '=');
      if (v.length === 0) continue;
      const [value, extra] = splitFirst(v, '=');
      if (extra.length !== 0) continue;
      const token = trimSpaces(k);
      if (token === 'q') clause.q = parseQ(value);
      else clause.params.set(token, trimSpaces(value));
    }
    clauses.push(clause);
  }
  // sort.Sort on so few clauses is Go's insertion sort: kept as is, with goautoneg's Less.
  const less = (a: AcceptClause, b: AcceptClause): boolean =>
    a.q > b.q || (a.type !== '*' && b.type === '*') || (a.subType !== '*' && b.subType === '*');
  for (let i = 1; i < clauses.length; i++) {
    for (let j = i; j > 0 && less(clauses[j]!, clauses[j - 1]!); j--) {
      [clauses[j], clauses[j - 1]] = [clauses[j - 1]!, clauses[j]!];
    }
  }
  return clauses;
}

export interface Negotiated {
  media: MediaType;
  /** The `as`/`g`/`v` conversion asked for, if any. */
  convert?: GroupVersionKind;
  /** `pretty=1` on the clause. */
  pretty: boolean;
}

/** acceptMediaTypeOptions: the clause's parameters against one media type and the endpoint's restrictions. */
function acceptOptions(
  params: Map<string, string>,
  media: MediaType,
  r: Restrictions,
): Negotiated | undefined {
  let convert: GroupVersionKind | undefined;
  let pretty = false;
  for (const [k, v] of params) {
    if (k === 'as' || k === 'g' || k === 'v') {
      convert ??= { group: '', version: '', kind: '' };
      if (k === 'as') convert.kind = v;
      else if (k === 'g') convert.group = v;
      else convert.version = v;
    } else if (k === 'stream') {
      if (v.length > 0 && (!media.streams || !r.allowsStreamSchema(v))) return undefined;
    } else if (k === 'sv') {
      // No endpoint here serves a server version.
      if (v.length > 0) return undefined;
    } else if (k === 'pretty') {
      pretty = v === '1';
    }
  }
  if (!r.allowsTransform(media.type, media.subType, convert)) return undefined;
  return { media, pretty, ...(convert ? { convert } : {}) };
}

/** NegotiateMediaTypeOptions: the first clause, in goautoneg's order, that one of `supported` satisfies. */
export function negotiate(
  accept: string,
  supported: readonly MediaType[],
  r: Restrictions,
): Negotiated | undefined {
  if (accept.length === 0 && supported.length > 0) return { media: supported[0]!, pretty: false };
  for (const c of parseAccept(accept)) {
    for (const media of supported) {
      const matches =
        (c.type === media.type && (c.subType === media.subType || c.subType === '*')) ||
        (c.type === '*' && c.subType === '*');
      if (!matches) continue;
      const n = acceptOptions(c.params, media, r);
      if (n) return n;
    }
  }
  return undefined;
}

/** What negotiation reads of a request. */
export interface NegotiationRequest {
  accept?: string;
  query: URLSearchParams;
  rawQuery: string;
  userAgent?: string;
}

/** strconv.ParseBool. */
function goBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}

/** isPrettyPrint: `?pretty=<bool>`, else a browser's or curl's or wget's User-Agent. */
export function isPrettyPrint(req: NegotiationRequest): boolean {
  if (req.rawQuery.includes('pretty')) {
    const pp = req.query.get('pretty') ?? '';
    if (pp.length > 0) return goBool(pp) ?? false;
  }
  const ua = req.userAgent ?? '';
  return ua.startsWith('curl') || ua.startsWith('Wget') || ua.startsWith('Mozilla/5.0');
}

/**
 * A value as Go's encoding/json writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped. Compact with a
 * trailing newline (json.Encoder), or indented by two spaces without one (json.MarshalIndent).
 */
export function goJSON(value: unknown, pretty: boolean): string {
  const text = pretty ? JSON.stringify(value, null, 2) : `${JSON.stringify(value)}\n`;
  return goJSONEscape(text);
}

/** Go's HTML-safe escaping of what JSON.stringify wrote (those characters only ever occur inside strings). */
export function goJSONEscape(text: string): string {
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An object in the negotiated JSON or YAML (WriteObjectNegotiated's serializer step). */
export function writeObject(
  n: Negotiated,
  req: NegotiationRequest,
  status: number,
  obj: unknown,
  contentType: string,
): HttpAnswer {
  const body =
    n.media === YAML_MEDIA
      ? toGoYaml(JSON.parse(JSON.stringify(obj)))
      : goJSON(obj, n.pretty || isPrettyPrint(req));
  return { status, headers: { 'Content-Type': contentType }, body };
}

/** The Content-Type of a converted object: `application/json;g=...;v=...;as=...`. */
export function mediaTypeWithGVK(mediaType: string, gvk: GroupVersionKind | undefined): string {
  if (!gvk) return mediaType;
  let out = mediaType;
  if (gvk.group) out += `;g=${gvk.group}`;
  if (gvk.version) out += `;v=${gvk.version}`;
  if (gvk.kind) out += `;as=${gvk.kind}`;
  return out;
}

/**
 * 406 Not Acceptable as ErrorNegotiated writes it: a `Status` negotiated again without conversions (so
 * `Accept: application/json` gets it as JSON, `application/yaml` as YAML), and as indented JSON when even that
 * fails.
 */
export function notAcceptable(req: NegotiationRequest, supported: readonly MediaType[]): HttpAnswer {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `only the following media types are accepted: ${supported.map((m) => m.mediaType).join(', ')}`,
    reason: 'NotAcceptable',
    code: 406,
  };
  const n = negotiate(req.accept ?? '', supported, DEFAULT_RESTRICTIONS);
  if (n && n.media !== TEXT_MEDIA) return writeObject(n, req, 406, status, n.media.mediaType);
  return {
    status: 406,
    headers: { 'Content-Type': 'application/json' },
    body: goJSONEscape(JSON.stringify(status, null, 2)),
  };
}

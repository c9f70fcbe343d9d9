/**
 * The kubelet's pkg/fieldpath as the downward API volume uses it: ExtractFieldPathAsString over a pod's
 * metadata, with FormatMap for whole label/annotation maps.
 *
 * A volume can only project metadata (name, namespace, uid, labels, annotations and one key of either):
 * spec.nodeName, status.podIP and the other fields environment variables may use are rejected by API
 * validation for volumes, and the kubelet's volume plugin does not resolve them either ("unsupported
 * fieldPath").
 */
import type { ObjectMeta } from '../../api/core.js';
import { goQuote } from '../../util/goquote.js';
import { memoByIdentity } from '../../util/memo.js';

/** Go's sort.Strings: byte order of the UTF-8 encodings (UTF-16 order differs only past the BMP). */
function sortUtf8(keys: string[]): string[] {
  if (keys.every((k) => !/[\ud800-\udfff]/.test(k))) return keys.sort();
  const enc = keys.map((k) => ({ k, b: Buffer.from(k) }));
  enc.sort((x, y) => Buffer.compare(x.b, y.b));
  return enc.map((e) => e.k);
}

/**
 * Formatted maps by identity: a downward API volume may project the same annotations in many items, and
 * every sync sets it up again; pod metadata maps are shared between pod versions until they change.
 */
const formatted = memoByIdentity((m: Readonly<Record<string, string>>): string =>
  sortUtf8(Object.keys(m))
    .map((k) => `${k}=${goQuote(m[k] ?? '')}`)
    .join('\n'),
);

/** fieldpath.FormatMap: one `key="value"` line per key in sorted order, values quoted as Go's %q. */
export function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  return m ? formatted(m) : '';
}

/**
 * fieldpath.SplitMaybeSubscriptedPath: "metadata.labels['k']" -> { path: "metadata.labels", subscript: "k" };
 * undefined when the path has no subscript.
 */
export function splitMaybeSubscriptedPath(
  fieldPath: string,
): { path: string; subscript: string } | undefined {
  if (!fieldPath.endsWith("']")) return undefined;
  const s = fieldPath.slice(0, -2);
  const open = s.indexOf("['");
  if (open <= 0) return undefined;
  return { path: s.slice(0, open), subscript: s.slice(open + 2) };
}

// ------------------------------------------------------------- apimachinery validation.IsQualifiedName

const QUALIFIED_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QUALIFIED_NAME = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const QUALIFIED_NAME_MAX_LENGTH = 63;
const QUALIFIED_NAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

const maxLenError = (n: number): string => `must be no more than ${n} characters`;

/** validation.IsQualifiedName: the problems with a label or annotation key, none when it is valid. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix === '') {
      errs.push('prefix part must be non-empty');
    } else {
      if (Buffer.byteLength(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH) {
        errs.push(`prefix part ${maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH)}`);
      }
      if (!DNS1123_SUBDOMAIN.test(prefix)) {
        errs.push(`prefix part ${regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, 'example.com')}`);
      }
    }
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}` +
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name === '') errs.push('name part must be non-empty');
  else if (Buffer.byteLength(name) > QUALIFIED_NAME_MAX_LENGTH) {
    errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  }
  if (!QUALIFIED_NAME.test(name)) {
    errs.push(
      `name part ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc')}`,
    );
  }
  return errs;
}

// ------------------------------------------------------------------------------------- the extraction

export type FieldValue = { ok: true; value: string } | { ok: false; message: string };

/** fieldpath.ExtractFieldPathAsString over an object's metadata, with the kubelet's error messages. */
export function extractFieldPathAsString(meta: ObjectMeta, fieldPath: string): FieldValue {
  const sub = splitMaybeSubscriptedPath(fieldPath);
  if (sub) {
    const { path, subscript } = sub;
    if (path !== 'metadata.annotations' && path !== 'metadata.labels') {
      return { ok: false, message: `fieldPath ${goQuote(fieldPath)} does not support subscript` };
    }
    // Upstream validates an annotation subscript lower-cased and a label subscript as written.
    const errs = isQualifiedName(path === 'metadata.annotations' ? subscript.toLowerCase() : subscript);
    if (errs.length > 0) {
      return { ok: false, message: `invalid key subscript in ${fieldPath}: ${errs.join(';')}` };
    }
    const map = path === 'metadata.annotations' ? meta.annotations : meta.labels;
    return { ok: true, value: map?.[subscript] ?? '' };
  }
  switch (fieldPath) {
    case 'metadata.annotations':
      return { ok: true, value: formatMap(meta.annotations) };
    case 'metadata.labels':
      return { ok: true, value: formatMap(meta.labels) };
    case 'metadata.name':
      return { ok: true, value: meta.name ?? '' };
    case 'metadata.namespace':
      return { ok: true, value: meta.namespace ?? '' };
    case 'metadata.uid':
      return { ok: true, value: meta.uid ?? '' };
  }
  return { ok: false, message: `unsupported fieldPath: ${fieldPath}` };
}

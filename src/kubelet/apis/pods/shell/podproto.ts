/**
 * A core/v1 Pod in the Kubernetes protobuf encoding (what Go's `pod.Marshal()` writes, without the `k8s\0`
 * envelope), as the pods API sends each pod. The wire description is k8s/pod.json (scripts/gen-pod-proto.ts);
 * the JSON pod is carried over field by field, with the four types whose JSON and protobuf shapes differ
 * converted: Time (RFC3339 -> seconds and nanos), Quantity (its string), IntOrString (type and value) and
 * FieldsV1 (its JSON as bytes). Fields the description does not know are left out, as a decoder skips them.
 *
 * protobufjs is @grpc/proto-loader's own dependency: it is required through it, on first use.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Protobuf from 'protobufjs';
import { KindError } from '../../../../util/errors.js';

const POD_TYPE = 'k8s.io.api.core.v1.Pod';
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const TIME = `.${META}.Time`;
const FIELDS_V1 = `.${META}.FieldsV1`;
const QUANTITY = '.k8s.io.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = '.k8s.io.apimachinery.pkg.util.intstr.IntOrString';

let podType: Protobuf.Type | undefined;
/** Message full name (with the leading dot) -> the numbers of its fields that JSON writes inline. */
let inlineFields = new Map<string, ReadonlySet<number>>();

interface PodDescription extends Protobuf.INamespace {
  comment?: string;
  inline?: Record<string, number[]>;
}

function protobufJs(): typeof Protobuf {
  const require = createRequire(import.meta.url);
  const viaLoader = createRequire(require.resolve('@grpc/proto-loader'));
  return viaLoader('protobufjs') as typeof Protobuf;
}

/** The Pod message type, loaded once. */
export function podMessageType(): Protobuf.Type {
  if (!podType) {
    const pb = protobufJs();
    const text = readFileSync(new URL('../k8s/pod.json', import.meta.url), 'utf8');
    const { inline, comment: _comment, ...json } = JSON.parse(text) as PodDescription;
    inlineFields = new Map(Object.entries(inline ?? {}).map(([k, ids]) => [`.${k}`, new Set(ids)]));
    podType = pb.Root.fromJSON(json).lookupType(POD_TYPE);
  }
  return podType;
}

/** An RFC3339 time as metav1.Time's seconds and nanos; undefined when it does not parse. */
export function timeMessage(value: string): { seconds: number; nanos: number } | undefined {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return undefined;
  const frac = /\.(\d+)/.exec(value)?.[1] ?? '';
  const nanos = frac === '' ? 0 : Number(frac.slice(0, 9).padEnd(9, '0'));
  return { seconds: Math.floor(ms / 1000), nanos };
}

function convertValue(field: Protobuf.Field, value: unknown): unknown {
  const t = field.resolvedType;
  if (!(t instanceof Object) || !('fields' in t)) return value;
  const name = t.fullName;
  if (name === TIME) return typeof value === 'string' ? timeMessage(value) : undefined;
  if (name === QUANTITY) return { string: String(value) };
  if (name === INT_OR_STRING)
    return typeof value === 'number' ? { type: 0, intVal: value } : { type: 1, strVal: String(value) };
  if (name === FIELDS_V1) return { Raw: Buffer.from(JSON.stringify(value)) };
  return typeof value === 'object' && value !== null ? toMessageObject(t as Protobuf.Type, value) : undefined;
}

/** A JSON object as the plain object protobufjs' fromObject takes for `type`. */
export function toMessageObject(type: Protobuf.Type, json: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const inline = inlineFields.get(type.fullName);
  if (inline)
    for (const f of type.fieldsArray)
      if (inline.has(f.id)) {
        f.resolve();
        out[f.name] = toMessageObject(f.resolvedType as Protobuf.Type, json);
      }
  for (const [key, value] of Object.entries(json)) {
    const field = type.fields[key];
    if (!field || inline?.has(field.id) || value === null || value === undefined) continue;
    field.resolve();
    if (field.map) {
      const m: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as object)) {
        const c = convertValue(field, v);
        if (c !== undefined) m[k] = c;
      }
      out[key] = m;
    } else if (field.repeated) {
      if (!Array.isArray(value)) continue;
      out[key] = value.map((v) => convertValue(field, v)).filter((v) => v !== undefined);
    } else {
      const c = convertValue(field, value);
      if (c !== undefined) out[key] = c;
    }
  }
  return out;
}

/** The pod's protobuf bytes. Throws KindError('Internal') when protobufjs refuses the object. */
export function encodePod(pod: object): Uint8Array {
  const type = podMessageType();
  try {
    return type.encode(type.fromObject(toMessageObject(type, pod))).finish();
  } catch (err) {
    throw new KindError(
      'Internal',
      `failed to marshal pod: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** The pod back from its bytes, as protobufjs' plain object (tests and tools). */
export function decodePod(bytes: Uint8Array): Record<string, unknown> {
  const type = podMessageType();
  return type.toObject(type.decode(bytes), { longs: Number, bytes: String, defaults: false });
}

/**
 * The content of a configMap volume (pkg/volume/configmap: SetUpAt's object lookup and MakePayload).
 *
 * - Without `items`, every key of `data` and then of `binaryData` becomes a file named after the key, with
 *   the defaultMode (a key in both, which validation forbids, ends up with the binary value).
 * - With `items`, only the listed keys, each at its `path` with its own `mode` or the defaultMode; a key is
 *   looked up in `data` first, then `binaryData`. A missing key fails the volume
 *   (`configmap references non-existent config key: <key>`) unless the volume is optional, which skips it.
 * - A missing ConfigMap fails the volume (`configmap "<name>" not found`, as the kubelet's configmap manager
 *   words it) unless the volume is optional, which makes it an empty ConfigMap.
 */
import type { ConfigMapVolumeSource, KeyToPath } from '../../api/volumes.js';
import {
  DEFAULT_MODE,
  type FetchError,
  type Payload,
  type PayloadResult,
  failure,
  isFetchError,
  success,
} from './payload.js';

/** A ConfigMap's content as the API returns it (`binaryData` values base64). */
export interface ConfigMapData {
  data?: Readonly<Record<string, string>>;
  binaryData?: Readonly<Record<string, string>>;
}

/** What looking up the volume's ConfigMap gave: the object, undefined when it does not exist, or the error. */
export type ConfigMapLookup = ConfigMapData | FetchError | undefined;

const has = (
  o: Readonly<Record<string, string>> | undefined,
  k: string,
): o is Readonly<Record<string, string>> => o !== undefined && Object.prototype.hasOwnProperty.call(o, k);

export function configMapNotFoundMessage(name: string): string {
  return `configmap ${JSON.stringify(name)} not found`;
}

/**
 * MakePayload: the files of an existing ConfigMap (an absent optional one is passed as `{}`). Exported for the
 * projected volume, which supplies its own defaultMode.
 */
export function configMapPayload(
  items: readonly KeyToPath[] | undefined,
  configMap: ConfigMapData,
  defaultMode: number,
  optional: boolean,
): PayloadResult {
  const payload: Payload = new Map();
  if (!items || items.length === 0) {
    for (const [name, value] of Object.entries(configMap.data ?? {})) {
      payload.set(name, { data: Buffer.from(value, 'utf8'), mode: defaultMode });
    }
    for (const [name, value] of Object.entries(configMap.binaryData ?? {})) {
      payload.set(name, { data: Buffer.from(value, 'base64'), mode: defaultMode });
    }
    return success(payload);
  }
  for (const ktp of items) {
    let data: Buffer;
    if (has(configMap.data, ktp.key)) data = Buffer.from(configMap.data[ktp.key] ?? '', 'utf8');
    else if (has(configMap.binaryData, ktp.key))
      data = Buffer.from(configMap.binaryData[ktp.key] ?? '', 'base64');
    else if (optional) continue;
    else return failure([`configmap references non-existent config key: ${ktp.key}`]);
    payload.set(ktp.path, { data, mode: ktp.mode ?? defaultMode });
  }
  return success(payload);
}

/** The payload of a configMap volume given the lookup of its ConfigMap. */
export function makeConfigMapPayload(
  source: ConfigMapVolumeSource,
  configMap: ConfigMapLookup,
): PayloadResult {
  const optional = source.optional === true;
  if (isFetchError(configMap)) return failure([configMap.error]);
  if (configMap === undefined && !optional) return failure([configMapNotFoundMessage(source.name ?? '')]);
  return configMapPayload(source.items, configMap ?? {}, source.defaultMode ?? DEFAULT_MODE, optional);
}

/**
 * The content of a secret volume (pkg/volume/secret: SetUpAt's object lookup and MakePayload). The rules are
 * the configMap volume's with one map of values (`data`, which the API server fills from `stringData` too):
 * every key with the defaultMode, or the listed `items` with their own modes; a missing key is
 * `references non-existent secret key: <key>` and a missing Secret `secret "<name>" not found`, both skipped
 * when the volume is optional.
 */
import type { KeyToPath, SecretVolumeSource } from '../../api/volumes.js';
import {
  DEFAULT_MODE,
  type FetchError,
  type Payload,
  type PayloadResult,
  failure,
  isFetchError,
  success,
} from './payload.js';

/** A Secret's content with its values already decoded from base64. */
export interface SecretData {
  data?: Readonly<Record<string, Buffer>>;
}

/** What looking up the volume's Secret gave: the object, undefined when it does not exist, or the error. */
export type SecretLookup = SecretData | FetchError | undefined;

/** A Secret as the API returns it (values base64) -> SecretData. */
export function decodeSecretData(secret: { data?: Readonly<Record<string, string>> }): SecretData {
  const data: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, 'base64');
  return { data };
}

export function secretNotFoundMessage(name: string): string {
  return `secret ${JSON.stringify(name)} not found`;
}

/**
 * MakePayload: the files of an existing Secret (an absent optional one is passed as `{}`). Exported for the
 * projected volume, which supplies its own defaultMode.
 */
export function secretPayload(
  items: readonly KeyToPath[] | undefined,
  secret: SecretData,
  defaultMode: number,
  optional: boolean,
): PayloadResult {
  const payload: Payload = new Map();
  const values = secret.data ?? {};
  if (!items || items.length === 0) {
    for (const [name, value] of Object.entries(values)) {
      payload.set(name, { data: Buffer.from(value), mode: defaultMode });
    }
    return success(payload);
  }
  for (const ktp of items) {
    if (!Object.prototype.hasOwnProperty.call(values, ktp.key)) {
      if (optional) continue;
      return failure([`references non-existent secret key: ${ktp.key}`]);
    }
    payload.set(ktp.path, {
      data: Buffer.from(values[ktp.key] ?? Buffer.alloc(0)),
      mode: ktp.mode ?? defaultMode,
    });
  }
  return success(payload);
}

/** The payload of a secret volume given the lookup of its Secret. */
export function makeSecretPayload(source: SecretVolumeSource, secret: SecretLookup): PayloadResult {
  const optional = source.optional === true;
  if (isFetchError(secret)) return failure([secret.error]);
  if (secret === undefined && !optional) return failure([secretNotFoundMessage(source.secretName ?? '')]);
  return secretPayload(source.items, secret ?? {}, source.defaultMode ?? DEFAULT_MODE, optional);
}

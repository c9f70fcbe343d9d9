/**
 * A container's environment as the kubelet builds it (kubelet_pods.go makeEnvironmentVariables,
 * podFieldSelectorRuntimeValue, containerResourceRuntimeValue; third_party/forked/golang/expansion).
 *
 * Pure: the caller fetches the referenced ConfigMaps and Secrets first (`envSourceRefs` says which), and reads
 * the env files of `fileKeyRef` entries (`envFileRefs`), and passes them in; nothing here does I/O or reads a
 * clock. Same inputs, same output, in a stable order.
 *
 * Order of resolution, as the kubelet's:
 * 1. `envFrom`, in list order (a later source overrides an earlier one), keys prefixed with `prefix`.
 * 2. `env`, in list order: a literal value has its `$(VAR)` references expanded against everything defined so
 *    far (envFrom keys and earlier `env` entries, then the service variables); otherwise `valueFrom` is resolved.
 *    An `env` entry overrides an `envFrom` key of the same name.
 * 3. Service variables not already defined.
 * The kubelet returns these in Go map order (random); here the first definition of a name fixes its position.
 */
import { formatMap } from './volume/fieldpath.js';
import type { Container, EnvVarSource, Pod } from '../api/core.js';
import { KindError } from '../util/errors.js';
import { lookupEnvFile } from './util/envfile.js';
import {
  containerNotFoundMessage,
  containerResourceValue,
  downwardAPIAllocatable,
  findContainerInPod,
  parseContainerResourceName,
  unsupportedResourceMessage,
} from './resourcefieldref.js';

/** Referenced objects by name; a missing entry or `undefined` means the object does not exist. */
export interface EnvSources {
  configMaps: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
  /** Secret values already decoded from base64. */
  secrets: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
  /** The env files of `fileKeyRef` entries, by `envFileKey(volumeName, path)`; a missing entry: no such volume. */
  envFiles?: ReadonlyMap<string, EnvFileRead>;
}

/**
 * One env file as the caller found it (kubelet: the pod's mounted volume, securejoin.SecureJoin of its host
 * path and the ref's path, then os.Open): `noVolume` when the pod has no mounted volume of that name,
 * `badPath` when the join fails (a symlink loop), `unreadable` when the file cannot be opened or read, else its
 * content and the joined host path (which the
 * kubelet's message for a missing key names).
 */
export type EnvFileRead =
  | { kind: 'noVolume' }
  | { kind: 'badPath'; error: string }
  | { kind: 'unreadable'; path: string; error: string }
  | { kind: 'read'; path: string; content: string };

/** The key of an env file in `EnvSources.envFiles`. */
export function envFileKey(volumeName: string, path: string): string {
  return `${volumeName}\0${path}`;
}

/** The env files a container's `env` reads through `fileKeyRef`, each once, in order. */
export function envFileRefs(container: Pick<Container, 'env'>): { volumeName: string; path: string }[] {
  const seen = new Set<string>();
  const refs: { volumeName: string; path: string }[] = [];
  for (const e of container.env ?? []) {
    const ref = e.value ? undefined : e.valueFrom?.fileKeyRef;
    if (!ref || e.valueFrom?.fieldRef || e.valueFrom?.resourceFieldRef) continue;
    if (e.valueFrom?.configMapKeyRef || e.valueFrom?.secretKeyRef) continue;
    const key = envFileKey(ref.volumeName, ref.path);
    if (seen.has(key)) continue;
    seen.add(key);
    refs.push({ volumeName: ref.volumeName, path: ref.path });
  }
  return refs;
}

export interface EnvContext {
  podIP: string;
  podIPs: readonly string[];
  hostIP: string;
  hostIPs: readonly string[];
  /** What `spec.nodeName` resolves to. */
  nodeName: string;
  /** What `spec.serviceAccountName` resolves to. */
  serviceAccountName: string;
  /** Node allocatable (cpu, memory, ephemeral-storage): the value of a `limits.*` ref when no limit is set. */
  nodeAllocatable?: Readonly<Record<string, string | number>>;
  /** Service link variables (KUBERNETES_SERVICE_HOST, ...), lowest precedence. */
  serviceEnv?: Readonly<Record<string, string>>;
  /**
   * Which `envFrom` keys are skipped as unusable names. `relaxed` (default, the 1.33 API rule): any non-empty
   * printable ASCII without `=`. `strict` (the kubelet before RelaxedEnvironmentVariableValidation): a C
   * identifier as `IsEnvVarName` defines it.
   */
  envVarNames?: 'relaxed' | 'strict';
}

export interface EnvVarValue {
  name: string;
  value: string;
}

/** `envFrom` keys left out because they are not valid variable names (the kubelet used to warn about them). */
export interface SkippedEnvFromKeys {
  kind: 'ConfigMap' | 'Secret';
  name: string;
  keys: string[];
}

export interface EnvironmentResult {
  env: EnvVarValue[];
  skipped: SkippedEnvFromKeys[];
}

/** One reference of a container's environment to a ConfigMap or Secret. */
export interface EnvSourceRef {
  kind: 'configMap' | 'secret';
  name: string;
  /** This reference is optional: the object's absence fails nothing here. */
  optional: boolean;
}

/**
 * Every reference of a container's `envFrom` and `env` to a ConfigMap or Secret, in the order the kubelet
 * reads them (envFrom first, then env; one object may be referred to more than once). A caller that fetches
 * them in this order may stop at the first reference that is not optional and finds nothing:
 * makeEnvironmentVariables fails there, as the kubelet does, and reads nothing after it.
 */
export function envSourceRefs(container: Pick<Container, 'env' | 'envFrom'>): EnvSourceRef[] {
  const refs: EnvSourceRef[] = [];
  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (ref) {
      refs.push({
        kind: from.configMapRef ? 'configMap' : 'secret',
        name: ref.name,
        optional: ref.optional === true,
      });
    }
  }
  for (const e of container.env ?? []) {
    if (e.value) continue;
    const cm = e.valueFrom?.configMapKeyRef;
    const ref = cm ?? e.valueFrom?.secretKeyRef;
    if (ref)
      refs.push({ kind: cm ? 'configMap' : 'secret', name: ref.name, optional: ref.optional === true });
  }
  return refs;
}

// ------------------------------------------------------------------------------------------ expansion

const OPERATOR = '$';
const OPENER = '(';
const CLOSER = ')';

/**
 * Expands `$(VAR)` references (third_party/forked/golang/expansion.Expand): `$$` is a literal `$`; an
 * unresolvable `$(VAR)` stays as written; a `$` that starts no reference, or an unclosed `$(`, is kept.
 * `mapping` returns undefined for an unknown name.
 */
export function expand(input: string, mapping: (name: string) => string | undefined): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== OPERATOR || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === OPERATOR) {
      out += OPERATOR;
    } else if (rest[0] === OPENER) {
      const close = rest.indexOf(CLOSER, 1);
      if (close >= 0) {
        const name = rest.slice(1, close);
        out += mapping(name) ?? `${OPERATOR}${OPENER}${name}${CLOSER}`;
        advance = close + 1;
      } else {
        out += `${OPERATOR}${OPENER}`;
      }
    } else {
      out += `${OPERATOR}${rest[0] ?? ''}`;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** First map that has the name wins (expansion.MappingFuncFor). */
function mappingFor(
  ...contexts: (ReadonlyMap<string, string> | Readonly<Record<string, string>> | undefined)[]
) {
  return (name: string): string | undefined => {
    for (const c of contexts) {
      if (!c) continue;
      if (c instanceof Map) {
        if (c.has(name)) return c.get(name);
      } else if (Object.prototype.hasOwnProperty.call(c, name)) {
        return (c as Readonly<Record<string, string>>)[name];
      }
    }
    return undefined;
  };
}

/**
 * The container's command and args with `$(VAR)` expanded against its final environment
 * (kubecontainer.ExpandContainerCommandAndArgs). Absent lists stay absent.
 */
export function expandContainerCommandAndArgs(
  container: Pick<Container, 'command' | 'args'>,
  env: readonly EnvVarValue[],
): { command?: string[]; args?: string[] } {
  const map = new Map<string, string>();
  for (const e of env) map.set(e.name, e.value);
  const mapping = mappingFor(map);
  const out: { command?: string[]; args?: string[] } = {};
  if (container.command) out.command = container.command.map((c) => expand(c, mapping));
  if (container.args) out.args = container.args.map((a) => expand(a, mapping));
  return out;
}

// ---------------------------------------------------------------------------------------- validation

const C_IDENTIFIER = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function isUsableName(name: string, rule: 'relaxed' | 'strict'): boolean {
  if (rule === 'strict') return C_IDENTIFIER.test(name);
  if (name === '') return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x3d) return false;
  }
  return true;
}

// ----------------------------------------------------------------------------------------- field refs

const SUPPORTED_FIELD_LABELS = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
]);

const SUBSCRIPTED = /^(metadata\.(?:annotations|labels))\['(.*)'\]$/;

function fieldRefValue(ref: NonNullable<EnvVarSource['fieldRef']>, pod: Pod, ctx: EnvContext): string {
  const version = ref.apiVersion ?? '';
  if (version !== '' && version !== 'v1') {
    throw new KindError('InvalidArgument', `unsupported pod version: ${version}`, {
      fieldPath: ref.fieldPath,
    });
  }
  const path = ref.fieldPath;
  const sub = SUBSCRIPTED.exec(path);
  if (!sub && !SUPPORTED_FIELD_LABELS.has(path)) {
    throw new KindError('InvalidArgument', `field label not supported: ${path}`, { fieldPath: path });
  }
  const podIPs = ctx.podIPs.length > 0 ? ctx.podIPs : ctx.podIP ? [ctx.podIP] : [];
  switch (path) {
    case 'spec.nodeName':
      return ctx.nodeName;
    case 'spec.serviceAccountName':
      return ctx.serviceAccountName;
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? ctx.hostIP;
    case 'status.hostIPs':
      return (ctx.hostIPs.length > 0 ? ctx.hostIPs : ctx.hostIP ? [ctx.hostIP] : []).join(',');
    case 'status.podIP':
      return podIPs[0] ?? '';
    case 'status.podIPs':
      return podIPs.join(',');
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
  }
  if (sub) {
    const [, field, key = ''] = sub;
    const map = field === 'metadata.labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[key] ?? '';
  }
  // Accepted labels that fieldpath.ExtractFieldPathAsString cannot read (spec.restartPolicy, status.phase, ...).
  throw new KindError('InvalidArgument', `unsupported fieldPath: ${path}`, { fieldPath: path });
}

// -------------------------------------------------------------------------------------- resource refs

function resourceFieldRefValue(
  ref: NonNullable<EnvVarSource['resourceFieldRef']>,
  pod: Pod,
  container: Container,
  ctx: EnvContext,
): string {
  let target = container;
  if (ref.containerName) {
    const found = findContainerInPod(pod, ref.containerName);
    if (!found) {
      throw new KindError('InvalidArgument', containerNotFoundMessage(ref.containerName), {
        container: ref.containerName,
      });
    }
    target = found;
  }
  const parsed = parseContainerResourceName(ref.resource);
  if (!parsed) {
    throw new KindError('InvalidArgument', unsupportedResourceMessage(ref.resource), {
      resource: ref.resource,
    });
  }
  const allocatable = downwardAPIAllocatable(pod, ctx.nodeAllocatable);
  return containerResourceValue(target, parsed, ref.divisor, allocatable);
}

// --------------------------------------------------------------------------------------- the builder

function notFound(kind: 'configmap' | 'secret', name: string): KindError {
  // The kubelet's watch-based managers word it with the singular resource.
  return new KindError('NotFound', `${kind} ${JSON.stringify(name)} not found`, { [kind]: name });
}

/**
 * The value of a `fileKeyRef` (kubelet makeEnvironmentVariables, EnvFiles on): undefined when the key is
 * absent or empty and the ref is optional. Throws with the kubelet's messages: the volume missing, the file
 * unreadable or malformed (one message for both, the details only logged), the key absent or empty.
 */
function fileKeyRefValue(
  ref: NonNullable<EnvVarSource['fileKeyRef']>,
  files: EnvSources['envFiles'],
): string | undefined {
  const file = files?.get(envFileKey(ref.volumeName, ref.path)) ?? { kind: 'noVolume' };
  const context = { volume: ref.volumeName, path: ref.path, key: ref.key };
  if (file.kind === 'noVolume') {
    throw new KindError(
      'NotFound',
      `cannot find the volume ${JSON.stringify(ref.volumeName)} referenced by FileKeyRef`,
      context,
    );
  }
  if (file.kind === 'badPath') throw new KindError('InvalidArgument', file.error, context);
  const found: ReturnType<typeof lookupEnvFile> =
    file.kind === 'read' ? lookupEnvFile(file.content, ref.key) : { ok: false, error: file.error };
  if (!found.ok) {
    throw new KindError('InvalidArgument', "couldn't parse env file", { ...context, err: found.error });
  }
  if (found.value !== '') return found.value;
  if (ref.optional) return undefined;
  throw new KindError(
    'NotFound',
    `environment variable key ${JSON.stringify(ref.key)} not found in file ${JSON.stringify(file.path)}`,
    context,
  );
}

/**
 * The container's environment (see the module comment for the order). Throws a KindError with the kubelet's
 * message when a non-optional reference cannot be resolved: `NotFound` for a missing ConfigMap/Secret
 * (`configmap "x" not found`) or key (`couldn't find key k in ConfigMap ns/x`), `InvalidArgument` for an
 * unsupported field or resource reference; for a `fileKeyRef` see fileKeyRefValue.
 */
export function makeEnvironmentVariables(
  pod: Pod,
  container: Container,
  sources: EnvSources,
  ctx: EnvContext,
): EnvironmentResult {
  const ns = pod.metadata.namespace ?? '';
  const rule = ctx.envVarNames ?? 'relaxed';
  const tmpEnv = new Map<string, string>();
  const skipped: SkippedEnvFromKeys[] = [];

  for (const from of container.envFrom ?? []) {
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    const isConfigMap = from.configMapRef !== undefined;
    const data = (isConfigMap ? sources.configMaps : sources.secrets).get(ref.name);
    if (data === undefined) {
      if (ref.optional) continue;
      throw notFound(isConfigMap ? 'configmap' : 'secret', ref.name);
    }
    const invalid: string[] = [];
    for (const [key, value] of Object.entries(data)) {
      const name = `${from.prefix ?? ''}${key}`;
      if (!isUsableName(name, rule)) {
        invalid.push(key);
        continue;
      }
      tmpEnv.set(name, value);
    }
    if (invalid.length > 0) {
      skipped.push({ kind: isConfigMap ? 'ConfigMap' : 'Secret', name: ref.name, keys: invalid.sort() });
    }
  }

  const mapping = mappingFor(tmpEnv, ctx.serviceEnv);
  for (const e of container.env ?? []) {
    let value = e.value ?? '';
    if (value !== '') {
      value = expand(value, mapping);
    } else if (e.valueFrom) {
      const src = e.valueFrom;
      if (src.fieldRef) {
        value = fieldRefValue(src.fieldRef, pod, ctx);
      } else if (src.resourceFieldRef) {
        value = resourceFieldRefValue(src.resourceFieldRef, pod, container, ctx);
      } else if (src.configMapKeyRef || src.secretKeyRef) {
        const isConfigMap = src.configMapKeyRef !== undefined;
        const ref = (src.configMapKeyRef ?? src.secretKeyRef)!;
        const data = (isConfigMap ? sources.configMaps : sources.secrets).get(ref.name);
        if (data === undefined) {
          if (ref.optional) continue;
          throw notFound(isConfigMap ? 'configmap' : 'secret', ref.name);
        }
        if (!Object.prototype.hasOwnProperty.call(data, ref.key)) {
          if (ref.optional) continue;
          throw new KindError(
            'NotFound',
            `couldn't find key ${ref.key} in ${isConfigMap ? 'ConfigMap' : 'Secret'} ${ns}/${ref.name}`,
            { key: ref.key, [isConfigMap ? 'configmap' : 'secret']: ref.name },
          );
        }
        value = data[ref.key] ?? '';
      } else if (src.fileKeyRef) {
        const found = fileKeyRefValue(src.fileKeyRef, sources.envFiles);
        if (found === undefined) continue;
        value = found;
      }
    }
    tmpEnv.set(e.name, value);
  }

  const env: EnvVarValue[] = [...tmpEnv].map(([name, value]) => ({ name, value }));
  for (const [name, value] of Object.entries(ctx.serviceEnv ?? {})) {
    if (!tmpEnv.has(name)) env.push({ name, value });
  }
  return { env, skipped };
}

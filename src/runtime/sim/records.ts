/**
 * What the simulated runtime keeps of a sandbox or container config: the records store.ts indexes. Pure;
 * the runtime has already validated the config, reserved the name and chosen the ID, IP and behaviour.
 * Records copy what they keep, so a caller changing its config afterwards changes nothing here.
 */
import { posix } from 'node:path';
import type { ContainerConfig, Image, Mount, PodSandboxConfig } from '../types.js';
import type { Behaviour } from './behaviour.js';
import type { ContainerRecord, SandboxRecord } from './store.js';

const NO_MOUNTS: readonly Mount[] = Object.freeze([]);

/** A ready sandbox for `config` (whose metadata the runtime checked). */
export function sandboxRecord(
  config: PodSandboxConfig,
  fixed: { id: string; nameKey: string; ip: string; createdAt: bigint },
): SandboxRecord {
  const md = config.metadata;
  const networkMode = config.linux?.securityContext?.namespaceOptions?.network ?? 'POD';
  return {
    id: fixed.id,
    metadata: { name: md.name, uid: md.uid, namespace: md.namespace, attempt: md.attempt ?? 0 },
    state: 'ready',
    createdAt: fixed.createdAt,
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    networkMode,
    ip: fixed.ip,
    podNetwork: networkMode !== 'NODE',
    logDirectory: config.logDirectory ?? '',
    hostname: config.hostname ?? '',
    nameKey: fixed.nameKey,
    containers: new Set(),
  };
}

/**
 * A created, never started container in `sandbox` running `image`. Its log path is the sandbox's log
 * directory joined with the config's (none when either is empty); status reports the image's repo tag and
 * digest, as containerd does.
 */
export function containerRecord(
  config: ContainerConfig,
  sandbox: SandboxRecord,
  image: Image,
  fixed: { id: string; nameKey: string; behaviour: Behaviour; createdAt: bigint },
): ContainerRecord {
  return {
    id: fixed.id,
    sandboxId: sandbox.id,
    metadata: { name: config.metadata.name, attempt: config.metadata.attempt ?? 0 },
    image: config.image,
    imageId: image.id,
    statusImage: image.repoTags[0] ?? config.image,
    statusImageRef: image.repoDigests[0] ?? image.id,
    labels: { ...config.labels },
    annotations: { ...config.annotations },
    logPath: sandbox.logDirectory && config.logPath ? posix.join(sandbox.logDirectory, config.logPath) : '',
    env: config.envs?.length ? Object.fromEntries(config.envs.map((e) => [e.key, e.value])) : {},
    mounts: config.mounts?.length ? config.mounts.map((m) => ({ ...m })) : NO_MOUNTS,
    behaviour: fixed.behaviour,
    resources: config.linux?.resources ? { ...config.linux.resources } : undefined,
    pendingResize: undefined,
    nameKey: fixed.nameKey,
    createdAt: fixed.createdAt,
    state: 'created',
    starting: false,
    startedAt: 0n,
    startedMs: 0,
    finishedAt: 0n,
    finishedMs: 0,
    exitCode: 0,
    reason: '',
    message: '',
    exitTimer: undefined,
    killTimer: undefined,
    killAt: Infinity,
    waiters: undefined,
  };
}

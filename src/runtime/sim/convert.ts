/**
 * Records to the Runtime's result types. Every result is a fresh object: callers own what they get.
 */
import type { Container, ContainerStatus, PodSandbox, PodSandboxStatus, StatsAttributes } from '../types.js';
import type { ContainerRecord, SandboxRecord } from './store.js';

export function toPodSandbox(s: SandboxRecord): PodSandbox {
  return {
    id: s.id,
    metadata: { ...s.metadata },
    state: s.state,
    createdAt: s.createdAt,
    labels: { ...s.labels },
    annotations: { ...s.annotations },
  };
}

export function toPodSandboxStatus(s: SandboxRecord): PodSandboxStatus {
  return { ...toPodSandbox(s), network: { ip: s.ip, additionalIps: [] }, networkMode: s.networkMode };
}

/** As ListContainers reports it: the image as configured, and the image ID. */
export function toContainer(c: ContainerRecord): Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: { ...c.metadata },
    image: c.image,
    imageRef: c.imageId,
    state: c.state,
    createdAt: c.createdAt,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
  };
}

/** As ContainerStatus reports it: the image's repo tag and repo digest, as containerd does. */
export function toContainerStatus(c: ContainerRecord): ContainerStatus {
  return {
    ...toContainer(c),
    image: c.statusImage,
    imageRef: c.statusImageRef,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    exitCode: c.exitCode,
    reason: c.reason,
    message: c.message,
    logPath: c.logPath,
    ...(c.mounts.length > 0 ? { mounts: c.mounts.map((m) => ({ ...m })) } : {}),
    ...(c.resources ? { resources: { ...c.resources } } : {}),
  };
}

/** The container's log lines written by now, in the CRI format `<RFC3339Nano> <stream> F <line>`. */
export function criLogLines(c: ContainerRecord, nowMs: number): string[] {
  if (c.startedAt === 0n) return [];
  const until = (c.state === 'exited' ? c.finishedMs : nowMs) - c.startedMs;
  return c.behaviour.logs
    .filter((l) => l.afterMs <= until)
    .map((l) => `${rfc3339Nano(c.startedAt + BigInt(l.afterMs) * 1_000_000n)} ${l.stream} F ${l.line}`);
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros. */
export function rfc3339Nano(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${new Date(ms).toISOString().slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

/** Stats attributes as ListContainerStats / ListPodSandboxStats report them (copies). */
export function statsAttributes<M extends object>(r: {
  id: string;
  metadata: M;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}): StatsAttributes<M> {
  return {
    id: r.id,
    metadata: { ...r.metadata },
    labels: { ...r.labels },
    annotations: { ...r.annotations },
  };
}

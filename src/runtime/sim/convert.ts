/**
 * Records to the Runtime's result types. Every result is a fresh object; the label, annotation and metadata
 * maps in it are the records' own (a relist converts every sandbox and container of the node each second,
 * and copies of them were most of what it allocated): read-only by the Runtime's types, and the shared
 * annotation and metadata maps frozen as well.
 */
import type {
  Container,
  ContainerMetadata,
  ContainerStatus,
  PodSandbox,
  PodSandboxMetadata,
  PodSandboxStatus,
  StatsAttributes,
} from '../types.js';
import {
  finishedAt,
  finishedMs,
  ipOf,
  logPathOf,
  sandboxMetadata,
  startedAt,
  type ContainerRecord,
  type SandboxRecord,
} from './records.js';
import { mountsOf } from './spec.js';

export function toPodSandbox(s: SandboxRecord): PodSandbox {
  return {
    id: s.id,
    metadata: sandboxMetadata(s),
    state: s.state,
    createdAt: s.createdAt,
    labels: s.labels,
    annotations: s.annotations,
  };
}

export function toPodSandboxStatus(s: SandboxRecord): PodSandboxStatus {
  return { ...toPodSandbox(s), network: { ip: ipOf(s), additionalIps: [] }, networkMode: s.networkMode };
}

/** As ListContainers reports it: the image as configured, and the image ID. */
export function toContainer(c: ContainerRecord): Container {
  return {
    id: c.id,
    podSandboxId: c.sandbox.id,
    metadata: c.spec.metadata,
    image: c.spec.image,
    imageRef: c.spec.imageId,
    state: c.state,
    createdAt: c.createdAt,
    labels: c.labels,
    annotations: c.spec.annotations,
  };
}

/**
 * As ContainerStatus reports it: the image's repo tag and repo digest, as containerd does. One literal with
 * every field, toContainer's included: spreading toContainer's answer and adding fields after it builds new
 * hidden classes, and garbage, on every call.
 */
export function toContainerStatus(c: ContainerRecord): ContainerStatus {
  const out: ContainerStatus = {
    id: c.id,
    podSandboxId: c.sandbox.id,
    metadata: c.spec.metadata,
    image: c.spec.statusImage,
    imageRef: c.spec.statusImageRef,
    state: c.state,
    createdAt: c.createdAt,
    labels: c.labels,
    annotations: c.spec.annotations,
    startedAt: startedAt(c),
    finishedAt: finishedAt(c),
    exitCode: c.exit?.code ?? 0,
    reason: c.exit?.reason ?? '',
    message: c.exit?.message ?? '',
    logPath: logPathOf(c),
  };
  if (c.spec.mounts.length > 0) out.mounts = mountsOf(c.spec, c.hostPaths);
  if (c.resources) out.resources = { ...c.resources };
  const u = c.spec.user;
  out.user = { linux: { uid: u.uid, gid: u.gid, supplementalGroups: [...u.groups] } };
  return out;
}

/** The container's log lines written by now, in the CRI format `<RFC3339Nano> <stream> F <line>`. */
export function criLogLines(c: ContainerRecord, nowMs: number): string[] {
  const started = startedAt(c);
  if (started === 0n) return [];
  const until = (c.state === 'exited' ? finishedMs(c) : nowMs) - c.startedMs;
  return c.behaviour.logs
    .filter((l) => l.afterMs <= until)
    .map((l) => `${rfc3339Nano(started + BigInt(l.afterMs) * 1_000_000n)} ${l.stream} F ${l.line}`);
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros. */
export function rfc3339Nano(ns: bigint): string {
  const ms = Number(ns / 1_000_000n);
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${new Date(ms).toISOString().slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

/** Stats attributes as ListContainerStats / ListPodSandboxStats report them (the records' frozen maps). */
export function containerAttributes(c: ContainerRecord): StatsAttributes<ContainerMetadata> {
  return {
    id: c.id,
    metadata: c.spec.metadata,
    labels: c.labels,
    annotations: c.spec.annotations,
  };
}

export function sandboxAttributes(s: SandboxRecord): StatsAttributes<PodSandboxMetadata> {
  return {
    id: s.id,
    metadata: sandboxMetadata(s),
    labels: s.labels,
    annotations: s.annotations,
  };
}

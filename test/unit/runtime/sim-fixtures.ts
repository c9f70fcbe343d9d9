// A SimRuntime under a FakeClock with one-call pods and containers: what the usage and OOM tests share.
import { ContainerNameLabel, PodUIDLabel } from '../../../src/runtime/labels.js';
import {
  SimBehaviourAnnotation,
  SimRuntime,
  type SimRuntimeOptions,
} from '../../../src/runtime/sim/index.js';
import type {
  ContainerConfig,
  LinuxContainerResources,
  PodSandboxConfig,
} from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';

export const IMAGE = 'docker.io/library/busybox:latest';
/** A process running as root with no other group (what a container of a plain simulated image gets). */
export const ROOT = Object.freeze({ uid: 0, gid: 0, groups: Object.freeze([0]) });
/** 2026-01-01T00:00:00Z, a whole minute on the clock. */
export const T0 = Date.UTC(2026, 0, 1);
export const MI = 2 ** 20;

export interface RunOptions {
  /** The container's behaviour annotation (YAML or JSON), or data to JSON-encode. */
  behaviour?: unknown;
  resources?: LinuxContainerResources;
  attempt?: number;
  image?: string;
  annotations?: Record<string, string>;
  argv?: string[];
}

export function newSim(opts: Partial<SimRuntimeOptions> = {}) {
  const clock = new FakeClock(T0);
  const sim = new SimRuntime({ clock, images: [IMAGE], ...opts });
  let seq = 0;

  async function pod(): Promise<{ id: string; config: PodSandboxConfig }> {
    const n = seq++;
    const config: PodSandboxConfig = {
      metadata: { name: `pod-${n}`, uid: `uid-${n}`, namespace: 'default', attempt: 0 },
      labels: { [PodUIDLabel]: `uid-${n}` },
      annotations: {},
    };
    return { id: await sim.runPodSandbox(config), config };
  }

  async function create(
    p: { id: string; config: PodSandboxConfig },
    name: string,
    o: RunOptions = {},
  ): Promise<string> {
    const annotations = { ...o.annotations };
    if (o.behaviour !== undefined)
      annotations[SimBehaviourAnnotation] =
        typeof o.behaviour === 'string' ? o.behaviour : JSON.stringify(o.behaviour);
    const config: ContainerConfig = {
      metadata: { name, attempt: o.attempt ?? 0 },
      image: o.image ?? IMAGE,
      command: o.argv ?? ['sleep', 'infinity'],
      labels: { [PodUIDLabel]: p.config.metadata.uid, [ContainerNameLabel]: name },
      annotations,
      ...(o.resources && { linux: { resources: o.resources } }),
    };
    return sim.createContainer(p.id, config, p.config);
  }

  async function run(p: { id: string; config: PodSandboxConfig }, name: string, o: RunOptions = {}) {
    const id = await create(p, name, o);
    await sim.startContainer(id);
    return id;
  }

  /** Moves the clock to `ms` after T0. */
  const at = (ms: number): void => clock.set(T0 + ms);

  return { sim, clock, pod, create, run, at };
}

/** Nanoseconds since the epoch of T0 + `ms`. */
export const ns = (ms: number): bigint => BigInt(T0 + ms) * 1_000_000n;

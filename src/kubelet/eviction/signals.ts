/**
 * Eviction signals (kubelet: pkg/kubelet/eviction/api and the maps of helpers.go): what each signal
 * measures, the node condition it raises and the resource it starves, and the kubelet's default
 * evictionHard. Every signal is compared with LessThan: a threshold is met when less is available.
 */

export const Signals = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;

export type Signal = (typeof Signals)[number];

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The order node conditions are reported in (the kubelet's order is that of a Go map, so any). */
export const PressureConditions: readonly PressureCondition[] = [
  'MemoryPressure',
  'DiskPressure',
  'PIDPressure',
];

/** The resource a signal starves: what the eviction message says the node was low on. */
export type StarvedResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

export const signalToNodeCondition: Readonly<Record<Signal, PressureCondition>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

export const signalToResource: Readonly<Record<Signal, StarvedResource>> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export function isSignal(s: string): s is Signal {
  return (Signals as readonly string[]).includes(s);
}

export function isMemorySignal(s: Signal): boolean {
  return s === 'memory.available' || s === 'allocatableMemory.available';
}

/** The kubelet's evictionHard when its configuration sets none (Linux and other non-Windows nodes). */
export const DefaultEvictionHard: Readonly<Record<string, string>> = {
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
};

/**
 * The evictionHard the kubelet runs with: the default when the configuration has none; with
 * mergeDefaultEvictionSettings, the configured entries plus the defaults of the signals they leave out;
 * otherwise exactly what is configured (an empty map disables hard eviction).
 */
export function effectiveEvictionHard(
  configured: Readonly<Record<string, string>> | undefined,
  mergeDefaultEvictionSettings = false,
): Record<string, string> {
  if (configured === undefined) return { ...DefaultEvictionHard };
  if (!mergeDefaultEvictionSettings) return { ...configured };
  return { ...DefaultEvictionHard, ...configured };
}

/** The kubelet's evictionPressureTransitionPeriod default, 5 minutes, in milliseconds. */
export const DefaultPressureTransitionPeriodMs = 5 * 60 * 1000;
/** The kubelet's evictionMaxPodGracePeriod default, in seconds. */
export const DefaultMaxPodGracePeriodSeconds = 0;

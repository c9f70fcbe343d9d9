/**
 * The static policy's options (cpuManagerPolicyOptions) and their maturity, as v1.37 has them: alpha options
 * need CPUManagerPolicyAlphaOptions (off by default), beta ones CPUManagerPolicyBetaOptions (on by default),
 * GA ones nothing. Refusals carry the kubelet's messages. Pure.
 */
import type { CPUTopology } from './topology.js';
import { parseGoBool } from '../topologymanager/policy.js';

export const FULL_PCPUS_ONLY = 'full-pcpus-only';
export const DISTRIBUTE_CPUS_ACROSS_NUMA = 'distribute-cpus-across-numa';
export const ALIGN_BY_SOCKET = 'align-by-socket';
export const DISTRIBUTE_CPUS_ACROSS_CORES = 'distribute-cpus-across-cores';
export const STRICT_CPU_RESERVATION = 'strict-cpu-reservation';
export const PREFER_ALIGN_BY_UNCORE_CACHE = 'prefer-align-cpus-by-uncorecache';

const ALPHA = new Set([ALIGN_BY_SOCKET, DISTRIBUTE_CPUS_ACROSS_CORES]);
const BETA = new Set([DISTRIBUTE_CPUS_ACROSS_NUMA]);
const STABLE = new Set([FULL_PCPUS_ONLY, STRICT_CPU_RESERVATION, PREFER_ALIGN_BY_UNCORE_CACHE]);

/** The feature gates that decide which options may be used (v1.37 defaults: alpha off, beta on). */
export interface CPUManagerGates {
  CPUManagerPolicyAlphaOptions: boolean;
  CPUManagerPolicyBetaOptions: boolean;
}
export const DEFAULT_CPU_MANAGER_GATES: CPUManagerGates = {
  CPUManagerPolicyAlphaOptions: false,
  CPUManagerPolicyBetaOptions: true,
};

export interface StaticPolicyOptions {
  fullPhysicalCPUsOnly: boolean;
  distributeCPUsAcrossNUMA: boolean;
  alignBySocket: boolean;
  distributeCPUsAcrossCores: boolean;
  strictCPUReservation: boolean;
  preferAlignByUncoreCache: boolean;
}

export function checkPolicyOptionAvailable(option: string, gates: CPUManagerGates): void {
  if (!ALPHA.has(option) && !BETA.has(option) && !STABLE.has(option))
    throw new Error(`unknown CPU Manager Policy option: "${option}"`);
  if (ALPHA.has(option) && !gates.CPUManagerPolicyAlphaOptions)
    throw new Error(`CPU Manager Policy Alpha-level Options not enabled, but option "${option}" provided`);
  if (BETA.has(option) && !gates.CPUManagerPolicyBetaOptions)
    throw new Error(`CPU Manager Policy Beta-level Options not enabled, but option "${option}" provided`);
}

const FIELD: Record<string, keyof StaticPolicyOptions> = {
  [FULL_PCPUS_ONLY]: 'fullPhysicalCPUsOnly',
  [DISTRIBUTE_CPUS_ACROSS_NUMA]: 'distributeCPUsAcrossNUMA',
  [ALIGN_BY_SOCKET]: 'alignBySocket',
  [DISTRIBUTE_CPUS_ACROSS_CORES]: 'distributeCPUsAcrossCores',
  [STRICT_CPU_RESERVATION]: 'strictCPUReservation',
  [PREFER_ALIGN_BY_UNCORE_CACHE]: 'preferAlignByUncoreCache',
};

/** NewStaticPolicyOptions: each option checked, parsed as a Go bool, and the incompatible pairs refused. */
export function newStaticPolicyOptions(
  raw: Readonly<Record<string, string>>,
  gates: CPUManagerGates = DEFAULT_CPU_MANAGER_GATES,
): StaticPolicyOptions {
  const o: StaticPolicyOptions = {
    fullPhysicalCPUsOnly: false,
    distributeCPUsAcrossNUMA: false,
    alignBySocket: false,
    distributeCPUsAcrossCores: false,
    strictCPUReservation: false,
    preferAlignByUncoreCache: false,
  };
  for (const [name, value] of Object.entries(raw)) {
    checkPolicyOptionAvailable(name, gates);
    const b = parseGoBool(value);
    if (b === undefined)
      throw new Error(
        `bad value for option "${name}": strconv.ParseBool: parsing "${value}": invalid syntax`,
      );
    o[FIELD[name]!] = b;
  }
  const pairs: [keyof StaticPolicyOptions, string, keyof StaticPolicyOptions, string][] = [
    ['fullPhysicalCPUsOnly', FULL_PCPUS_ONLY, 'distributeCPUsAcrossCores', DISTRIBUTE_CPUS_ACROSS_CORES],
    [
      'distributeCPUsAcrossNUMA',
      DISTRIBUTE_CPUS_ACROSS_NUMA,
      'distributeCPUsAcrossCores',
      DISTRIBUTE_CPUS_ACROSS_CORES,
    ],
    [
      'preferAlignByUncoreCache',
      PREFER_ALIGN_BY_UNCORE_CACHE,
      'distributeCPUsAcrossCores',
      DISTRIBUTE_CPUS_ACROSS_CORES,
    ],
    [
      'preferAlignByUncoreCache',
      PREFER_ALIGN_BY_UNCORE_CACHE,
      'distributeCPUsAcrossNUMA',
      DISTRIBUTE_CPUS_ACROSS_NUMA,
    ],
  ];
  for (const [a, an, b, bn] of pairs) {
    if (o[a] && o[b])
      throw new Error(`static policy options ${an} and ${bn} can not be used at the same time`);
  }
  return o;
}

/** ValidateStaticPolicyOptions: align-by-socket against the topology manager's policy and the hardware. */
export function validateStaticPolicyOptions(
  o: StaticPolicyOptions,
  topo: CPUTopology,
  topologyPolicy: string,
): void {
  if (!o.alignBySocket) return;
  if (topologyPolicy === 'single-numa-node')
    throw new Error(
      `Topolgy manager single-numa-node policy is incompatible with CPUManager ${ALIGN_BY_SOCKET} policy option`,
    );
  if (topo.numSockets > topo.numNUMANodes)
    throw new Error(
      'Align by socket is not compatible with hardware where number of sockets are more than number of NUMA',
    );
}

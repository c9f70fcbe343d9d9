// The setup the single-agent scenarios share: our operator compiled by tsc, a bench control plane with the
// VirtualNode CRD, and the operator process serving the nodes labelled for the benchmark. Both are stopped when
// the scenario's function returns or throws.
import path from 'node:path';
import { buildOperator, startOperatorProcess, type AgentProcess } from './agents.js';
import { startBenchCluster, type BenchCluster } from './cluster.js';
import { SERVED_BY } from './nodes.js';
import { duration } from './table.js';

export interface OperatorCluster {
  bc: BenchCluster;
  agent: AgentProcess;
  /** How long `npm run build` (tsc) took. */
  buildMs: number;
}

export interface OperatorClusterOptions {
  /** More operator flags, computed once the control plane is up (e.g. node API certificates of its CA). */
  operatorArgs?: (bc: BenchCluster) => Promise<string[]>;
}

export async function withOperatorCluster<T>(
  nodeArgs: string[] | undefined,
  log: (s: string) => void,
  fn: (c: OperatorCluster) => Promise<T>,
  opts: OperatorClusterOptions = {},
): Promise<T> {
  const buildMs = await buildOperator(nodeArgs);
  log(`operator compiled by tsc into dist/ in ${duration(buildMs)}`);
  // These scenarios count every request of the operator alone, Events included (few: none while pods are
  // healthy), so they audit Events as before; only scale's side-by-side leaves them out (bench/lib/audit.ts).
  const bc = await startBenchCluster({ auditEvents: true });
  log(`control plane up in ${duration(bc.cp.startMs)} (${bc.dir})`);
  try {
    const extraArgs = (await opts.operatorArgs?.(bc)) ?? [];
    const agent = await startOperatorProcess({
      kubeconfig: bc.operator.kubeconfig,
      selector: `kubelet-operator.dev/served-by=${SERVED_BY}`,
      logPath: path.join(bc.dir, 'operator.log'),
      nodeArgs,
      extraArgs,
    });
    try {
      return await fn({ bc, agent, buildMs });
    } finally {
      await agent.stop();
    }
  } finally {
    await bc.stop();
  }
}

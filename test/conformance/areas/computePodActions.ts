/**
 * computePodActions cases: build the pod, the runtime view and the probe caches from `given`, run
 * computePodActions, and compare the action record with `expect.actions` (containersToKill as a set).
 */
import { computePodActions, type PodActions } from '../../../src/kubelet/kuberuntime/actions.js';
import { all, expectEqual } from '../compare.js';
import { Uninterpretable, type AreaInterpreter, type Verdict } from '../types.js';
import { buildPod, buildProbeResults, buildRuntime, isRecord, onlyKeys } from './computePodActions-build.js';

const actionFields = [
  'killPod',
  'createSandbox',
  'sandboxID',
  'attempt',
  'initContainersToStart',
  'containersToStart',
  'ephemeralContainersToStart',
  'containersToKill',
] as const;
type ActionField = (typeof actionFields)[number];

/** Resize-related fields the schema says to ignore. */
const ignoredFields = ['containersToUpdate', 'updatePodResources'];

const setFields: ReadonlySet<ActionField> = new Set(['containersToKill']);

function actualField(actions: PodActions, field: ActionField): unknown {
  if (field === 'containersToKill') return [...actions.containersToKill.keys()].map(String).sort();
  return actions[field];
}

function expectedField(expected: unknown, field: ActionField): unknown {
  if (!setFields.has(field)) return expected;
  // A set: a list of IDs, or a mapping keyed by ID.
  const ids = Array.isArray(expected) ? expected : isRecord(expected) ? Object.keys(expected) : undefined;
  if (!ids || ids.some((x) => typeof x !== 'string')) {
    throw new Uninterpretable(`expect.actions.${field}: expected a list of container IDs`);
  }
  return [...(ids as string[])].sort();
}

function fieldsToCompare(
  c: { expect: Record<string, unknown> },
  expected: Record<string, unknown>,
): ActionField[] {
  const listed = c.expect.compareFields;
  const names =
    listed === undefined ? Object.keys(expected).filter((k) => !ignoredFields.includes(k)) : listed;
  if (!Array.isArray(names)) throw new Uninterpretable('expect.compareFields: expected a list');
  return names.map((n) => {
    if (typeof n !== 'string') throw new Uninterpretable(`expect.compareFields: ${JSON.stringify(n)}`);
    // compareFields may name the field bare or as a path under actions.
    const f = n.replace(/^actions\./, '');
    if (!(actionFields as readonly string[]).includes(f)) {
      throw new Uninterpretable(`unknown action field '${n}'`);
    }
    if (!Object.hasOwn(expected, f))
      throw new Uninterpretable(`compareFields names '${n}' but expect lacks it`);
    return f as ActionField;
  });
}

export const interpretComputePodActions: AreaInterpreter = (c, file) => {
  onlyKeys(c.given, ['pod', 'runtime', 'probeResults', 'featureGates'], 'given');
  onlyKeys(c.expect, ['actions', 'compareFields'], 'expect');
  if (!isRecord(c.expect.actions)) throw new Uninterpretable('expect.actions: expected a mapping');
  const expected = c.expect.actions;
  onlyKeys(expected, [...actionFields, ...ignoredFields], 'expect.actions');

  const pod = buildPod(c.given.pod, file);
  const runtime = buildRuntime(c.given.runtime, pod);
  const probes = buildProbeResults(c.given.probeResults);
  let featureGates: Record<string, boolean> | undefined;
  if (c.given.featureGates !== undefined) {
    if (
      !isRecord(c.given.featureGates) ||
      Object.values(c.given.featureGates).some((v) => typeof v !== 'boolean')
    ) {
      throw new Uninterpretable('given.featureGates: expected a mapping of gate -> boolean');
    }
    featureGates = c.given.featureGates as Record<string, boolean>;
  }

  const actions = computePodActions(pod, runtime, probes, featureGates ? { featureGates } : {});
  const verdicts: Verdict[] = fieldsToCompare(c, expected).map((f) =>
    expectEqual(actualField(actions, f), expectedField(expected[f], f), `actions.${f}`),
  );
  if (!verdicts.length) throw new Uninterpretable('the case asserts no action field');
  return all(...verdicts);
};

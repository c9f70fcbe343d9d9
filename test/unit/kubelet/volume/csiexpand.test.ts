import { expect } from 'chai';
import {
  markFailedPatch,
  markFinishedPatch,
  markInProgressPatch,
  nodeExpansionDecision,
  type ExpandableClaim,
  type NodeExpansionDecision,
} from '../../../../src/kubelet/volume/csiexpand.js';

function claim(
  status: NonNullable<ExpandableClaim['status']>,
  spec = '2Gi',
  modes = ['ReadWriteOnce'],
): ExpandableClaim {
  return {
    metadata: { name: 'data', namespace: 'ns', resourceVersion: '7' },
    spec: { accessModes: modes, resources: { requests: { storage: spec } } },
    status,
  };
}

describe('volume/csiexpand (node expansion, RecoverVolumeExpansionFailure)', () => {
  const GI = 1024 ** 3;
  /** An expansion to `gi` GiB, marked in progress first. */
  const expandTo = (gi: number, infeasibleOnFailure = false): NodeExpansionDecision => ({
    action: 'expand',
    newSize: `${gi}Gi`,
    newSizeBytes: gi * GI,
    markInProgress: true,
    infeasibleOnFailure,
  });
  const cases: [string, ExpandableClaim, string | undefined, boolean, boolean, NodeExpansionDecision][] = [
    [
      'the PV is no bigger than the claim',
      claim({ capacity: { storage: '2Gi' } }),
      '2Gi',
      false,
      false,
      { action: 'none' },
    ],
    ['no PV capacity', claim({ capacity: { storage: '1Gi' } }), undefined, false, false, { action: 'none' }],
    [
      'a read-only mount',
      claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizePending' } }),
      '2Gi',
      true,
      false,
      { action: 'readOnly' },
    ],
    [
      'NodeResizePending: marked in progress, grown to the allocated size',
      claim({
        capacity: { storage: '1Gi' },
        allocatedResources: { storage: '2Gi' },
        allocatedResourceStatuses: { storage: 'NodeResizePending' },
      }),
      '2Gi',
      false,
      false,
      expandTo(2),
    ],
    [
      'NodeResizeInProgress (a restart in the middle): expanded again',
      claim({
        capacity: { storage: '1Gi' },
        allocatedResources: { storage: '2Gi' },
        allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
      }),
      '2Gi',
      false,
      false,
      expandTo(2),
    ],
    [
      'after a final failure, a smaller size asked by the user: a failure now is infeasible',
      claim(
        {
          capacity: { storage: '1Gi' },
          allocatedResources: { storage: '3Gi' },
          allocatedResourceStatuses: { storage: 'NodeResizePending' },
        },
        '2Gi',
      ),
      '3Gi',
      false,
      true,
      expandTo(3, true),
    ],
    [
      'the controller is still resizing',
      claim({
        capacity: { storage: '1Gi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
      }),
      '2Gi',
      false,
      false,
      { action: 'notAllowed', resizeStatus: 'ControllerResizeInProgress' },
    ],
    [
      'node expansion already infeasible',
      claim({ capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' } }),
      '2Gi',
      false,
      false,
      { action: 'notAllowed', resizeStatus: 'NodeResizeInfeasible' },
    ],
    [
      'no status from the resizer at all',
      claim({ capacity: { storage: '1Gi' } }),
      '2Gi',
      false,
      false,
      { action: 'notAllowed', resizeStatus: '' },
    ],
    [
      'the claim already shows the allocated size',
      claim({ capacity: { storage: '2Gi' }, allocatedResources: { storage: '2Gi' } }),
      '3Gi',
      false,
      false,
      { action: 'assumeDone' },
    ],
  ];
  for (const [what, c, pv, ro, failed, want] of cases) {
    it(what, () =>
      expect(
        nodeExpansionDecision({ claim: c, pvCapacity: pv, readOnly: ro, failedFinalBefore: failed }),
      ).to.deep.equal(want),
    );
  }

  const conditions = [
    { type: 'FileSystemResizePending', status: 'True' },
    { type: 'Other', status: 'True' },
  ];

  it('in progress: the storage status, conditional on the resourceVersion', () => {
    expect(markInProgressPatch(claim({}))).to.deep.equal({
      metadata: { resourceVersion: '7' },
      status: { allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } },
    });
  });

  it('finished: the new capacity, the storage status removed, resize conditions dropped, others kept', () => {
    expect(markFinishedPatch(claim({ conditions }), '2Gi')).to.deep.equal({
      metadata: { resourceVersion: '7' },
      status: {
        capacity: { storage: '2Gi' },
        allocatedResourceStatuses: { storage: null },
        conditions: [{ type: 'Other', status: 'True' }],
      },
    });
  });

  it('failed: a NodeResizeError condition beside the old ones; infeasible also marks the status', () => {
    const err = {
      type: 'NodeResizeError',
      status: 'True',
      lastTransitionTime: 'T',
      message: 'failed to expand pvc with boom',
    };
    expect(markFailedPatch(claim({ conditions }), 'boom', false, 'T')).to.deep.equal({
      status: { conditions: [...conditions, err] },
    });
    expect(markFailedPatch(claim({}), 'boom', true, 'T')).to.deep.equal({
      status: { allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' }, conditions: [err] },
    });
  });
});

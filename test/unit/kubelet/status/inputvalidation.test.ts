// The status manager's and generators' input checks: malformed pods, specs and statuses are typed
// InvalidArgument errors at the entry point, and what the algorithms accept passes.
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  isValidPodStatus,
  validatePodForStatusManager,
  validatePodSpecForStatus,
  validatePodStatus,
} from '../../../../src/kubelet/status/inputvalidation.js';
import { isInvalidArgument, type KindError } from '../../../../src/util/errors.js';

const pod = (over: Record<string, unknown> = {}): unknown => ({
  metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
  spec: { containers: [{ name: 'app', image: 'img' }] },
  ...over,
});

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).to.satisfy(isInvalidArgument);
    return (err as KindError).message;
  }
  return expect.fail('expected InvalidArgument');
}

describe('status input validation', () => {
  describe('validatePodSpecForStatus', () => {
    it('returns the effective restart policy (Always when unset)', () => {
      expect(validatePodSpecForStatus({ containers: [] })).to.equal('Always');
      expect(validatePodSpecForStatus({ containers: [], restartPolicy: 'Never' })).to.equal('Never');
    });

    it('rejects a missing spec, an unknown policy, malformed lists and duplicate names', () => {
      expect(message(() => validatePodSpecForStatus(undefined))).to.equal('pod has no spec');
      expect(
        message(() => validatePodSpecForStatus({ containers: [], restartPolicy: 'Sometimes' as never })),
      ).to.equal('unknown restartPolicy "Sometimes"');
      expect(message(() => validatePodSpecForStatus({ containers: 'app' as never }))).to.equal(
        'spec.containers is not a list',
      );
      expect(message(() => validatePodSpecForStatus({ containers: [{} as never] }))).to.equal(
        'spec.containers[0] has no name',
      );
      expect(
        message(() =>
          validatePodSpecForStatus({
            initContainers: [{ name: 'x', image: 'i' }],
            containers: [{ name: 'x', image: 'i' }],
          }),
        ),
      ).to.equal('duplicate container name "x"');
    });
  });

  describe('validatePodForStatusManager', () => {
    it('accepts a keyed pod with a valid spec and status', () => {
      const p = pod({ status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
      validatePodForStatusManager(p);
      expect((p as Pod).metadata.uid).to.equal('u1');
    });

    it('rejects a pod without metadata or uid, or with non-string names', () => {
      expect(message(() => validatePodForStatusManager(null))).to.equal('pod has no metadata');
      expect(message(() => validatePodForStatusManager(pod({ metadata: { name: 'p' } })))).to.equal(
        'pod has no metadata.uid',
      );
      expect(
        message(() => validatePodForStatusManager(pod({ metadata: { uid: 'u', namespace: 3 } }))),
      ).to.equal('pod metadata.namespace is not a string');
      expect(message(() => validatePodForStatusManager(pod({ status: [] })))).to.equal(
        'pod status is not an object',
      );
    });
  });

  describe('validatePodStatus / isValidPodStatus', () => {
    it('checks scalars, conditions and container status lists', () => {
      expect(message(() => validatePodStatus({ phase: 1 }))).to.equal('status.phase is not a string');
      expect(message(() => validatePodStatus({ conditions: {} }))).to.equal(
        'status.conditions is not a list',
      );
      expect(message(() => validatePodStatus({ conditions: [{ type: '', status: 'True' }] }))).to.equal(
        'status.conditions[0] needs a type and a status',
      );
      expect(message(() => validatePodStatus({ containerStatuses: [{ ready: true }] }))).to.equal(
        'status.containerStatuses[0] has no name',
      );
      expect(
        message(() => validatePodStatus({ initContainerStatuses: [{ name: 'i', state: 'running' }] })),
      ).to.equal('status.initContainerStatuses[0].state is not an object');
    });

    it('accepts an unrecognised phase (the algorithms define it) and nulls', () => {
      expect(isValidPodStatus({ phase: 'Weird', conditions: null, containerStatuses: null })).to.equal(true);
      expect(isValidPodStatus({ containerStatuses: [{ name: 'a', lastState: 'x' }] })).to.equal(false);
      expect(isValidPodStatus(undefined)).to.equal(false);
    });
  });
});

import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { Pod } from '../../../../src/api/core.js';
import type { PersistentVolume } from '../../../../src/api/volumes.js';
import {
  attachmentName,
  attachState,
  csiAccessMode,
  ephemeralVolumeHandle,
  kubeletAppliesFSGroup,
  lifecycleModeError,
  parseVolData,
  planEphemeral,
  planPersistent,
  publishTargetPath,
  stagingTargetPath,
  stillPublished,
  volumeCapability,
  type CSIDriver,
  type CSIVolumePlan,
} from '../../../../src/kubelet/volume/csi.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const DRIVER = 'hostpath.csi.k8s.io';

const pod: Pod = {
  metadata: { name: 'web-0', namespace: 'prod', uid: 'uid-1' },
  spec: { serviceAccountName: 'builder', containers: [] },
};

function pv(csi: Record<string, unknown>, over: Record<string, unknown> = {}): PersistentVolume {
  return {
    metadata: { name: 'pv-1' },
    spec: { accessModes: ['ReadWriteOnce'], csi: { driver: DRIVER, volumeHandle: 'vol-1', ...csi }, ...over },
  };
}

function driver(spec: CSIDriver['spec']): CSIDriver {
  return { metadata: { name: DRIVER }, spec: { fsGroupPolicy: 'ReadWriteOnceWithFSType', ...spec } };
}

function plan(over: Partial<CSIVolumePlan> = {}): CSIVolumePlan {
  const r = planPersistent(pod, pv({ fsType: 'ext4' }), false, undefined, 'node-a');
  if (!r.ok) throw new Error(r.message);
  return { ...r.plan, ...over };
}

describe('volume/csi (the CSI plugin decisions)', () => {
  it('names paths and attachments as the kubelet does', () => {
    expect(attachmentName('vol-1', DRIVER, 'node-a')).to.equal(`csi-${sha(`vol-1${DRIVER}node-a`)}`);
    expect(ephemeralVolumeHandle('uid-1', 'scratch')).to.equal(`csi-${sha('uid-1scratch')}`);
    expect(stagingTargetPath('/r/plugins', DRIVER, 'vol-1')).to.equal(
      `/r/plugins/kubernetes.io/csi/${DRIVER}/${sha('vol-1')}/globalmount`,
    );
    expect(publishTargetPath('/r/pods', 'uid-1', 'pv-1')).to.equal(
      '/r/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount',
    );
  });

  describe('lifecycle modes (supportsVolumeLifecycleMode)', () => {
    const cases: [string, CSIDriver | undefined, 'Persistent' | 'Ephemeral', string | undefined][] = [
      ['persistent without a CSIDriver', undefined, 'Persistent', undefined],
      [
        'ephemeral without a CSIDriver',
        undefined,
        'Ephemeral',
        `volume mode "Ephemeral" not supported by driver ${DRIVER} (no CSIDriver object)`,
      ],
      [
        'ephemeral listed',
        driver({ volumeLifecycleModes: ['Persistent', 'Ephemeral'] }),
        'Ephemeral',
        undefined,
      ],
      [
        'ephemeral not listed',
        driver({ volumeLifecycleModes: ['Persistent'] }),
        'Ephemeral',
        `volume mode "Ephemeral" not supported by driver ${DRIVER} (only supports ["Persistent"])`,
      ],
      [
        'persistent not listed',
        driver({ volumeLifecycleModes: ['Ephemeral'] }),
        'Persistent',
        `volume mode "Persistent" not supported by driver ${DRIVER} (only supports ["Ephemeral"])`,
      ],
    ];
    for (const [what, d, mode, err] of cases) {
      it(what, () => expect(lifecycleModeError(DRIVER, d, mode)).to.equal(err));
    }
  });

  describe('planPersistent', () => {
    it('takes handle, attributes, secrets refs, mount options and the attachment from the PV', () => {
      const r = planPersistent(
        pod,
        pv(
          {
            fsType: 'xfs',
            volumeAttributes: { a: '1' },
            nodeStageSecretRef: { name: 's1', namespace: 'ns1' },
            nodePublishSecretRef: { name: 's2', namespace: 'ns2' },
          },
          { mountOptions: ['noatime'], accessModes: ['ReadOnlyMany'] },
        ),
        false,
        driver({ attachRequired: false }),
        'node-a',
      );
      expect(r.ok && r.plan).to.deep.include({
        mode: 'Persistent',
        driver: DRIVER,
        volumeHandle: 'vol-1',
        specVolID: 'pv-1',
        readOnly: false,
        fsType: 'xfs',
        accessMode: 'ReadOnlyMany',
        mountOptions: ['noatime'],
        volumeContext: { a: '1' },
        stageSecretRef: { namespace: 'ns1', name: 's1' },
        publishSecretRef: { namespace: 'ns2', name: 's2' },
        attachRequired: false,
        attachmentID: attachmentName('vol-1', DRIVER, 'node-a'),
      });
    });

    it('attach is required by default (no CSIDriver, or one that does not say)', () => {
      expect(plan().attachRequired).to.equal(true);
      const r = planPersistent(pod, pv({}), false, driver({}), 'n');
      expect(r.ok && r.plan.attachRequired).to.equal(true);
    });

    it('podInfoOnMount adds the pod to the volume context', () => {
      const r = planPersistent(
        pod,
        pv({ volumeAttributes: { a: '1' } }),
        false,
        driver({ podInfoOnMount: true }),
        'n',
      );
      expect(r.ok && r.plan.volumeContext).to.deep.equal({
        a: '1',
        'csi.storage.k8s.io/pod.name': 'web-0',
        'csi.storage.k8s.io/pod.namespace': 'prod',
        'csi.storage.k8s.io/pod.uid': 'uid-1',
        'csi.storage.k8s.io/serviceAccount.name': 'builder',
        'csi.storage.k8s.io/ephemeral': 'false',
      });
    });

    it('read-only from the claim volume or the PV source', () => {
      expect(plan().readOnly).to.equal(false);
      const a = planPersistent(pod, pv({}), true, undefined, 'n');
      const b = planPersistent(pod, pv({ readOnly: true }), false, undefined, 'n');
      expect(a.ok && a.plan.readOnly).to.equal(true);
      expect(b.ok && b.plan.readOnly).to.equal(true);
    });

    const refused: [string, PersistentVolume, CSIDriver | undefined, string][] = [
      [
        'an empty handle',
        pv({ volumeHandle: '' }),
        undefined,
        'CSIPersistentVolumeSource volume handle is empty',
      ],
      [
        'a driver that serves only ephemeral volumes',
        pv({}),
        driver({ volumeLifecycleModes: ['Ephemeral'] }),
        `mounter.SetupAt failed to check volume lifecycle mode: volume mode "Persistent" not supported by driver ${DRIVER} (only supports ["Ephemeral"])`,
      ],
      [
        'a CSIDriver without fsGroupPolicy',
        pv({}),
        { metadata: { name: DRIVER }, spec: {} },
        'mounter.SetupAt failed to check fsGroup policy: expected valid fsGroupPolicy, received nil value or empty string',
      ],
    ];
    for (const [what, v, d, message] of refused) {
      it(`refuses ${what}`, () =>
        expect(planPersistent(pod, v, false, d, 'n')).to.deep.equal({ ok: false, message }));
    }
  });

  describe('planEphemeral', () => {
    it('a per-pod handle, no attach, the pod namespace for the publish secret', () => {
      const r = planEphemeral(
        pod,
        'scratch',
        { driver: DRIVER, volumeAttributes: { size: '1Mi' }, nodePublishSecretRef: { name: 'creds' } },
        driver({ volumeLifecycleModes: ['Ephemeral'], attachRequired: true, podInfoOnMount: true }),
        'n',
      );
      expect(r.ok && r.plan).to.deep.include({
        mode: 'Ephemeral',
        volumeHandle: ephemeralVolumeHandle('uid-1', 'scratch'),
        specVolID: 'scratch',
        attachRequired: false,
        publishSecretRef: { namespace: 'prod', name: 'creds' },
      });
      expect(r.ok && r.plan.volumeContext['csi.storage.k8s.io/ephemeral']).to.equal('true');
      expect(r.ok && r.plan.volumeContext.size).to.equal('1Mi');
    });

    it('refuses a driver without a CSIDriver object', () => {
      expect(planEphemeral(pod, 'scratch', { driver: DRIVER }, undefined, 'n')).to.deep.equal({
        ok: false,
        message: `mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver ${DRIVER} (no CSIDriver object)`,
      });
    });
  });

  describe('the kubelet applies fsGroup (supportsFSGroup)', () => {
    const cases: [string, Partial<CSIVolumePlan>, number | undefined, boolean][] = [
      ['no fsGroup', {}, undefined, false],
      ['RWO with an fsType', {}, 2000, true],
      ['RWO without an fsType', { fsType: '' }, 2000, false],
      ['RWX with an fsType', { accessModes: ['ReadWriteMany'] }, 2000, false],
      ['policy File, whatever the rest', { fsGroupPolicy: 'File', fsType: '', accessModes: [] }, 2000, true],
      ['policy None', { fsGroupPolicy: 'None' }, 2000, false],
      ['read-only', { readOnly: true, fsGroupPolicy: 'File' }, 2000, false],
      ['an ephemeral volume with an fsType', { mode: 'Ephemeral', accessModes: [] }, 2000, true],
    ];
    for (const [what, over, fsGroup, want] of cases) {
      it(what, () => expect(kubeletAppliesFSGroup(plan(over), fsGroup)).to.equal(want));
    }
  });

  it('maps access modes as asCSIAccessModeV1, with and without SINGLE_NODE_MULTI_WRITER', () => {
    const rows: [string, string, string][] = [
      ['ReadWriteOnce', 'SINGLE_NODE_WRITER', 'SINGLE_NODE_MULTI_WRITER'],
      ['ReadOnlyMany', 'MULTI_NODE_READER_ONLY', 'MULTI_NODE_READER_ONLY'],
      ['ReadWriteMany', 'MULTI_NODE_MULTI_WRITER', 'MULTI_NODE_MULTI_WRITER'],
      ['ReadWriteOncePod', 'SINGLE_NODE_WRITER', 'SINGLE_NODE_SINGLE_WRITER'],
    ];
    for (const [k8s, plain, multi] of rows) {
      expect(csiAccessMode(k8s, false), k8s).to.equal(plain);
      expect(csiAccessMode(k8s, true), k8s).to.equal(multi);
    }
  });

  it('hands the fsGroup to drivers with VOLUME_MOUNT_GROUP only', () => {
    expect(volumeCapability(plan(), new Set(['VOLUME_MOUNT_GROUP']), 2000).volumeMountGroup).to.equal('2000');
    expect(volumeCapability(plan(), new Set(), 2000).volumeMountGroup).to.equal('');
  });

  describe('attachState (WaitForAttach, one look)', () => {
    const id = 'csi-abc';
    const cases: [string, Parameters<typeof attachState>[0], ReturnType<typeof attachState>][] = [
      [
        'no VolumeAttachment yet',
        undefined,
        {
          attached: false,
          message: `volume vol-1 has GET error for volume attachment ${id}: volumeattachments.storage.k8s.io "${id}" not found`,
        },
      ],
      [
        'not attached yet',
        { metadata: { name: id }, status: { attached: false } },
        { attached: false, message: `volume vol-1 is not attached for volume attachment ${id}` },
      ],
      [
        'an attach error',
        { metadata: { name: id }, status: { attached: false, attachError: { message: 'disk busy' } } },
        { attached: false, message: 'disk busy' },
      ],
      [
        'being deleted',
        { metadata: { name: id, deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { attached: true } },
        { attached: false, message: 'volume attachment is being deleted' },
      ],
      [
        'attached, with metadata',
        { metadata: { name: id }, status: { attached: true, attachmentMetadata: { dev: '/dev/sdb' } } },
        { attached: true, publishContext: { dev: '/dev/sdb' } },
      ],
    ];
    for (const [what, va, want] of cases)
      it(what, () => expect(attachState(va, 'vol-1', id)).to.deep.equal(want));
  });

  it('reads vol_data.json back, refusing what is not one', () => {
    expect(
      parseVolData(
        '{"specVolID":"pv-1","volumeHandle":"v","driverName":"d","nodeName":"n","attachmentID":"a"}',
      ),
    ).to.deep.equal({
      specVolID: 'pv-1',
      volumeHandle: 'v',
      driverName: 'd',
      nodeName: 'n',
      attachmentID: 'a',
    });
    expect(parseVolData('not json')).to.equal(undefined);
    expect(parseVolData('{"volumeHandle":"v"}')).to.equal(undefined);
  });

  it('a volume is still published while another pod has it', () => {
    const d = { specVolID: 'pv-1', volumeHandle: 'v', driverName: 'd', nodeName: 'n', attachmentID: 'a' };
    expect(stillPublished([d], 'd', 'v')).to.equal(true);
    expect(stillPublished([d], 'd', 'w')).to.equal(false);
    expect(stillPublished([], 'd', 'v')).to.equal(false);
  });
});

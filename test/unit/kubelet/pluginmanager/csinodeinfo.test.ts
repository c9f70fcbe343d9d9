import { expect } from 'chai';
import {
  installDriverToCSINode,
  installDriverToNode,
  MigratedPluginsAnnotation,
  newCSINode,
  nodeAllocatableUpdatePeriodMs,
  NodeIDAnnotation,
  uninstallDriverFromCSINode,
  uninstallDriverFromNode,
  validateCSIVersions,
  type CSINode,
  type CSINodeDriver,
  type CSINodeInfo,
} from '../../../../src/kubelet/pluginmanager/csinodeinfo.js';

const D = 'hostpath.csi.k8s.io';
const TOPO = 'topology.hostpath.csi/node';

function csiNode(drivers: CSINodeDriver[]): CSINode {
  return { ...newCSINode('vn-a', 'uid-1'), spec: { drivers } };
}

describe('pluginmanager/csinodeinfo', () => {
  it('newCSINode: owned by the Node, no drivers, the migration annotation', () => {
    expect(newCSINode('vn-a', 'uid-1')).to.deep.equal({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: {
        name: 'vn-a',
        annotations: { [MigratedPluginsAnnotation]: '' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'vn-a', uid: 'uid-1' }],
      },
      spec: { drivers: [] },
    });
  });

  describe('installDriverToCSINode', () => {
    const info: CSINodeInfo = { nodeID: 'vn-a', maxVolumesPerNode: 0, topology: { [TOPO]: 'vn-a' } };
    const table: {
      name: string;
      drivers: CSINodeDriver[];
      info: typeof info;
      want: CSINodeDriver[] | undefined;
      warnings?: string[];
    }[] = [
      {
        name: 'first driver: added with sorted keys, no allocatable for a 0 limit',
        drivers: [],
        info: { ...info, topology: { z: '1', [TOPO]: 'vn-a' } },
        want: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO, 'z'] }],
      },
      {
        name: 'the same entry again: unchanged',
        drivers: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO] }],
        info,
        want: undefined,
      },
      {
        name: 'another node ID: replaced, others kept first',
        drivers: [
          { name: D, nodeID: 'old', topologyKeys: [TOPO] },
          { name: 'other', nodeID: 'x', topologyKeys: [] },
        ],
        info,
        want: [
          { name: 'other', nodeID: 'x', topologyKeys: [] },
          { name: D, nodeID: 'vn-a', topologyKeys: [TOPO] },
        ],
      },
      {
        name: 'an attach limit: allocatable count',
        drivers: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO] }],
        info: { ...info, maxVolumesPerNode: 16 },
        want: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO], allocatable: { count: 16 } }],
      },
      {
        name: 'a changed attach limit (MutableCSINodeAllocatableCount): rewritten',
        drivers: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO], allocatable: { count: 16 } }],
        info: { ...info, maxVolumesPerNode: 8 },
        want: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO], allocatable: { count: 8 } }],
      },
      {
        name: 'a limit beyond int32: truncated and logged',
        drivers: [],
        info: { ...info, maxVolumesPerNode: 2 ** 40 },
        want: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO], allocatable: { count: 2147483647 } }],
        warnings: ['Exceeded max supported attach limit value, truncating it to 2147483647'],
      },
      {
        name: 'a negative limit: left out and logged',
        drivers: [],
        info: { ...info, maxVolumesPerNode: -1 },
        want: [{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO] }],
        warnings: [`Invalid attach limit value -1 cannot be added to CSINode object for "${D}"`],
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const r = installDriverToCSINode(csiNode(t.drivers), D, t.info);
        expect(r.csiNode?.spec.drivers).to.deep.equal(t.want);
        expect(r.warnings).to.deep.equal(t.warnings ?? []);
      });
    }

    it('adds the migration annotation a CSINode lacks', () => {
      const n = csiNode([{ name: D, nodeID: 'vn-a', topologyKeys: [TOPO] }]);
      n.metadata.annotations = {};
      expect(installDriverToCSINode(n, D, info).csiNode?.metadata.annotations).to.deep.equal({
        [MigratedPluginsAnnotation]: '',
      });
    });
  });

  it('uninstallDriverFromCSINode removes the entry, or says nothing changes', () => {
    const n = csiNode([
      { name: D, nodeID: 'vn-a' },
      { name: 'other', nodeID: 'x' },
    ]);
    expect(uninstallDriverFromCSINode(n, D)?.spec.drivers).to.deep.equal([{ name: 'other', nodeID: 'x' }]);
    expect(uninstallDriverFromCSINode(n, 'absent')).to.equal(undefined);
  });

  describe('installDriverToNode / uninstallDriverFromNode', () => {
    const info = { nodeID: 'vn-a', maxVolumesPerNode: 0, topology: { [TOPO]: 'vn-a' } };
    it('adds the topology label and the node ID annotation', () => {
      expect(installDriverToNode({ labels: { a: 'b' } }, D, info)).to.deep.equal({
        ok: true,
        patch: {
          metadata: { labels: { [TOPO]: 'vn-a' }, annotations: { [NodeIDAnnotation]: `{"${D}":"vn-a"}` } },
        },
      });
    });
    it('keeps other drivers in the annotation; nothing to do when all is there', () => {
      const node = {
        labels: { [TOPO]: 'vn-a' },
        annotations: { [NodeIDAnnotation]: `{"other":"x","${D}":"vn-a"}` },
      };
      expect(installDriverToNode(node, D, info)).to.deep.equal({ ok: true });
      expect(
        installDriverToNode({ annotations: { [NodeIDAnnotation]: '{"other":"x"}' } }, D, info),
      ).to.deep.equal({
        ok: true,
        patch: {
          metadata: {
            labels: { [TOPO]: 'vn-a' },
            annotations: { [NodeIDAnnotation]: `{"other":"x","${D}":"vn-a"}` },
          },
        },
      });
    });
    it('a topology label with another value is a collision', () => {
      expect(installDriverToNode({ labels: { [TOPO]: 'elsewhere' } }, D, info)).to.deep.equal({
        ok: false,
        error: `error updating Node object with CSI driver node info: detected topology value collision: driver reported "${TOPO}":"vn-a" but existing label is "${TOPO}":"elsewhere"`,
      });
    });
    it('an empty node ID is refused', () => {
      expect(installDriverToNode({}, D, { ...info, nodeID: '' })).to.deep.equal({
        ok: false,
        error: 'error adding CSI driver node info: driverNodeID must not be empty',
      });
    });
    it('a garbled annotation is an error, not a crash', () => {
      const r = installDriverToNode({ annotations: { [NodeIDAnnotation]: '{nope' } }, D, info);
      expect(r.ok).to.equal(false);
    });
    it('uninstall: the driver out of the annotation, the annotation removed with its last driver', () => {
      expect(
        uninstallDriverFromNode({ annotations: { [NodeIDAnnotation]: `{"other":"x","${D}":"vn-a"}` } }, D),
      ).to.deep.equal({
        ok: true,
        patch: { metadata: { annotations: { [NodeIDAnnotation]: '{"other":"x"}' } } },
      });
      expect(
        uninstallDriverFromNode({ annotations: { [NodeIDAnnotation]: `{"${D}":"vn-a"}` } }, D),
      ).to.deep.equal({
        ok: true,
        patch: { metadata: { annotations: { [NodeIDAnnotation]: null } } },
      });
      expect(uninstallDriverFromNode({}, D)).to.deep.equal({ ok: true });
    });
  });

  describe('validateCSIVersions', () => {
    const table: [string[], string | undefined, ReturnType<typeof validateCSIVersions>][] = [
      [['1.0.0'], undefined, { ok: true, highest: '1.0.0' }],
      [['0.3.0', '1.2.0', '2.0.0'], undefined, { ok: true, highest: '1.2.0' }],
      [['v1.5'], undefined, { ok: true, highest: '1.5.0' }],
      [
        [],
        undefined,
        {
          ok: false,
          error: `kubernetes.io/csi: RegisterPlugin for CSI driver "${D}" failed. Plugin returned an empty list for supported versions`,
        },
      ],
      [
        ['2.0.0', 'x'],
        undefined,
        {
          ok: false,
          error: `kubernetes.io/csi: RegisterPlugin for CSI driver "${D}" failed. None of the versions specified "2.0.0 x" are supported`,
        },
      ],
      [
        ['1.0.0'],
        '1.0.0',
        {
          ok: false,
          error: `kubernetes.io/csi: RegisterPlugin for CSI driver "${D}" failed. Another driver with the same name is already registered with a higher supported version: "1.0.0"`,
        },
      ],
      [['1.1.0'], '1.0.0', { ok: true, highest: '1.1.0' }],
    ];
    for (const [versions, registered, want] of table) {
      it(`${JSON.stringify(versions)} with ${registered ?? 'none'} registered`, () => {
        expect(validateCSIVersions('RegisterPlugin', D, versions, registered)).to.deep.equal(want);
      });
    }
  });

  it('nodeAllocatableUpdatePeriodMs: the CSIDriver period, 0 when unset', () => {
    expect(nodeAllocatableUpdatePeriodMs({ spec: { nodeAllocatableUpdatePeriodSeconds: 60 } })).to.equal(
      60_000,
    );
    expect(nodeAllocatableUpdatePeriodMs({ spec: { nodeAllocatableUpdatePeriodSeconds: null } })).to.equal(0);
    expect(nodeAllocatableUpdatePeriodMs({ spec: {} })).to.equal(0);
    expect(nodeAllocatableUpdatePeriodMs(undefined)).to.equal(0);
  });
});

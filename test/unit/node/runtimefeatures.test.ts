// What a node reports of its runtime's features (issue #60 point 3 and 5), as a v1.37 kubelet reports them:
// `status.runtimeHandlers` (RuntimeHandlers setter), `status.features` (NodeFeatures setter), both from the
// runtime's Status and absent for containerd 1.6 whose CRI reports neither; `nodeInfo.runningInUserNamespace`
// (KubeletInUserNamespace) from /proc/self/uid_map as moby/sys/userns reads it.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import type { NodeStatus } from '../../../src/api/node.js';
import { declaredFeatures, DeclarableFeatures } from '../../../src/node/declaredfeatures.js';
import { ownedStatus, systemInfo, type NodeStatusParams } from '../../../src/node/nodestatus.js';
import { nodeFeatures, runtimeHandlers } from '../../../src/node/setters.js';
import { runningInUserNamespace, uidMapInUserNamespace } from '../../../src/node/userns.js';
import { type FakeRuntime, NODE_STATUS_PARAMS, nodeStatusOnce } from './fakeapi.js';

const NOW = '2026-01-01T00:00:00Z';
const SIM_HANDLER = { name: '', recursiveReadOnlyMounts: true, userNamespaces: true };

const params: NodeStatusParams = { ...NODE_STATUS_PARAMS, runningInUserNamespace: false };

describe('node status: runtime features', () => {
  describe('runtimeHandlers setter', () => {
    it('lists each handler with both features stated', () => {
      const s = runtimeHandlers([
        SIM_HANDLER,
        { name: 'kata', recursiveReadOnlyMounts: false, userNamespaces: true },
      ])({}, NOW);
      expect(s.runtimeHandlers).to.deep.equal([
        { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
        { name: 'kata', features: { recursiveReadOnlyMounts: false, userNamespaces: true } },
      ]);
    });

    it('leaves the list out when the runtime reports none (containerd 1.6), and removes one written before', () => {
      expect(runtimeHandlers([])({}, NOW)).to.deep.equal({});
      const before: NodeStatus = { runtimeHandlers: [{ name: '', features: {} }] };
      expect(runtimeHandlers([])(before, NOW)).to.deep.equal({ runtimeHandlers: null });
    });
  });

  describe('nodeFeatures setter', () => {
    it("states the runtime's features; keeps the field as it was when the runtime reports none", () => {
      expect(nodeFeatures({ supplementalGroupsPolicy: true })({}, NOW)).to.deep.equal({
        features: { supplementalGroupsPolicy: true },
      });
      expect(nodeFeatures(undefined)({}, NOW)).to.deep.equal({});
      const before: NodeStatus = { features: { supplementalGroupsPolicy: false } };
      expect(nodeFeatures(undefined)(before, NOW)).to.equal(before);
    });
  });

  describe('runningInUserNamespace (moby/sys/userns)', () => {
    const table: [string, string, boolean][] = [
      ['the initial namespace', '         0          0 4294967295', false],
      ['inside one (rootless)', '         0       1000          1', true],
      ['a namespace whose map is not written yet', '', true],
      ['an unreadable line', 'garbage', false],
      ['a partial map from 0', '         0          0      65536', true],
    ];
    for (const [what, line, want] of table)
      it(what, () => expect(uidMapInUserNamespace(line)).to.equal(want));

    it("this process: the decision on its own uid_map's first line", () => {
      const first = readFileSync('/proc/self/uid_map', 'utf8').split('\n')[0]!;
      expect(runningInUserNamespace()).to.equal(uidMapInUserNamespace(first));
    });

    it('nodeInfo carries it (false is written, not left out)', () => {
      expect(systemInfo({ ...params, runtimeVersion: undefined }).runningInUserNamespace).to.equal(false);
      const { runningInUserNamespace: _, ...unknown } = params;
      expect(systemInfo({ ...unknown, runtimeVersion: undefined })).to.not.have.property(
        'runningInUserNamespace',
      );
    });
  });

  it('ownedStatus sends the features fields when set, null to remove the handlers', () => {
    const s: NodeStatus = {
      runtimeHandlers: null,
      features: { supplementalGroupsPolicy: true },
      images: [{ names: ['x'] }],
    };
    const owned = ownedStatus(s);
    expect(owned.runtimeHandlers).to.equal(null);
    expect(owned.features).to.deep.equal({ supplementalGroupsPolicy: true });
    expect(owned).to.not.have.property('images');
    expect(ownedStatus({})).to.not.have.any.keys('runtimeHandlers', 'features', 'declaredFeatures');
  });

  it('declares no feature that needs a runtime feature it lacks (UserNamespacesHostNetworkSupport is alpha-off)', () => {
    expect(declaredFeatures()).to.not.include('UserNamespacesHostNetworkSupport');
    const f = DeclarableFeatures.find((x) => x.name === 'UserNamespacesHostNetworkSupport')!;
    expect(f.why).to.match(/alpha and off in v1\.37/);
  });

  describe('NodeStatusLoop writes what the runtime reports', () => {
    const run = (configure: (r: FakeRuntime) => void) => nodeStatusOnce(params, configure);

    it('containerd 1.6: no runtimeHandlers, no features; runningInUserNamespace false', async () => {
      const { node } = await run(() => undefined);
      expect(node.status).to.not.have.any.keys('runtimeHandlers', 'features');
      expect(node.status!.nodeInfo!.runningInUserNamespace).to.equal(false);
    });

    it('a runtime that reports them (sim): both, as the kubelet writes them', async () => {
      const { node, runtimeState } = await run((r) => {
        r.handlers = [SIM_HANDLER];
        r.features = { supplementalGroupsPolicy: true };
      });
      expect(node.status!.runtimeHandlers).to.deep.equal([
        { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
      ]);
      expect(node.status!.features).to.deep.equal({ supplementalGroupsPolicy: true });
      expect(runtimeState.runtimeHandlers()).to.deep.equal([SIM_HANDLER]);
      expect(runtimeState.runtimeFeatures()).to.deep.equal({ supplementalGroupsPolicy: true });
    });

    it('a failed status check keeps the handlers and features last reported (kubelet updateRuntimeUp)', async () => {
      const { runtimeState, runtime } = await run((r) => {
        r.handlers = [SIM_HANDLER];
        r.features = { supplementalGroupsPolicy: true };
      });
      runtime.down = true;
      await runtimeState.update();
      expect(runtimeState.lastCheck.state).to.equal('failed');
      expect(runtimeState.runtimeHandlers()).to.deep.equal([SIM_HANDLER]);
      expect(runtimeState.runtimeFeatures()).to.deep.equal({ supplementalGroupsPolicy: true });
    });
  });
});

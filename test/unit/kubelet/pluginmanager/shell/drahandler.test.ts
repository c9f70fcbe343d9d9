// The DRA plugin handler hands a registered plugin that offers a health service to the DRA manager's health
// streams, and takes it back when the plugin deregisters (the kubelet's streamHandler).
import { expect } from 'chai';
import type { DRAPlugin } from '../../../../../src/kubelet/pluginmanager/dradrivers.js';
import { DRAPluginHandler } from '../../../../../src/kubelet/pluginmanager/shell/drahandler.js';
import { silentLogger } from '../../../../../src/util/logger.js';

describe('pluginmanager/shell/drahandler: health streams', () => {
  it('watches the health of plugins that offer it (v1 preferred), unwatches them when they go', async () => {
    const seen: string[] = [];
    const h = new DRAPluginHandler({
      client: { request: () => Promise.resolve(undefined as never) },
      nodeName: 'n',
      logger: silentLogger,
      wipingDelayMs: 60_000,
      streamHandler: {
        watchHealth: (p: DRAPlugin) => void seen.push(`watch ${p.driverName} ${p.chosenHealthService}`),
        unwatchHealth: (d, e) => {
          seen.push(`unwatch ${d} ${e}`);
          return Promise.resolve();
        },
      },
    });
    await h.registerPlugin('a.example.com', '/a.sock', [
      'v1.DRAPlugin',
      'v1alpha1.DRAResourceHealth',
      'v1.DRAResourceHealth',
    ]);
    await h.registerPlugin('b.example.com', '/b.sock', ['v1.DRAPlugin', 'v1alpha1.DRAResourceHealth']);
    await h.registerPlugin('c.example.com', '/c.sock', ['v1beta1.DRAPlugin']);
    await h.deregisterPlugin('a.example.com', '/a.sock');
    h.stop();
    expect(seen).to.deep.equal([
      'watch a.example.com v1.DRAResourceHealth',
      'watch b.example.com v1alpha1.DRAResourceHealth',
      'unwatch a.example.com /a.sock',
    ]);
  });
});

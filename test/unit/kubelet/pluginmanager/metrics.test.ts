// plugin_manager_total_plugins as the kubelet's plugin manager collector counts it: at scrape time, each
// node's registered plugins (actual_state_of_world) and the sockets found to register
// (desired_state_of_world), by socket path; a node whose plugin manager is gone leaves no series.
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Metrics, type PluginManagerView } from '../../../../src/metrics.js';
import { PluginManager } from '../../../../src/kubelet/pluginmanager/shell/manager.js';
import { silentLogger } from '../../../../src/util/logger.js';

async function scrape(metrics: Metrics): Promise<string[]> {
  return (await metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith('plugin_manager_total_plugins'));
}

describe('plugin_manager_total_plugins', () => {
  it('counts each state of world by socket path, per node, read at scrape time', async () => {
    const metrics = new Metrics();
    const a = {
      registered: [{ socketPath: '/r/a/csi.sock' }],
      toRegister: [{ socketPath: '/r/a/csi.sock' }],
    };
    const view = (s: typeof a): PluginManagerView => ({
      registered: () => s.registered,
      toRegister: () => s.toRegister,
    });
    metrics.pluginManagers.set('n1', view(a));
    metrics.pluginManagers.set('n2', view({ registered: [], toRegister: [{ socketPath: '/r/b/dra.sock' }] }));
    expect(await scrape(metrics)).to.deep.equal([
      'plugin_manager_total_plugins{node="n1",socket_path="/r/a/csi.sock",state="actual_state_of_world"} 1',
      'plugin_manager_total_plugins{node="n1",socket_path="/r/a/csi.sock",state="desired_state_of_world"} 1',
      'plugin_manager_total_plugins{node="n2",socket_path="/r/b/dra.sock",state="desired_state_of_world"} 1',
    ]);
    // n1's plugin went away (deregistered, its socket removed); n2's manager stopped.
    a.registered = [];
    a.toRegister = [];
    metrics.pluginManagers.delete('n2');
    expect(await scrape(metrics)).to.deep.equal([]);
  });

  it('a real plugin manager: a socket in the registry directory is desired, not registered while GetInfo fails', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pm-metrics-'));
    // A listener that is no registration server: dialled, then GetInfo fails.
    const sock = path.join(dir, 'bad.sock');
    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => server.listen(sock, r));
    const manager = new PluginManager({
      registryDir: dir,
      handlers: new Map(),
      logger: silentLogger,
      resolveEndpoint: (e) => e,
    });
    const metrics = new Metrics();
    metrics.pluginManagers.set('n1', manager);
    try {
      await manager.start();
      const want = `plugin_manager_total_plugins{node="n1",socket_path="${sock}",state="desired_state_of_world"} 1`;
      const deadline = Date.now() + 5_000;
      let got: string[] = [];
      while (Date.now() < deadline) {
        got = await scrape(metrics);
        if (got.length > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(got).to.deep.equal([want]);
    } finally {
      await manager.stop();
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

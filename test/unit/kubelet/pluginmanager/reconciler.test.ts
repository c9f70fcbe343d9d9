import { expect } from 'chai';
import {
  pluginsToRegister,
  reconcilePlugins,
  routePlugin,
  type PluginToRegister,
  type RegisteredPlugin,
  type RegistryEntry,
} from '../../../../src/kubelet/pluginmanager/reconciler.js';

const R = '/n/plugins_registry';
const entry = (name: string, kind: RegistryEntry['kind'], stamp = '1', dir = R): RegistryEntry => ({
  path: `${dir}/${name}`,
  name,
  kind,
  stamp,
});
const reg = (socket: string, stamp: string, name = socket): RegisteredPlugin => ({
  socketPath: `${R}/${socket}`,
  stamp,
  type: 'CSIPlugin',
  name,
  endpoint: `/n/plugins/${name}/csi.sock`,
});
const want = (socket: string, stamp: string): PluginToRegister => ({ socketPath: `${R}/${socket}`, stamp });

describe('pluginmanager/reconciler', () => {
  describe('pluginsToRegister (the watcher: sockets only, no dot files)', () => {
    const table: [string, RegistryEntry[], string[]][] = [
      ['a socket', [entry('hostpath.csi.k8s.io-reg.sock', 'socket')], [`${R}/hostpath.csi.k8s.io-reg.sock`]],
      ['a dot socket is ignored', [entry('.hidden.sock', 'socket')], []],
      ['a regular file is ignored', [entry('notes.txt', 'other')], []],
      ['a directory is not a plugin', [entry('sub', 'dir')], []],
      [
        'sockets in a sub-directory count, sorted',
        [entry('z.sock', 'socket'), entry('a.sock', 'socket', '1', `${R}/sub`)],
        [`${R}/sub/a.sock`, `${R}/z.sock`],
      ],
    ];
    for (const [name, entries, sockets] of table) {
      it(name, () => {
        expect(pluginsToRegister(entries).map((p) => p.socketPath)).to.deep.equal(sockets);
      });
    }
  });

  describe('reconcilePlugins (deregistrations first, stamps decide)', () => {
    const table: {
      name: string;
      desired: PluginToRegister[];
      actual: RegisteredPlugin[];
      busy?: string[];
      unregister: string[];
      register: string[];
    }[] = [
      { name: 'nothing', desired: [], actual: [], unregister: [], register: [] },
      {
        name: 'a new socket is registered',
        desired: [want('a', '1')],
        actual: [],
        unregister: [],
        register: ['a'],
      },
      {
        name: 'a registered socket with the same stamp: nothing',
        desired: [want('a', '1')],
        actual: [reg('a', '1')],
        unregister: [],
        register: [],
      },
      {
        name: 'a socket gone: deregistered',
        desired: [],
        actual: [reg('a', '1')],
        unregister: ['a'],
        register: [],
      },
      {
        name: 'a socket created anew: deregistered and registered again',
        desired: [want('a', '2')],
        actual: [reg('a', '1')],
        unregister: ['a'],
        register: ['a'],
      },
      {
        name: 'a socket being registered (or in back-off) is left alone',
        desired: [want('a', '1'), want('b', '1')],
        actual: [reg('c', '1')],
        busy: [`${R}/a`, `${R}/c`],
        unregister: [],
        register: ['b'],
      },
    ];
    for (const t of table) {
      it(t.name, () => {
        const d = reconcilePlugins(t.desired, t.actual, new Set(t.busy ?? []));
        expect(d.unregister.map((r) => r.socketPath)).to.deep.equal(t.unregister.map((s) => `${R}/${s}`));
        expect(d.register.map((r) => r.socketPath)).to.deep.equal(t.register.map((s) => `${R}/${s}`));
      });
    }
  });

  describe('routePlugin (GetInfo answer to a handler)', () => {
    const types = new Set(['CSIPlugin', 'DRAPlugin']);
    it('an unknown type is refused with the kubelet message', () => {
      expect(
        routePlugin(
          { type: 'DevicePlugin', name: 'x', endpoint: '', supportedVersions: [] },
          '/r/x.sock',
          types,
        ),
      ).to.deep.equal({
        ok: false,
        error:
          'RegisterPlugin error -- no handler registered for plugin type: DevicePlugin at socket /r/x.sock',
      });
    });
    it('an empty endpoint is the registration socket', () => {
      const r = routePlugin(
        { type: 'DRAPlugin', name: 'gpu', endpoint: '', supportedVersions: ['v1.DRAPlugin'] },
        '/r/gpu.sock',
        types,
      );
      expect(r).to.deep.equal({
        ok: true,
        info: {
          type: 'DRAPlugin',
          name: 'gpu',
          endpoint: '/r/gpu.sock',
          supportedVersions: ['v1.DRAPlugin'],
        },
      });
    });
    it('a named endpoint is kept', () => {
      const r = routePlugin(
        { type: 'CSIPlugin', name: 'h', endpoint: '/p/csi.sock', supportedVersions: ['1.0.0'] },
        '/r/h.sock',
        types,
      );
      expect(r.ok && r.info.endpoint).to.equal('/p/csi.sock');
    });
  });
});

import { expect } from 'chai';
import {
  chooseDRAHealthService,
  chooseDRAService,
  DRAPluginStore,
} from '../../../../src/kubelet/pluginmanager/dradrivers.js';

describe('pluginmanager/dradrivers', () => {
  const table: [string[], ReturnType<typeof chooseDRAService>][] = [
    [['v1.DRAPlugin'], { ok: true, service: 'v1.DRAPlugin' }],
    [['v1beta1.DRAPlugin', 'v1.DRAPlugin'], { ok: true, service: 'v1beta1.DRAPlugin' }],
    [['v1alpha4.Node', 'v1.DRAPlugin'], { ok: true, service: 'v1.DRAPlugin' }],
    [[], { ok: false, error: 'empty list of supported gRPC services (aka supported versions)' }],
    [
      ['v1alpha3.Node'],
      {
        ok: false,
        error:
          'none of services supported by the plugin (["v1alpha3.Node"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])',
      },
    ],
  ];
  for (const [supported, want] of table) {
    it(`chooseDRAService(${JSON.stringify(supported)})`, () => {
      expect(chooseDRAService(supported)).to.deep.equal(want);
    });
  }

  it('chooses the health service in the kubelet order', () => {
    expect(chooseDRAHealthService(['v1alpha1.DRAResourceHealth', 'v1.DRAResourceHealth'])).to.equal(
      'v1.DRAResourceHealth',
    );
    expect(chooseDRAHealthService(['v1.DRAPlugin'])).to.equal('');
  });

  it('keeps several plugins of a driver, refuses an endpoint twice, prefers the latest', () => {
    const s = new DRAPluginStore();
    const p = (endpoint: string, at: number) => ({
      driverName: 'gpu.example.com',
      endpoint,
      chosenService: 'v1.DRAPlugin',
      chosenHealthService: '',
      registeredAt: at,
    });
    expect(s.add(p('/a.sock', 1))).to.deep.equal({ ok: true });
    expect(s.add(p('/b.sock', 2))).to.deep.equal({ ok: true });
    expect(s.add(p('/a.sock', 3))).to.deep.equal({
      ok: false,
      error: 'endpoint /a.sock already registered for DRA driver plugin gpu.example.com',
    });
    expect(s.get('gpu.example.com')?.endpoint).to.equal('/b.sock');
    expect(s.remove('gpu.example.com', '/b.sock')).to.equal(1);
    expect(s.get('gpu.example.com')?.endpoint).to.equal('/a.sock');
    expect(s.remove('gpu.example.com', '/a.sock')).to.equal(0);
    expect(s.drivers()).to.deep.equal([]);
  });
});

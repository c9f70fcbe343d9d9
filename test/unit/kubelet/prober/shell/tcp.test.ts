// The tcp prober (src/kubelet/prober/shell/tcp.ts) against a real local listener.
import net from 'node:net';
import { expect } from 'chai';
import { tcpProbe } from '../../../../../src/kubelet/prober/shell/tcp.js';
import { close, listen } from '../runner-fixtures.js';

describe('prober tcp', () => {
  it('succeeds when the port accepts and fails with the dial error when it does not', async () => {
    const s = net.createServer((sock) => sock.end());
    const port = await listen(s);
    expect(await tcpProbe('127.0.0.1', port, 1000)).to.deep.equal({ result: 'success', output: '' });
    await close(s);
    expect(await tcpProbe('127.0.0.1', port, 1000)).to.deep.equal({
      result: 'failure',
      output: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
    });
  });
});

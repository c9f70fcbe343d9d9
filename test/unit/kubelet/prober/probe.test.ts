// What the probe protocols share (src/kubelet/prober/probe.ts): ports, addresses, output limits.
import { expect } from 'chai';
import {
  joinHostPort,
  MaxProbeOutputBytes,
  resolveProbePort,
  truncateOutput,
} from '../../../../src/kubelet/prober/probe.js';

describe('prober probe', () => {
  it('resolves named, numeric and string-numeric ports, and rejects unknown ones', () => {
    const ports = [{ name: 'http', containerPort: 8080 }];
    expect(resolveProbePort('http', ports)).to.equal(8080);
    expect(resolveProbePort(81, ports)).to.equal(81);
    expect(resolveProbePort('82', ports)).to.equal(82);
    expect(() => resolveProbePort('metrics', ports)).to.throw('port metrics not found');
    expect(() => resolveProbePort(70000, ports)).to.throw('invalid port number');
  });

  it('joins hosts and ports as Go does, IPv6 in brackets', () => {
    expect(joinHostPort('10.0.0.1', 80)).to.equal('10.0.0.1:80');
    expect(joinHostPort('fd00::1', 80)).to.equal('[fd00::1]:80');
    expect(joinHostPort('[fd00::1]', 80)).to.equal('[fd00::1]:80');
  });

  it('cuts output to 10 KiB', () => {
    expect(truncateOutput('short')).to.equal('short');
    expect(Buffer.byteLength(truncateOutput('y'.repeat(MaxProbeOutputBytes + 5)))).to.equal(
      MaxProbeOutputBytes,
    );
  });
});

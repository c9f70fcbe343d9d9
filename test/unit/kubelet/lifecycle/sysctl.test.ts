import { expect } from 'chai';
import {
  normalizeSysctlName,
  safeSysctlAllowlist,
  SysctlAllowlist,
} from '../../../../src/kubelet/lifecycle/sysctl.js';
import { KindError } from '../../../../src/util/errors.js';

describe('sysctl allowlist', () => {
  it('lists the v1.37 safe sysctls, the kernel-gated ones only from their kernel on', () => {
    expect(safeSysctlAllowlist('6.1.0')).to.have.length(12);
    expect(safeSysctlAllowlist('4.5')).to.not.include('net.ipv4.tcp_fin_timeout');
    expect(safeSysctlAllowlist('4.5')).to.include('net.ipv4.tcp_keepalive_probes');
    expect(safeSysctlAllowlist('3.10.0-1160.el7.x86_64')).to.deep.equal([
      'kernel.shm_rmid_forced',
      'net.ipv4.ip_local_port_range',
      'net.ipv4.tcp_syncookies',
      'net.ipv4.ping_group_range',
      'net.ipv4.ip_unprivileged_port_start',
      'net.ipv4.tcp_rmem',
      'net.ipv4.tcp_wmem',
    ]);
    expect(safeSysctlAllowlist(undefined)).to.have.length(7);
  });

  it('normalizes slash-separated names as sysctl.d(5) does', () => {
    expect(normalizeSysctlName('net/ipv4/conf/eno2.100/rp_filter')).to.equal(
      'net.ipv4.conf.eno2/100.rp_filter',
    );
    expect(normalizeSysctlName('net.ipv4.conf.eno2/100.rp_filter')).to.equal(
      'net.ipv4.conf.eno2/100.rp_filter',
    );
  });

  it('refuses patterns that are not sysctl patterns or not namespaced, in the kubelet words', () => {
    for (const ok of [
      ['kernel.msg*', 'kernel.sem'],
      ['kernel/msg*', 'kernel/sem'],
      ['net.*'],
      ['fs.mqueue.*'],
    ]) {
      expect(() => new SysctlAllowlist(ok), ok.join()).to.not.throw();
    }
    expect(() => new SysctlAllowlist(['foo'])).to.throw(
      KindError,
      'the sysctls "foo" are not known to be namespaced',
    );
    expect(() => new SysctlAllowlist(['net.-'])).to.throw(
      KindError,
      'sysctl "net.-" must have at most 253 characters',
    );
    for (const bad of [' kernel.msg*', 'net.*.foo', 'foo*']) {
      expect(() => new SysctlAllowlist([bad]), bad).to.throw(KindError);
    }
  });

  it('matches the kubelet allowlist test table', () => {
    const w = new SysctlAllowlist([...safeSysctlAllowlist('6.1'), 'kernel.msg*', 'kernel.sem', 'net.b.*']);
    const valid: [string, boolean, boolean][] = [
      ['kernel.shm_rmid_forced', false, false],
      ['kernel/shm_rmid_forced', false, false],
      ['net.ipv4.ip_local_port_range', false, false],
      ['kernel.msgmax', false, false],
      ['kernel.sem', false, false],
      ['kernel/sem', false, false],
    ];
    const invalid: [string, boolean, boolean][] = [
      ['kernel.shm_rmid_forced', false, true],
      ['net.ipv4.ip_local_port_range', true, false],
      ['foo', false, false],
      ['net.a.b.c', false, false],
      ['net.ipv4.ip_local_port_range.a.b.c', false, false],
      ['kernel.msgmax', false, true],
      ['kernel.sem', false, true],
      ['net.b.c', true, false],
    ];
    for (const [s, net, ipc] of valid) expect(w.validate(s, net, ipc), s).to.equal(undefined);
    for (const [s, net, ipc] of invalid) expect(w.validate(s, net, ipc), s).to.be.a('string');
  });
});

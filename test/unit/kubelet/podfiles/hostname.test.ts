import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  generatePodHostNameAndDomain,
  isDNS1123Label,
  nodenameForKernel,
  podSandboxHostname,
  truncatePodHostnameIfNeeded,
  type HostnameSpec,
} from '../../../../src/kubelet/podfiles/hostname.js';
import { podHostname } from '../../../../src/kubelet/kuberuntime/sandboxconfig.js';

import { kindThrown } from '../../../support/throws.js';

const opts = { clusterDomain: 'cluster.local' };

function pod(name: string, spec: Partial<Pod['spec']> & { hostnameOverride?: string } = {}) {
  return {
    metadata: { name, namespace: 'prod', uid: 'u1' },
    spec: { containers: [], ...spec } as Pod['spec'] & HostnameSpec,
  };
}

const thrown = kindThrown;

const LABEL_RULE =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start " +
  "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

describe('hostname: GeneratePodHostNameAndDomain', () => {
  it('uses the pod name, or spec.hostname; a domain only with a subdomain', () => {
    expect(generatePodHostNameAndDomain(pod('web-0'), opts)).to.deep.equal({
      hostname: 'web-0',
      hostDomain: '',
    });
    expect(generatePodHostNameAndDomain(pod('web-0', { hostname: 'h' }), opts)).to.deep.equal({
      hostname: 'h',
      hostDomain: '',
    });
    expect(generatePodHostNameAndDomain(pod('web-0', { subdomain: 'db' }), opts)).to.deep.equal({
      hostname: 'web-0',
      hostDomain: 'db.prod.svc.cluster.local',
    });
  });

  it('truncates a long name to 63 characters without a trailing - or .', () => {
    const name = `${'a'.repeat(60)}-.-b${'c'.repeat(20)}`;
    expect(truncatePodHostnameIfNeeded(name, name)).to.equal('a'.repeat(60));
    expect(generatePodHostNameAndDomain(pod(name), opts).hostname).to.equal('a'.repeat(60));
    const exact = 'x'.repeat(63);
    expect(truncatePodHostnameIfNeeded(exact, exact)).to.equal(exact);
    expect(thrown(() => truncatePodHostnameIfNeeded('p', '-'.repeat(70))).message).to.equal(
      `hostname for pod "p" was invalid: "${'-'.repeat(70)}"`,
    );
  });

  it('agrees with the truncation kuberuntime/sandboxconfig.ts does today', () => {
    for (const name of ['web', `${'a'.repeat(62)}.b`, `${'z'.repeat(61)}--tail-${'q'.repeat(9)}`]) {
      const p = pod(name);
      expect(generatePodHostNameAndDomain(p, opts).hostname, name).to.equal(podHostname(p));
    }
  });

  it('rejects an invalid hostname or subdomain with the kubelet message', () => {
    expect(
      thrown(() => generatePodHostNameAndDomain(pod('p', { hostname: 'Bad_Name' }), opts)).message,
    ).to.equal(`pod Hostname "Bad_Name" is not a valid DNS label: ${LABEL_RULE}`);
    expect(thrown(() => generatePodHostNameAndDomain(pod('p', { subdomain: 'a.b' }), opts)).message).to.equal(
      'pod Subdomain "a.b" is not a valid DNS label: must not contain dots',
    );
    expect(isDNS1123Label('x'.repeat(64))).to.deep.equal(['must be no more than 63 characters']);
  });

  it('honours hostnameOverride only behind its gate, with no domain', () => {
    const p = pod('web-0', { hostnameOverride: 'my.host.example', subdomain: 'db' });
    expect(generatePodHostNameAndDomain(p, opts).hostname).to.equal('web-0');
    expect(generatePodHostNameAndDomain(p, { ...opts, hostnameOverride: true })).to.deep.equal({
      hostname: 'my.host.example',
      hostDomain: '',
    });
    const bad = pod('web-0', { hostnameOverride: 'Nope' });
    expect(
      thrown(() => generatePodHostNameAndDomain(bad, { ...opts, hostnameOverride: true })).message,
    ).to.match(
      /^pod HostnameOverride "Nope" is not a valid DNS subdomain: a lowercase RFC 1123 subdomain .*\(e\.g\. 'example\.com', regex/,
    );
  });
});

describe('hostname: setHostnameAsFQDN', () => {
  it('gives the kernel the FQDN only with the flag and a domain', () => {
    expect(nodenameForKernel('web-0', 'db.prod.svc.cluster.local', true)).to.equal(
      'web-0.db.prod.svc.cluster.local',
    );
    expect(nodenameForKernel('web-0', '', true)).to.equal('web-0');
    expect(nodenameForKernel('web-0', 'db.prod.svc.cluster.local', false)).to.equal('web-0');
  });

  it('allows 64 characters and refuses 65 with the kubelet message', () => {
    const domain = 'db.prod.svc.cluster.local'; // 25
    expect(nodenameForKernel('h'.repeat(38), domain, true)).to.have.length(64);
    const fqdn = `${'h'.repeat(39)}.${domain}`;
    expect(thrown(() => nodenameForKernel('h'.repeat(39), domain, true)).message).to.equal(
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long ` +
        '(64 characters is the max, 65 characters requested)',
    );
  });

  it('leaves a host-network sandbox without a hostname', () => {
    expect(podSandboxHostname(pod('web-0', { hostNetwork: true, subdomain: 'db' }), opts)).to.equal(
      undefined,
    );
    expect(podSandboxHostname(pod('web-0', { subdomain: 'db', setHostnameAsFQDN: true }), opts)).to.equal(
      'web-0.db.prod.svc.cluster.local',
    );
  });
});

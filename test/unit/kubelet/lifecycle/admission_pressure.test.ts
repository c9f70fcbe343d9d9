// Admission on a node under pressure: the eviction manager's handler comes first, with its reason and message.
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { admitPod, type AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';

const node = (pressureConditions?: AdmissionNode['pressureConditions']): AdmissionNode => ({
  name: 'n',
  labels: { 'kubernetes.io/hostname': 'n' },
  taints: [],
  allocatable: new Map([
    ['cpu', 4000],
    ['memory', 8 * 2 ** 30],
    ['pods', 110],
  ]),
  ...(pressureConditions ? { pressureConditions } : {}),
});

const pod = (name: string, requests?: Record<string, string>): Pod => ({
  metadata: { name, namespace: 'ns', uid: name },
  spec: { containers: [{ name: 'app', image: 'busybox', ...(requests ? { resources: { requests } } : {}) }] },
});

describe('admission under node pressure', () => {
  it('refuses a BestEffort pod under MemoryPressure with reason Evicted, admits a Burstable one', () => {
    expect(admitPod(pod('be'), node(['MemoryPressure']), [])).to.deep.equal({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(admitPod(pod('b', { memory: '64Mi' }), node(['MemoryPressure']), [])).to.deep.equal({
      admit: true,
    });
    expect(admitPod(pod('be'), node([]), [])).to.deep.equal({ admit: true });
    expect(admitPod(pod('be'), node(), [])).to.deep.equal({ admit: true });
  });

  it('refuses every pod but critical ones under disk pressure, before any other check', () => {
    const huge = pod('huge', { cpu: '64' });
    expect(admitPod(huge, node(['MemoryPressure', 'DiskPressure']), [])).to.deep.equal({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure DiskPressure]. ',
    });
    const critical: Pod = { ...huge, spec: { ...huge.spec, priority: 2_000_000_000 } };
    expect(admitPod(critical, node(['DiskPressure']), [])).to.deep.include({
      admit: false,
      reason: 'OutOfcpu',
    });
  });
});

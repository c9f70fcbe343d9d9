import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { effectiveRunAsUser, fsGroupFrom, fsUserFrom } from '../../../../src/kubelet/volume/fsuser.js';

const c = (name: string, runAsUser?: number): Container => ({
  name,
  ...(runAsUser !== undefined ? { securityContext: { runAsUser } } : {}),
});

function pod(
  containers: Container[],
  opts: { init?: Container[]; podUser?: number; fsGroup?: number } = {},
): Pod {
  return {
    metadata: {},
    spec: {
      containers,
      ...(opts.init ? { initContainers: opts.init } : {}),
      ephemeralContainers: [{ name: 'debug', securityContext: { runAsUser: 12345 } }],
      securityContext: {
        ...(opts.podUser !== undefined ? { runAsUser: opts.podUser } : {}),
        ...(opts.fsGroup !== undefined ? { fsGroup: opts.fsGroup } : {}),
      },
    },
  };
}

describe('fsUserFrom (volumeutil.FsUserFrom)', () => {
  const cases: [string, Pod, number | undefined][] = [
    ['nobody names a user', pod([c('a')]), undefined],
    ['the pod names one', pod([c('a'), c('b')], { podUser: 1000 }), 1000],
    ['init and regular containers agree', pod([c('a', 5)], { init: [c('i', 5)] }), 5],
    ['an init container disagrees', pod([c('a', 5)], { init: [c('i', 6)] }), undefined],
    ['a container overrides the pod to another uid', pod([c('a'), c('b', 7)], { podUser: 1000 }), undefined],
    ['ephemeral containers do not count', pod([c('a', 5)]), 5],
  ];
  for (const [name, p, want] of cases) it(name, () => expect(fsUserFrom(p)).to.equal(want));

  it('effectiveRunAsUser prefers the container, then the pod', () => {
    const p = pod([c('a', 3), c('b')], { podUser: 9 });
    expect(effectiveRunAsUser(p, p.spec.containers[0]!)).to.equal(3);
    expect(effectiveRunAsUser(p, p.spec.containers[1]!)).to.equal(9);
  });

  it('fsGroupFrom reads the pod security context', () => {
    expect(fsGroupFrom(pod([c('a')], { fsGroup: 2000 }))).to.equal(2000);
    expect(fsGroupFrom(pod([c('a')]))).to.equal(undefined);
  });
});

import { expect } from 'chai';
import { rsharedSteps } from '../../../../src/kubelet/volume/sharedroot.js';

const line = (id: number, mountPoint: string, optional: string): string =>
  `${id} 1 254:0 / ${mountPoint} rw,relatime ${optional}${optional ? ' ' : ''}- ext4 /dev/vda rw`;

describe('rsharedSteps (kubelet MakeRShared of its root directory)', () => {
  const cases: { name: string; table: string[]; dir: string; want: ReturnType<typeof rsharedSteps> }[] = [
    {
      name: 'a private root filesystem: bind the directory onto itself, then make it rshared',
      table: [line(27, '/', '')],
      dir: '/tmp/state/nodes/cri-1',
      want: 'bind-then-make-rshared',
    },
    {
      name: 'on a shared root filesystem (systemd hosts): nothing to do',
      table: [line(27, '/', 'shared:1')],
      dir: '/var/lib/kubelet',
      want: 'none',
    },
    {
      name: 'a private mount point at the directory itself: only the propagation flag',
      table: [line(27, '/', ''), line(30, '/tmp/state/nodes/cri-1', '')],
      dir: '/tmp/state/nodes/cri-1',
      want: 'make-rshared',
    },
    {
      name: 'already bound and rshared (an operator restarted): nothing to do',
      table: [line(27, '/', ''), line(30, '/tmp/state/nodes/cri-1', 'shared:4')],
      dir: '/tmp/state/nodes/cri-1',
      want: 'none',
    },
    {
      name: 'the deepest containing mount decides, not a shared parent',
      table: [line(27, '/', 'shared:1'), line(30, '/tmp', 'master:1')],
      dir: '/tmp/state/nodes/cri-1',
      want: 'bind-then-make-rshared',
    },
    {
      name: 'a sibling with the same prefix does not contain the directory',
      table: [line(27, '/', ''), line(30, '/tmp/state/nodes/cri-10', 'shared:4')],
      dir: '/tmp/state/nodes/cri-1',
      want: 'bind-then-make-rshared',
    },
    {
      name: 'of two mounts on one path the last (on top) decides',
      table: [line(27, '/', ''), line(30, '/srv/k', 'shared:4'), line(31, '/srv/k', '')],
      dir: '/srv/k',
      want: 'make-rshared',
    },
    {
      name: 'escaped mount points are decoded',
      table: [line(27, '/', ''), line(30, '/srv/my\\040node', 'shared:2')],
      dir: '/srv/my node/pods',
      want: 'none',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(rsharedSteps(c.table.join('\n'), c.dir)).to.equal(c.want);
    });
  }
});

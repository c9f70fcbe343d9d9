// The CRI fields of the runtime features (issue #60 point 3): recursive read-only and image mounts, the pod's
// user namespace, the supplemental groups policy, the container's user, the Status's handlers and features.
// Sent only when used, so containerd 1.6 gets the requests it always got; on the wire under the CRI's numbers
// (checked on the encoded bytes: a wrong number would be misread silently by the runtime).
import { expect } from 'chai';
import {
  containerConfigToWire,
  containerStatusFromWire,
  mountFromWire,
  mountToWire,
  runtimeStatusFromWire,
  sandboxConfigToWire,
} from '../../../src/runtime/cri/convert.js';
import type { WireContainerStatus } from '../../../src/runtime/cri/messages.js';
import type { ContainerConfig, PodSandboxConfig, UserNamespace } from '../../../src/runtime/types.js';
import { runtimeServiceCodecs } from '../../support/rawcri.js';

const USERNS: UserNamespace = {
  mode: 'POD',
  uids: [{ hostId: 65536, containerId: 0, length: 65536 }],
  gids: [{ hostId: 65536, containerId: 0, length: 65536 }],
};
const sandbox = (
  sc: NonNullable<NonNullable<PodSandboxConfig['linux']>['securityContext']> = {},
): PodSandboxConfig => ({
  metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
  labels: {},
  annotations: {},
  linux: { securityContext: sc },
});
const container = (over: Partial<ContainerConfig> = {}): ContainerConfig => ({
  metadata: { name: 'c', attempt: 0 },
  image: 'busybox',
  labels: {},
  annotations: {},
  ...over,
});

describe('runtime/cri: runtime feature fields', () => {
  it('mounts: recursive read-only and image fields only when used, and back', () => {
    const plain = mountToWire({ containerPath: '/d', hostPath: '/h', readonly: true });
    expect(plain).to.not.have.any.keys('recursive_read_only', 'image', 'image_sub_path');
    const rro = mountToWire({ containerPath: '/d', hostPath: '/h', readonly: true, recursiveReadOnly: true });
    expect(rro.recursive_read_only).to.equal(true);
    const img = mountToWire({
      containerPath: '/v',
      hostPath: '',
      readonly: true,
      image: 'sha256:1',
      imageSubPath: 'etc',
    });
    expect(img).to.include({ host_path: '', image_sub_path: 'etc' });
    expect(img.image).to.deep.equal({ image: 'sha256:1' });
    expect(mountFromWire(img)).to.deep.equal({
      containerPath: '/v',
      hostPath: '',
      readonly: true,
      image: 'sha256:1',
      imageSubPath: 'etc',
      propagation: 'PRIVATE',
    });
  });

  it("user namespace: a pod's own is sent in both configs, the host's is not sent at all", () => {
    const own = sandbox({ namespaceOptions: { userNamespace: USERNS } });
    const wire = sandboxConfigToWire(own).linux.security_context.namespace_options;
    expect(wire.userns_options).to.deep.equal({
      mode: 'POD',
      uids: [{ host_id: 65536, container_id: 0, length: 65536 }],
      gids: [{ host_id: 65536, container_id: 0, length: 65536 }],
    });
    // A container that names none inherits the sandbox's.
    expect(
      containerConfigToWire(container(), own).linux.security_context.namespace_options.userns_options,
    ).to.deep.equal(wire.userns_options);
    const host = sandbox({ namespaceOptions: { userNamespace: { mode: 'NODE' } } });
    expect(sandboxConfigToWire(host).linux.security_context.namespace_options).to.not.have.property(
      'userns_options',
    );
  });

  it('supplemental groups policy: Strict is sent, Merge (the default value) is not', () => {
    expect(
      sandboxConfigToWire(sandbox({ supplementalGroupsPolicy: 'Strict' })).linux.security_context,
    ).to.include({
      supplemental_groups_policy: 'Strict',
    });
    expect(
      sandboxConfigToWire(sandbox({ supplementalGroupsPolicy: 'Merge' })).linux.security_context,
    ).to.not.have.property('supplemental_groups_policy');
    const c = container({ linux: { securityContext: { supplementalGroupsPolicy: 'Strict' } } });
    expect(containerConfigToWire(c, sandbox()).linux.security_context).to.include({
      supplemental_groups_policy: 'Strict',
    });
  });

  it("container status: the runtime's user, absent when the runtime reports none", () => {
    const base: WireContainerStatus = {
      id: 'c',
      metadata: { name: 'c', attempt: 0 },
      state: 'CONTAINER_RUNNING',
      created_at: '1',
      started_at: '2',
      finished_at: '0',
      exit_code: 0,
      image: { image: 'busybox' },
      image_ref: 'sha256:1',
      reason: '',
      message: '',
      labels: {},
      annotations: {},
      log_path: '',
    };
    expect(containerStatusFromWire(base).user).to.equal(undefined);
    const withUser = {
      ...base,
      user: { linux: { uid: '1000', gid: '1000', supplemental_groups: ['1000', '60000'] } },
    };
    expect(containerStatusFromWire(withUser).user).to.deep.equal({
      linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 60000] },
    });
  });

  it('Status: handlers and features from a newer runtime, none from containerd 1.6', () => {
    expect(runtimeStatusFromWire({ status: { conditions: [] } })).to.deep.equal({
      conditions: [],
      handlers: [],
    });
    expect(
      runtimeStatusFromWire({
        status: null,
        runtime_handlers: [
          { name: '', features: { recursive_read_only_mounts: true, user_namespaces: false } },
        ],
        features: { supplemental_groups_policy: true },
      }),
    ).to.deep.equal({
      conditions: [],
      handlers: [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: false }],
      features: { supplementalGroupsPolicy: true },
    });
  });

  describe('on the wire (CRI field numbers)', () => {
    const svc = runtimeServiceCodecs();
    const encode = (c: ContainerConfig, sb: PodSandboxConfig): Buffer =>
      svc.CreateContainer!.requestSerialize({
        pod_sandbox_id: 'sb',
        config: containerConfigToWire(c, sb),
        sandbox_config: sandboxConfigToWire(sb),
      });
    const has = (buf: Buffer, bytes: number[]) => buf.includes(Buffer.from(bytes));

    it('Mount.recursive_read_only = 8, image = 9 (ImageSpec.image = 1), image_sub_path = 10', () => {
      const img = 'sha256:1';
      const buf = encode(
        container({
          mounts: [
            { containerPath: '/v', hostPath: '', readonly: true, image: img, imageSubPath: 'etc' },
            { containerPath: '/d', hostPath: '/h', readonly: true, recursiveReadOnly: true },
          ],
        }),
        sandbox(),
      );
      expect(has(buf, [0x40, 0x01]), 'field 8 varint true').to.equal(true);
      expect(has(buf, [0x4a, img.length + 2, 0x0a, img.length, ...Buffer.from(img)]), 'field 9').to.equal(
        true,
      );
      expect(has(buf, [0x52, 3, ...Buffer.from('etc')]), 'field 10').to.equal(true);
      const back = svc.CreateContainer!.requestDeserialize(buf) as {
        config: {
          mounts: { image: { image: string } | null; image_sub_path: string; recursive_read_only: boolean }[];
        };
      };
      expect(back.config.mounts[0]).to.deep.include({ image_sub_path: 'etc' });
      expect(back.config.mounts[0]!.image?.image).to.equal(img);
      expect(back.config.mounts[1]!.recursive_read_only).to.equal(true);
    });

    it('NamespaceOption.userns_options = 5; supplemental_groups_policy = 11 (sandbox) and 17 (container)', () => {
      const sb = sandbox({ namespaceOptions: { userNamespace: USERNS }, supplementalGroupsPolicy: 'Strict' });
      const buf = encode(
        container({ linux: { securityContext: { supplementalGroupsPolicy: 'Strict' } } }),
        sb,
      );
      expect(has(buf, [0x58, 0x01]), 'sandbox field 11 = Strict').to.equal(true);
      expect(has(buf, [0x88, 0x01, 0x01]), 'container field 17 = Strict').to.equal(true);
      // UserNamespace { mode POD (0), uids [{host_id 65536, container_id 0, length 65536}], gids alike }: set
      // fields are encoded even at their default, so IDMapping = 08 80 80 04 10 00 18 80 80 04 (10 bytes).
      const idmap = [0x08, 0x80, 0x80, 0x04, 0x10, 0x00, 0x18, 0x80, 0x80, 0x04];
      const userns = [0x08, 0x00, 0x12, 10, ...idmap, 0x1a, 10, ...idmap];
      expect(has(buf, [0x2a, userns.length, ...userns]), 'field 5').to.equal(true);
    });
  });
});

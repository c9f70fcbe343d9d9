// runAsNonRoot (src/kubelet/kuberuntime/securitycontext.ts): the pure check with the kubelet's messages, and
// the container it keeps from starting on the simulated runtime (CreateContainerConfigError, Failed event).
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { imageUserOf, verifyRunAsNonRoot } from '../../../../src/kubelet/kuberuntime/securitycontext.js';
import { container, Harness, makePod } from './manager-fixtures.js';

const pod = (sc: Pod['spec']['securityContext'], c: Partial<Container> = {}): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'img', ...c }], ...(sc ? { securityContext: sc } : {}) },
});
const where = '(pod: "p_ns(u1)", container: c)';

describe('verifyRunAsNonRoot', () => {
  const check = (p: Pod, image: { uid?: number; username?: string } | null) => {
    const u = imageUserOf(image);
    return verifyRunAsNonRoot(p, p.spec.containers[0]!, u.uid, u.username);
  };

  it('allows anything without runAsNonRoot, or with it false', () => {
    expect(check(pod(undefined), null)).to.equal(undefined);
    expect(check(pod({ runAsNonRoot: false }), { uid: 0 })).to.equal(undefined);
    // The container's false overrides the pod's true.
    expect(check(pod({ runAsNonRoot: true }, { securityContext: { runAsNonRoot: false } }), null)).to.equal(
      undefined,
    );
  });

  it('refuses an image that runs as root: uid 0, or no user at all', () => {
    const msg = `container has runAsNonRoot and image will run as root ${where}`;
    expect(check(pod({ runAsNonRoot: true }), { uid: 0 })).to.equal(msg);
    expect(check(pod({ runAsNonRoot: true }), {})).to.equal(msg);
    expect(check(pod({ runAsNonRoot: true }), null)).to.equal(msg);
    expect(check(pod(undefined, { securityContext: { runAsNonRoot: true } }), {})).to.equal(msg);
  });

  it('refuses a named image user it cannot verify', () => {
    expect(check(pod({ runAsNonRoot: true }), { username: 'nonroot' })).to.equal(
      `container has runAsNonRoot and image has non-numeric user (nonroot), cannot verify user is non-root ${where}`,
    );
  });

  it('allows a numeric non-root image user, refuses an out-of-range one', () => {
    expect(check(pod({ runAsNonRoot: true }), { uid: 1234 })).to.equal(undefined);
    expect(check(pod({ runAsNonRoot: true }), { uid: 2 ** 31 })).to.equal(
      `container has runAsNonRoot and image has an invalid user id (2147483648). (Must be 1-(2147483647)): ` +
        `must be between 0 and 2147483647, inclusive ${where}`,
    );
  });

  it('trusts an explicit runAsUser (pod or container), except 0', () => {
    expect(check(pod({ runAsNonRoot: true, runAsUser: 1000 }), { uid: 0 })).to.equal(undefined);
    expect(check(pod({ runAsNonRoot: true }, { securityContext: { runAsUser: 1000 } }), null)).to.equal(
      undefined,
    );
    expect(
      check(pod({ runAsNonRoot: true, runAsUser: 1000 }, { securityContext: { runAsUser: 0 } }), {}),
    ).to.equal(`container's runAsUser breaks non-root policy ${where}`);
  });
});

describe('runAsNonRoot on the simulated runtime', () => {
  const IMAGES = ['docker.io/library/busybox:1.36', 'example.com/nonroot:1.5', 'example.com/named:1'];
  const profiles = {
    images: { 'example.com/nonroot': { user: '1234' }, 'example.com/named:1': { user: 'nonroot:x' } },
  };
  const run = (image: string, runAsNonRoot = true) =>
    makePod({
      containers: [container('app', ['sleep', 'infinity'], { image, securityContext: { runAsNonRoot } })],
    });

  it('keeps a root image from starting: CreateContainerConfigError, Failed event, reason cache', async () => {
    const h = new Harness({ images: IMAGES, profiles });
    const p = run('docker.io/library/busybox:1.36');
    const message = `container has runAsNonRoot and image will run as root (pod: "${p.metadata.name}_default(${p.metadata.uid})", container: app)`;
    const r = await h.sync(p);
    expect(r.results.find((x) => x.error)).to.include({ error: 'CreateContainerConfigError', message });
    expect(h.takeEvents().slice(-1)).to.deep.equal([`Failed: Error: ${message}`]);
    expect(h.deps.reasonCache.get(p.metadata.uid!, 'app')).to.deep.equal({
      reason: 'CreateContainerConfigError',
      message,
    });
    expect((await h.status(p)).containers).to.deep.equal([]);
  });

  it('refuses a named image user and runs a numeric non-root one', async () => {
    const h = new Harness({ images: IMAGES, profiles });
    const named = run('example.com/named:1');
    const r = await h.sync(named);
    expect(r.results.find((x) => x.error)?.message).to.match(
      /^container has runAsNonRoot and image has non-numeric user \(nonroot\), cannot verify user is non-root/,
    );
    const ok = run('example.com/nonroot:1.5');
    expect((await h.sync(ok)).error).to.equal(undefined);
    expect((await h.status(ok)).containers.map((c) => c.state)).to.deep.equal(['running']);
  });

  it('reports the image user in the image status (uid for a number, username for a name, root by default)', async () => {
    const h = new Harness({ images: IMAGES, profiles });
    expect(await h.runtime.imageStatus('example.com/nonroot:1.5')).to.include({ uid: 1234 });
    expect(await h.runtime.imageStatus('example.com/named:1')).to.include({ username: 'nonroot' });
    const root = await h.runtime.imageStatus('busybox:1.36');
    expect(root).to.not.have.property('uid');
    expect(root).to.not.have.property('username');
  });
});

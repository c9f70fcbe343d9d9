import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { credentialVerificationPolicy } from '../../../../../src/kubelet/images/pullcredentials.js';
import { fsPullRecordFiles, ImagePullManager } from '../../../../../src/kubelet/images/shell/pullrecords.js';
import { MemoryVolumeFS } from '../../../../../src/kubelet/volume/memfs.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const ROOT = '/var/lib/kubelet-operator/nodes/n1';
const IMAGE = 'registry.io/team/app:1';
const REF = 'sha256:0123';
const secretCreds = {
  auth: { username: 'u', password: 'p' },
  hash: 'h1',
  source: { secret: { uid: 'ua', namespace: 'ns', name: 'a' } },
};

function manager(policy: Parameters<typeof credentialVerificationPolicy>[0] = 'NeverVerifyPreloadedImages') {
  const fs = new MemoryVolumeFS();
  const m = new ImagePullManager(
    fsPullRecordFiles(fs, ROOT),
    credentialVerificationPolicy(policy),
    { now: () => Date.parse('2026-12-07T01:00:00Z') },
    { warn: () => undefined },
  );
  return { fs, m };
}

describe("image pull records on the node's file system (kubelet fs_pullrecords)", () => {
  it("keeps an intent while a pull is in flight, and the kubelet's record after it, by sha256 of the name", async () => {
    const { fs, m } = manager();
    await m.recordPullIntent(IMAGE);
    await m.recordPullIntent(IMAGE);
    const intent = `${ROOT}/image_manager/pulling/sha256-${sha(IMAGE)}`;
    expect(JSON.parse((await fs.readFile(intent)).toString())).to.deep.equal({
      kind: 'ImagePullIntent',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      image: IMAGE,
    });
    expect(((await fs.stat(`${ROOT}/image_manager/pulling`))?.mode ?? 0) & 0o777).to.equal(0o700);
    // Two pulls in flight: the intent stays until both ended.
    await m.recordImagePullFailed(IMAGE);
    expect(await fs.stat(intent)).to.not.equal(undefined);
    await m.recordImagePulled(IMAGE, REF, secretCreds);
    expect(await fs.stat(intent)).to.equal(undefined);
    const record = JSON.parse(
      (await fs.readFile(`${ROOT}/image_manager/pulled/sha256-${sha(REF)}`)).toString(),
    );
    expect(record).to.deep.equal({
      kind: 'ImagePulledRecord',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      lastUpdatedTime: '2026-12-07T01:00:00Z',
      imageRef: REF,
      credentialMapping: {
        'registry.io/team/app': {
          kubernetesSecrets: [{ uid: 'ua', namespace: 'ns', name: 'a', credentialHash: 'h1' }],
        },
      },
    });
  });

  it("asks for the pod's credentials only when the record needs them, and remembers a new secret that matched", async () => {
    const { fs, m } = manager();
    let asked = 0;
    const none = async () => (asked++, []);
    // Preloaded (no record, no intent): the default policy lets every pod use it, without asking.
    expect(await m.mustAttemptImagePull(IMAGE, REF, none)).to.deep.equal({ pull: false, why: 'policy' });
    expect(asked).to.equal(0);
    await m.recordPullIntent(IMAGE);
    await m.recordImagePulled(IMAGE, REF, secretCreds);
    expect(await m.mustAttemptImagePull(IMAGE, REF, none)).to.deep.equal({
      pull: true,
      why: 'must-authenticate',
    });
    expect(asked).to.equal(1);
    const other = { ...secretCreds, source: { secret: { uid: 'ub', namespace: 'ns', name: 'b' } } };
    expect((await m.mustAttemptImagePull(IMAGE, REF, async () => [other])).pull).to.equal(false);
    const record = JSON.parse(
      (await fs.readFile(`${ROOT}/image_manager/pulled/sha256-${sha(REF)}`)).toString(),
    );
    expect(
      record.credentialMapping['registry.io/team/app'].kubernetesSecrets.map((s: { name: string }) => s.name),
    ).to.deep.equal(['a', 'b']);
    // A record that cannot be read: pull, to be safe (the kubelet's answer to a cache it cannot read). The
    // manager keeps what it read and wrote, as the kubelet's cached accessor: a restarted one reads the file.
    await fs.writeFile(`${ROOT}/image_manager/pulled/sha256-${sha(REF)}`, Buffer.from('garbage'));
    expect((await m.mustAttemptImagePull(IMAGE, REF, async () => [other])).pull).to.equal(false);
    const restarted = new ImagePullManager(
      fsPullRecordFiles(fs, ROOT),
      credentialVerificationPolicy('NeverVerifyPreloadedImages'),
      { now: () => 0 },
      { warn: () => undefined },
    );
    for (let i = 0; i < 2; i++) {
      expect(await restarted.mustAttemptImagePull(IMAGE, REF, none)).to.deep.equal({
        pull: true,
        why: 'unreadable-record',
      });
    }
  });

  it('reads a record from the files once, and keeps what it writes', async () => {
    const fs = new MemoryVolumeFS();
    const files = fsPullRecordFiles(fs, ROOT);
    const reads: string[] = [];
    const counted = {
      ...files,
      read: (dir: 'pulling' | 'pulled', name: string) => (reads.push(dir), files.read(dir, name)),
    };
    const m = new ImagePullManager(
      counted,
      credentialVerificationPolicy('NeverVerifyPreloadedImages'),
      { now: () => 0 },
      { warn: () => undefined },
    );
    const none = async () => [];
    await m.mustAttemptImagePull(IMAGE, REF, none);
    await m.mustAttemptImagePull(IMAGE, REF, none);
    expect(
      reads.filter((d) => d === 'pulled'),
      'an absent record is remembered too',
    ).to.have.length(1);
    await m.recordPullIntent(IMAGE);
    await m.recordImagePulled(IMAGE, REF, secretCreds);
    expect((await m.mustAttemptImagePull(IMAGE, REF, async () => [secretCreds])).pull).to.equal(false);
    expect(reads.filter((d) => d === 'pulled')).to.have.length(1);
    // What it wrote is what a new manager reads.
    const again = new ImagePullManager(
      files,
      credentialVerificationPolicy('NeverVerifyPreloadedImages'),
      { now: () => 0 },
      { warn: () => undefined },
    );
    expect((await again.mustAttemptImagePull(IMAGE, REF, async () => [secretCreds])).pull).to.equal(false);
    expect((await again.mustAttemptImagePull(IMAGE, REF, none)).why).to.equal('must-authenticate');
  });
});

/**
 * The kubelet's image pull records on disk (images/pullmanager fs_pullrecords.go and image_pull_manager.go):
 * an ImagePullIntent per image while a pull is in flight (`<root>/image_manager/pulling`), an
 * ImagePulledRecord per image ID after (`<root>/image_manager/pulled`), files named `sha256-<hex of the
 * name>`. The decisions are pullcredentials.ts's; this keeps the files and the in-flight counts.
 */
import { sha256Hex } from '../../../util/sha256.js';
import path from 'node:path';
import type { VolumeFS } from '../../volume/fs.js';
import type { Clock } from '../../../util/clock.js';
import type { TrackedAuthConfig } from '../../credentialprovider/keyring.js';
import {
  mergePulledRecord,
  mustAttemptImagePull,
  parsePulledRecord,
  pullCredentialsOf,
  podPullCredentials,
  type CredentialVerificationRequired,
  type ImagePulledRecord,
  type ImagePullCredentials,
  type PodPullCredentials,
  type PullCheck,
} from '../pullcredentials.js';

const NEED_POD_CREDENTIALS = new Error('the pod credentials are needed');

function cacheFilename(name: string): string {
  return `sha256-${sha256Hex(name)}`;
}

export interface PullRecordsLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** The two record directories under `<root>/image_manager`. */
export type PullRecordDir = 'pulling' | 'pulled';

/** Where the records are kept: files under the node's root, or memory in tests. Absent reads undefined. */
export interface PullRecordFiles {
  read(dir: PullRecordDir, name: string): Promise<string | undefined>;
  write(dir: PullRecordDir, name: string, content: string): Promise<void>;
  remove(dir: PullRecordDir, name: string): Promise<void>;
}

/**
 * The kubelet's layout, `<rootDir>/image_manager/{pulling,pulled}/sha256-<hex>` (0700 directories, atomic
 * writes), on the node's file system (the pod environment's: the host's, or memory in tests).
 */
export function fsPullRecordFiles(fs: VolumeFS, rootDir: string): PullRecordFiles {
  const at = (dir: PullRecordDir) => path.join(rootDir, 'image_manager', dir);
  let seq = 0;
  return {
    async read(dir, name) {
      try {
        return (await fs.readFile(path.join(at(dir), name))).toString('utf8');
      } catch {
        return undefined;
      }
    },
    async write(dir, name, content) {
      await fs.mkdir(at(dir), 0o700);
      const target = path.join(at(dir), name);
      const tmp = `${target}.tmp-${++seq}`;
      await fs.writeFile(tmp, Buffer.from(content), 0o600);
      await fs.rename(tmp, target);
    },
    async remove(dir, name) {
      await fs.rm(path.join(at(dir), name));
    },
  };
}

/** Records in memory (tests; a node without a root directory). */
export class MemPullRecordFiles implements PullRecordFiles {
  readonly files = new Map<string, string>();
  read(dir: PullRecordDir, name: string): Promise<string | undefined> {
    return Promise.resolve(this.files.get(`${dir}/${name}`));
  }
  write(dir: PullRecordDir, name: string, content: string): Promise<void> {
    this.files.set(`${dir}/${name}`, content);
    return Promise.resolve();
  }
  remove(dir: PullRecordDir, name: string): Promise<void> {
    this.files.delete(`${dir}/${name}`);
    return Promise.resolve();
  }
}

/** The pull manager of one node: its records, its policy and the pulls in flight. */
export class ImagePullManager {
  /** Pulls in flight per image (the intent file stays while any is). */
  private readonly intents = new Map<string, number>();
  /**
   * Pulled records by image ID as last read or written, absent ones too (kubelet: the cached accessor in
   * front of the files): this manager is the only writer of its node's records, and every container start
   * asks. A file that is no record is read again each time.
   */
  private readonly pulled = new Map<string, ImagePulledRecord | undefined>();

  constructor(
    private readonly files: PullRecordFiles,
    private readonly requiresVerification: CredentialVerificationRequired,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly log: PullRecordsLogger,
  ) {}

  /** The image's record; 'unreadable' when a file is there but is no record (the kubelet then pulls). */
  private async pulledRecord(imageRef: string): Promise<ImagePulledRecord | undefined | 'unreadable'> {
    if (this.pulled.has(imageRef)) return this.pulled.get(imageRef);
    const text = await this.files.read('pulled', cacheFilename(imageRef));
    const r = text === undefined ? undefined : parsePulledRecord(text);
    if (text !== undefined && !r) {
      this.log.warn('unreadable image pulled record', { imageRef });
      return 'unreadable';
    }
    // A record of another image under this name (a hash collision, a hand edit) is none.
    const record = r?.imageRef === imageRef ? r : undefined;
    this.pulled.set(imageRef, record);
    return record;
  }

  private async intentExists(image: string): Promise<boolean> {
    if ((this.intents.get(image) ?? 0) > 0) return true;
    return (await this.files.read('pulling', cacheFilename(image))) !== undefined;
  }

  /** Before a pull: an intent that outlives a crash, so the image counts as pulled by this node. */
  async recordPullIntent(image: string): Promise<void> {
    const intent = { kind: 'ImagePullIntent', apiVersion: 'kubelet.config.k8s.io/v1beta1', image };
    await this.files.write('pulling', cacheFilename(image), JSON.stringify(intent));
    this.intents.set(image, (this.intents.get(image) ?? 0) + 1);
  }

  private async dropIntent(image: string): Promise<void> {
    const n = this.intents.get(image) ?? 0;
    if (n > 1) {
      this.intents.set(image, n - 1);
      return;
    }
    try {
      await this.files.remove('pulling', cacheFilename(image));
      this.intents.delete(image);
    } catch (err) {
      this.log.warn('failed to remove image pull intent', { image, err: String(err) });
    }
  }

  private async writePulledRecordIfChanged(
    image: string,
    imageRef: string,
    credentials: ImagePullCredentials | undefined,
  ): Promise<void> {
    const existing = await this.pulledRecord(imageRef);
    const { record, changed } = mergePulledRecord(
      existing === 'unreadable' ? undefined : existing,
      imageRef,
      image,
      credentials,
      new Date(this.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    );
    if (!changed) return;
    // Forgotten first: a failed write leaves the file as it was, read again next time.
    this.pulled.delete(imageRef);
    await this.files.write('pulled', cacheFilename(imageRef), JSON.stringify(record));
    this.pulled.set(imageRef, record);
  }

  /** After a successful pull with `used` (undefined: anonymous or node credentials). */
  async recordImagePulled(
    image: string,
    imageRef: string,
    used: TrackedAuthConfig | undefined,
  ): Promise<void> {
    try {
      await this.writePulledRecordIfChanged(image, imageRef, pullCredentialsOf(used));
    } catch (err) {
      // The intent stays, so the image still counts as pulled here (as the kubelet leaves it).
      this.log.warn('failed to write image pulled record', { image, imageRef, err: String(err) });
      return;
    }
    await this.dropIntent(image);
  }

  async recordImagePullFailed(image: string): Promise<void> {
    await this.dropIntent(image);
  }

  /**
   * Whether a pod must pull an image already on the node (kubelet MustAttemptImagePull). `found` is the
   * credentials the pod's keyring has for the image; a record it cannot read means pulling again.
   */
  async mustAttemptImagePull(
    image: string,
    imageRef: string,
    found: () => Promise<readonly TrackedAuthConfig[]>,
  ): Promise<PullCheck> {
    if (imageRef === '') return { pull: true, why: 'no-record' };
    const record = await this.pulledRecord(imageRef);
    // Records that cannot be read: fail safe, as the kubelet, by pulling.
    if (record === 'unreadable') return { pull: true, why: 'unreadable-record' };
    const pulledByKubelet = record !== undefined || (await this.intentExists(image));
    // The decision is pure and asks for the pod's credentials synchronously: when it does, they are looked
    // up (plugins may run) and it is made again with them.
    let pod: PodPullCredentials | undefined;
    const decide = () =>
      mustAttemptImagePull(image, record, pulledByKubelet, this.requiresVerification, () => {
        if (!pod) throw NEED_POD_CREDENTIALS;
        return pod;
      });
    let check: PullCheck;
    try {
      check = decide();
    } catch (err) {
      if (err !== NEED_POD_CREDENTIALS) throw err;
      pod = podPullCredentials(await found());
      check = decide();
    }
    if (!check.pull && check.remember) {
      try {
        await this.writePulledRecordIfChanged(image, imageRef, check.remember);
      } catch (err) {
        this.log.warn('failed to write image pulled record', { image, imageRef, err: String(err) });
      }
    }
    return check;
  }
}

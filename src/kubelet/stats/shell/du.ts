/**
 * Disk usage of directories (volumes, container logs), measured in the background and served from a cache,
 * as the kubelet's fsResourceAnalyzer does: walking a tree on every scrape would make a scrape cost as much
 * as the tree. A reading older than `periodMs` is refreshed after it is served; one walk runs at a time.
 * Symlinks count as entries and are never followed (the atomic writer's `..data` links stay in the volume).
 */
import type { Clock } from '../../../util/clock.js';
import type { VolumeFS } from '../../volume/fs.js';

export interface DirUsageReading {
  timeMs: number;
  usedBytes: number;
  inodesUsed: number;
}

/**
 * Walks `dir` (which must exist) as the kubelet's DiskUsage does: every entry counts an inode, itself included;
 * on a real disk the bytes are the entries' allocated blocks (directories and links too), a hard-linked file
 * counts once and nothing on another device is entered (a mount inside a volume is not the volume's usage).
 * In memory (no disk figures) the bytes are the files' sizes.
 */
export async function walkUsage(
  fs: Pick<VolumeFS, 'lstat' | 'readdir'>,
  dir: string,
): Promise<Omit<DirUsageReading, 'timeMs'>> {
  let usedBytes = 0;
  let inodesUsed = 0;
  const top = await fs.lstat(dir);
  const linked = new Set<number>();
  const stack = [dir];
  while (stack.length > 0) {
    const path = stack.pop()!;
    const st = path === dir ? top : await fs.lstat(path);
    if (!st) continue;
    const disk = st.disk;
    if (disk && top?.disk && disk.dev !== top.disk.dev) continue;
    if (disk && disk.nlink > 1 && st.kind !== 'dir') {
      if (linked.has(disk.ino)) continue;
      linked.add(disk.ino);
    }
    inodesUsed++;
    if (disk) usedBytes += disk.blocks * 512;
    else if (st.kind === 'file') usedBytes += st.size;
    if (st.kind === 'dir') {
      for (const name of await fs.readdir(path).catch(() => [] as string[])) stack.push(`${path}/${name}`);
    }
  }
  return { usedBytes, inodesUsed };
}

export class DirUsage {
  /** `checkedMs` -Infinity: never walked yet; `reading` absent: the directory did not exist. */
  private readonly cache = new Map<string, { checkedMs: number; reading?: DirUsageReading }>();
  private readonly queue = new Set<string>();
  private walking = false;

  constructor(
    private readonly fs: Pick<VolumeFS, 'lstat' | 'readdir'>,
    private readonly clock: Clock,
    private readonly periodMs = 60_000,
  ) {}

  /** The last reading of `dir` (undefined before the first walk finished, or when it does not exist). */
  get(dir: string): DirUsageReading | undefined {
    const r = this.cache.get(dir);
    if (r === undefined || this.clock.now() - r.checkedMs >= this.periodMs) this.refresh(dir);
    return r?.reading;
  }

  /** Drops every directory for which `keep` is false. */
  retain(keep: (dir: string) => boolean): void {
    for (const dir of this.cache.keys()) if (!keep(dir)) this.cache.delete(dir);
  }

  /** Resolves once no walk is queued (tests). */
  async idle(): Promise<void> {
    while (this.walking || this.queue.size > 0) await new Promise((r) => setImmediate(r));
  }

  size(): number {
    return this.cache.size;
  }

  private refresh(dir: string): void {
    if (!this.cache.has(dir)) this.cache.set(dir, { checkedMs: -Infinity });
    this.queue.add(dir);
    if (!this.walking) void this.drain();
  }

  private async drain(): Promise<void> {
    this.walking = true;
    try {
      for (const dir of this.queue) {
        this.queue.delete(dir);
        if (!this.cache.has(dir)) continue; // dropped meanwhile
        try {
          const exists = await this.fs.lstat(dir);
          const usage = exists ? await walkUsage(this.fs, dir) : undefined;
          const now = this.clock.now();
          if (this.cache.has(dir))
            this.cache.set(dir, { checkedMs: now, ...(usage ? { reading: { timeMs: now, ...usage } } : {}) });
        } catch {
          // A tree that changes while walked is read again next period.
          const entry = this.cache.get(dir);
          if (entry) entry.checkedMs = this.clock.now();
        }
      }
    } finally {
      this.walking = false;
    }
  }
}

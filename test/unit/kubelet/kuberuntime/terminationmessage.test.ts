import { expect } from 'chai';
import { fileReaderFor } from '../../../../src/kubelet/shell/kubelet_volumes.js';
import {
  terminationMessageOf,
  type ContainerFileReader,
} from '../../../../src/kubelet/kuberuntime/terminationmessage.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import {
  ContainerTerminationMessagePathAnnotation,
  ContainerTerminationMessagePolicyAnnotation,
} from '../../../../src/runtime/labels.js';
import type { ContainerState, ContainerStatus, Mount, Runtime } from '../../../../src/runtime/types.js';

const FILE = '/var/lib/kubelet/pods/uid-1/containers/app/1a2b3c4d';
/** A runtime that hands out no log lines itself: logs come from the CRI log file. */
const criRuntime: Pick<Runtime, 'capabilities'> = {
  capabilities: { hostLogDirectories: true, hostPodCgroups: true },
};

function status(
  over: {
    state?: ContainerState;
    exitCode?: number;
    reason?: string;
    path?: string | null;
    policy?: 'File' | 'FallbackToLogsOnError';
    mounts?: Mount[];
    logPath?: string;
  } = {},
): ContainerStatus {
  const path = over.path === undefined ? '/dev/termination-log' : over.path;
  const annotations: Record<string, string> = {};
  if (path !== null) annotations[ContainerTerminationMessagePathAnnotation] = path;
  if (over.policy) annotations[ContainerTerminationMessagePolicyAnnotation] = over.policy;
  return {
    id: 'c1',
    podSandboxId: 's1',
    metadata: { name: 'app', attempt: 0 },
    image: 'busybox',
    imageRef: 'sha256:x',
    state: over.state ?? 'exited',
    createdAt: 0n,
    startedAt: 0n,
    finishedAt: 0n,
    labels: {},
    annotations,
    exitCode: over.exitCode ?? 1,
    reason: over.reason ?? 'Error',
    message: '',
    logPath: over.logPath ?? '',
    mounts: over.mounts ?? [
      { containerPath: '/data', hostPath: '/srv/data' },
      { containerPath: '/dev/termination-log', hostPath: FILE },
    ],
  };
}

/** A reader over a MemoryVolumeFS, with a log tail given as text; counts log reads. */
function reader(fs: MemoryVolumeFS, log = 'line 1\nline 2\n'): ContainerFileReader & { logReads: number[] } {
  const base = fileReaderFor(fs, criRuntime);
  const r = {
    logReads: [] as number[],
    readFileTail: (p: string, max: number) => base.readFileTail(p, max),
    readLogTail: async (_s: ContainerStatus, lines: number) => {
      r.logReads.push(lines);
      return log;
    },
  };
  return r;
}

async function fsWith(content?: string | Buffer): Promise<MemoryVolumeFS> {
  const fs = new MemoryVolumeFS();
  await fs.mkdir('/var/lib/kubelet/pods/uid-1/containers/app');
  if (content !== undefined) await fs.writeFile(FILE, Buffer.from(content));
  return fs;
}

describe('kuberuntime/terminationmessage (terminationMessageOf)', () => {
  const table: [string, string | undefined, Parameters<typeof status>[0], string, number[]][] = [
    [
      'reads the file found through the mount at terminationMessagePath',
      'disk full\n',
      {},
      'disk full\n',
      [],
    ],
    [
      'a custom path',
      'bye',
      { path: '/tmp/why', mounts: [{ containerPath: '/tmp/why', hostPath: FILE }] },
      'bye',
      [],
    ],
    ['an empty file with policy File: no message', '', {}, '', []],
    ['no file on the node: no message', undefined, {}, '', []],
    ['no mount at the path: no message', 'unseen', { mounts: [] }, '', []],
    ['no terminationMessagePath: no message', 'unseen', { path: '' }, '', []],
    ['no path annotation at all: no message', 'unseen', { path: null }, '', []],
    ['a running container: no message', 'not yet', { state: 'running' }, '', []],
    ['a created container: no message', 'not yet', { state: 'created' }, '', []],
    [
      'FallbackToLogsOnError, failed, empty file: the log tail (80 lines)',
      '',
      { policy: 'FallbackToLogsOnError', exitCode: 2 },
      'line 1\nline 2\n',
      [80],
    ],
    [
      'FallbackToLogsOnError, failed, no file: the log tail',
      undefined,
      { policy: 'FallbackToLogsOnError', exitCode: 2 },
      'line 1\nline 2\n',
      [80],
    ],
    [
      'FallbackToLogsOnError with a message in the file: the file',
      'explained',
      { policy: 'FallbackToLogsOnError', exitCode: 2 },
      'explained',
      [],
    ],
    [
      'FallbackToLogsOnError, exit 0: no fallback',
      '',
      { policy: 'FallbackToLogsOnError', exitCode: 0, reason: 'Completed' },
      '',
      [],
    ],
    [
      'FallbackToLogsOnError, ContainerCannotRun: no logs to fall back to',
      '',
      { policy: 'FallbackToLogsOnError', exitCode: 128, reason: 'ContainerCannotRun' },
      '',
      [],
    ],
  ];
  for (const [what, content, st, want, logReads] of table) {
    it(what, async () => {
      const r = reader(await fsWith(content));
      expect(await terminationMessageOf(status(st), r)).to.equal(want);
      expect(r.logReads).to.deep.equal(logReads);
    });
  }

  it('keeps the last 4096 bytes of a long file', async () => {
    const long = `${'a'.repeat(5000)}${'z'.repeat(4000)}THE END`;
    const r = reader(await fsWith(long));
    const msg = await terminationMessageOf(status(), r);
    expect(msg).to.have.length(4096);
    expect(msg.endsWith('THE END')).to.equal(true);
    expect(msg.startsWith('a'.repeat(89))).to.equal(true);
  });

  it('keeps the last 2048 bytes of the log fallback', async () => {
    const r = reader(await fsWith(''), `${'x'.repeat(3000)}tail\n`);
    const msg = await terminationMessageOf(status({ policy: 'FallbackToLogsOnError' }), r);
    expect(msg).to.have.length(2048);
    expect(msg.endsWith('tail\n')).to.equal(true);
  });

  it('reports a read failure as the message, without falling back', async () => {
    const fs = await fsWith();
    await fs.mkdir(FILE); // a directory where the file should be
    const r = reader(fs);
    const msg = await terminationMessageOf(status({ policy: 'FallbackToLogsOnError' }), r);
    expect(msg).to.match(new RegExp(`^Error on reading termination log ${FILE}: `));
    expect(r.logReads).to.deep.equal([]);
  });

  it('reports a log read failure as the message', async () => {
    const r: ContainerFileReader = {
      readFileTail: async () => undefined,
      readLogTail: async () => {
        throw new Error('log file rotated away');
      },
    };
    expect(await terminationMessageOf(status({ policy: 'FallbackToLogsOnError' }), r)).to.equal(
      'Error on reading termination message from logs: log file rotated away',
    );
  });

  describe('fileReaderFor (the node reader)', () => {
    it('reads a file tail, undefined for a missing file', async () => {
      const fs = await fsWith('0123456789');
      const r = fileReaderFor(fs, criRuntime);
      expect((await r.readFileTail(FILE, 4))?.toString()).to.equal('6789');
      expect((await r.readFileTail(FILE, 100))?.toString()).to.equal('0123456789');
      expect(await r.readFileTail('/nope', 4)).to.equal(undefined);
    });

    it('reads the log tail from the runtime when it hands out lines, else from the CRI log file', async () => {
      const fs = await fsWith();
      const lines = [
        '2026-01-01T00:00:00.000000000Z stdout F one',
        '2026-01-01T00:00:00.000000000Z stderr P par',
        '2026-01-01T00:00:00.000000000Z stderr F tial',
        '2026-01-01T00:00:00.000000000Z stdout F three',
      ];
      const sim = { capabilities: { ...criRuntime.capabilities, readLogs: () => lines } };
      expect(await fileReaderFor(fs, sim).readLogTail(status(), 80)).to.equal('one\npartial\nthree\n');
      expect(await fileReaderFor(fs, sim).readLogTail(status(), 1)).to.equal('three\n');
      await fs.mkdir('/var/log/pods/x');
      await fs.writeFile('/var/log/pods/x/0.log', Buffer.from(`${lines.join('\n')}\n`));
      const cri = criRuntime;
      // The tail counts CRI lines, as the kubelet's log reader does: a partial line is a line.
      expect(
        await fileReaderFor(fs, cri).readLogTail(status({ logPath: '/var/log/pods/x/0.log' }), 2),
      ).to.equal('tial\nthree\n');
      expect(await fileReaderFor(fs, cri).readLogTail(status(), 2)).to.equal('');
    });
  });
});

import { expect } from 'chai';
import {
  MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH,
  MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH,
  MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES,
  TERMINATION_MESSAGE_FILE_MODE,
  decideTerminationMessage,
  getTerminationMessage,
  makeTerminationMessageFileID,
  podContainerDir,
  terminationMessageFromLogs,
  terminationMessageHostPath,
  terminationMessageMount,
  withTerminationMessage,
  type TerminationMessageInputs,
} from '../../../../src/kubelet/podfiles/termination.js';

const failed = (over: Partial<TerminationMessageInputs>): TerminationMessageInputs => ({
  policy: 'FallbackToLogsOnError',
  exitCode: 1,
  file: { kind: 'missing' },
  ...over,
});

describe('termination message: limits', () => {
  it('are the kubelet constants', () => {
    expect(MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH).to.equal(4096);
    expect(MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH).to.equal(2048);
    expect(MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES).to.equal(80);
    expect(TERMINATION_MESSAGE_FILE_MODE).to.equal(0o666);
  });
});

describe('termination message: the file', () => {
  it('is the message, whatever the exit code, under policy File', () => {
    expect(decideTerminationMessage({ exitCode: 0, file: { kind: 'read', data: 'done\n' } })).to.deep.equal({
      checkLogs: false,
      message: 'done\n',
    });
    expect(
      decideTerminationMessage({ policy: 'File', exitCode: 3, file: { kind: 'missing' } }),
    ).to.deep.equal({
      checkLogs: false,
      message: '',
    });
  });

  it('keeps only its last 4096 bytes', () => {
    const data = new TextEncoder().encode('H'.repeat(100) + 'T'.repeat(4096));
    expect(decideTerminationMessage({ exitCode: 1, file: { kind: 'read', data } })).to.deep.equal({
      checkLogs: false,
      message: 'T'.repeat(4096),
    });
  });

  it('cut through a character reads as U+FFFD per stray byte', () => {
    const data = 'é' + 'x'.repeat(4095); // 2 + 4095 bytes: the cut leaves the second byte of é
    const out = decideTerminationMessage({ exitCode: 0, file: { kind: 'read', data } });
    expect(out).to.deep.equal({ checkLogs: false, message: '\uFFFD' + 'x'.repeat(4095) });
  });

  it('a read error is the message, and never falls back to logs', () => {
    const out = decideTerminationMessage(
      failed({ file: { kind: 'error', hostPath: '/p/containers/app/0a1b2c3d', error: 'permission denied' } }),
    );
    expect(out).to.deep.equal({
      checkLogs: false,
      message: 'Error on reading termination log /p/containers/app/0a1b2c3d: permission denied',
    });
  });
});

describe('termination message: FallbackToLogsOnError', () => {
  it('reads the logs when the file is missing or empty and the container failed', () => {
    expect(decideTerminationMessage(failed({}))).to.deep.equal({ checkLogs: true });
    expect(
      decideTerminationMessage(failed({ file: { kind: 'read', data: new Uint8Array() } })),
    ).to.deep.equal({
      checkLogs: true,
    });
  });

  it('not when the file said something, the exit was 0, or the container never ran', () => {
    expect(decideTerminationMessage(failed({ file: { kind: 'read', data: 'why' } }))).to.deep.equal({
      checkLogs: false,
      message: 'why',
    });
    expect(decideTerminationMessage(failed({ exitCode: 0 }))).to.deep.equal({
      checkLogs: false,
      message: '',
    });
    expect(decideTerminationMessage(failed({ reason: 'ContainerCannotRun' }))).to.deep.equal({
      checkLogs: false,
      message: '',
    });
    expect(decideTerminationMessage(failed({ policy: 'File' }))).to.deep.equal({
      checkLogs: false,
      message: '',
    });
  });

  it('keeps the last 2048 bytes of the log tail', () => {
    const log = 'a'.repeat(1000) + 'b'.repeat(2048);
    expect(terminationMessageFromLogs(log)).to.equal('b'.repeat(2048));
    expect(terminationMessageFromLogs('short\n')).to.equal('short\n');
  });

  it('asks the log reader for 80 lines; a failed read becomes the message', async () => {
    const asked: number[] = [];
    const msg = await getTerminationMessage(failed({}), async (lines) => {
      asked.push(lines);
      return 'panic: boom\n';
    });
    expect(msg).to.equal('panic: boom\n');
    expect(asked).to.deep.equal([80]);
    const err = await getTerminationMessage(failed({}), async () => {
      throw new Error('log file gone');
    });
    expect(err).to.equal('Error on reading termination message from logs: log file gone');
    let read = false;
    await getTerminationMessage(failed({ exitCode: 0 }), async () => {
      read = true;
      return '';
    });
    expect(read).to.equal(false);
  });

  it("is appended to the runtime's message after ': '", () => {
    expect(withTerminationMessage('OOMKilled by the kernel', 'bye')).to.equal('OOMKilled by the kernel: bye');
    expect(withTerminationMessage(undefined, 'bye')).to.equal('bye');
    expect(withTerminationMessage('runtime says', '')).to.equal('runtime says');
  });
});

describe('termination message: the per-start file', () => {
  it('is named by 8 hex digits of a random uint32', () => {
    expect(makeTerminationMessageFileID(() => 0)).to.equal('00000000');
    expect(makeTerminationMessageFileID(() => 0.5)).to.equal('80000000');
    expect(makeTerminationMessageFileID(() => 0.9999999999)).to.equal('ffffffff');
    expect(makeTerminationMessageFileID(() => 1 / 2 ** 32)).to.equal('00000001');
  });

  it('lives at <podDir>/containers/<name>/<id> and is mounted at terminationMessagePath', () => {
    expect(podContainerDir('/var/lib/kubelet/pods/u1/', 'app')).to.equal(
      '/var/lib/kubelet/pods/u1/containers/app',
    );
    expect(terminationMessageHostPath('/var/lib/kubelet/pods/u1', 'app', '0a1b2c3d')).to.equal(
      '/var/lib/kubelet/pods/u1/containers/app/0a1b2c3d',
    );
    expect(
      terminationMessageMount('/p', { name: 'app', terminationMessagePath: '/tmp/msg' }, 'id'),
    ).to.deep.equal({
      hostPath: '/p/containers/app/id',
      containerPath: '/tmp/msg',
    });
    expect(terminationMessageMount('/p', { name: 'app' }, 'id')?.containerPath).to.equal(
      '/dev/termination-log',
    );
    expect(terminationMessageMount('/p', { name: 'app', terminationMessagePath: '' }, 'id')).to.equal(
      undefined,
    );
  });
});

import { expect } from 'chai';
import { appendFile, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  criFileLines,
  parseCriLogLine,
  parseLines,
  parseLogOptions,
  polledLines,
  renderLogs,
  type FollowControl,
} from '../../../src/server/nodeapi/logs.js';

async function collect(it: AsyncIterable<Buffer | string>): Promise<string> {
  let s = '';
  for await (const c of it) s += c.toString();
  return s;
}

const L = (t: string, stream: string, tag: string, text: string) => `${t} ${stream} ${tag} ${text}`;
const lines = [
  L('2024-01-01T00:00:01.5Z', 'stdout', 'F', 'one'),
  L('2024-01-01T00:00:02.000000001Z', 'stderr', 'P', 'two-a '),
  L('2024-01-01T00:00:02.000000002Z', 'stderr', 'F', 'two-b'),
  L('2024-01-01T00:00:03Z', 'stdout', 'F', 'three'),
];

async function* from(a: string[]): AsyncGenerator<string> {
  for (const l of a) yield l;
}

describe('node API logs', () => {
  it('parses the CRI log format, partial tags and odd lines', () => {
    expect(parseCriLogLine(lines[1]!)).to.deep.include({
      stream: 'stderr',
      partial: true,
      text: 'two-a ',
      timeNs: 1704067202000000001n,
    });
    expect(parseCriLogLine('2024-01-01T00:00:01Z stdout F ')).to.include({ text: '', partial: false });
    expect(parseCriLogLine('2024-01-01T00:00:01Z stdout F a  b')).to.include({ text: 'a  b' });
    expect(() => parseCriLogLine('garbage')).to.throw(/malformed/);
    expect(() => parseCriLogLine('2024-13-01T00:00:01Z stdout F x')).to.throw(/timestamp/);
    expect(() => parseCriLogLine('2024-01-01T00:00:01Z stdin F x')).to.throw(/stream/);
  });

  it('joins partial lines, adds timestamps at line starts, filters by time and limits bytes', async () => {
    const all = await collect(renderLogs(parseLines(from(lines)), { timestamps: false }));
    expect(all).to.equal('one\ntwo-a two-b\nthree\n');
    const ts = await collect(renderLogs(parseLines(from(lines)), { timestamps: true }));
    expect(ts).to.equal(
      '2024-01-01T00:00:01.5Z one\n2024-01-01T00:00:02.000000001Z two-a two-b\n2024-01-01T00:00:03Z three\n',
    );
    const since = await collect(
      renderLogs(parseLines(from(lines)), { timestamps: false, sinceNs: 1704067202000000000n }),
    );
    expect(since).to.equal('two-a two-b\nthree\n');
    const limited = await collect(renderLogs(parseLines(from(lines)), { timestamps: false, limitBytes: 6 }));
    expect(limited).to.equal('one\ntw');
  });

  it('reads PodLogOptions and refuses malformed ones', () => {
    const now = Date.parse('2024-01-01T00:01:00Z');
    const o = parseLogOptions(
      new URLSearchParams('follow=true&tailLines=3&timestamps=1&sinceSeconds=60'),
      now,
    );
    expect(o).to.deep.include({ follow: true, tailLines: 3, timestamps: true, previous: false });
    expect(o.sinceNs).to.equal(BigInt(Date.parse('2024-01-01T00:00:00Z')) * 1_000_000n);
    expect(parseLogOptions(new URLSearchParams('sinceTime=2024-01-01T00:00:00.5Z'), now).sinceNs).to.equal(
      1704067200500000000n,
    );
    const bad = [
      'tailLines=-1',
      'tailLines=x',
      'limitBytes=0',
      'follow=maybe',
      'sinceSeconds=0',
      'sinceTime=yesterday',
      'nope=1',
      'sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z',
    ];
    for (const q of bad) expect(() => parseLogOptions(new URLSearchParams(q), now), q).to.throw();
  });

  describe('sources', () => {
    let dir: string;
    beforeEach(async () => (dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-logs-'))));
    afterEach(() => rm(dir, { recursive: true, force: true }));

    const ctl = (follow: boolean, stillWriting: () => Promise<boolean>): FollowControl => ({
      follow,
      stillWriting,
      signal: new AbortController().signal,
      pollMs: 10,
    });

    it('tails a file by lines and reads all of it', async () => {
      const f = path.join(dir, '0.log');
      await writeFile(f, lines.join('\n') + '\n');
      expect(
        await collect(
          criFileLines(
            f,
            2,
            ctl(false, async () => false),
          ),
        ),
      ).to.equal(lines.slice(2).join(''));
      expect(
        await collect(
          criFileLines(
            f,
            0,
            ctl(false, async () => false),
          ),
        ),
      ).to.equal('');
      expect(
        await collect(
          criFileLines(
            f,
            10,
            ctl(false, async () => false),
          ),
        ),
      ).to.equal(lines.join(''));
    });

    it('follows a file across rotation and ends when the container stops', async () => {
      const f = path.join(dir, '0.log');
      await writeFile(f, lines[0] + '\n');
      let writing = true;
      const got: string[] = [];
      const done = (async () => {
        for await (const l of criFileLines(
          f,
          undefined,
          ctl(true, async () => writing),
        ))
          got.push(l);
      })();
      await new Promise((r) => setTimeout(r, 50));
      await appendFile(f, lines[3] + '\n');
      await new Promise((r) => setTimeout(r, 50));
      await rename(f, `${f}.1`);
      await writeFile(f, lines[1] + '\n' + lines[2] + '\n');
      await new Promise((r) => setTimeout(r, 80));
      writing = false;
      await done;
      expect(got).to.deep.equal([lines[0], lines[3], lines[1], lines[2]]);
    });

    it('follows polled lines and ends when they can no longer be read', async () => {
      const buf = [lines[0]!];
      let removed = false;
      const read = () => {
        if (removed) throw new Error('NotFound');
        return [...buf];
      };
      const got: string[] = [];
      const done = (async () => {
        for await (const l of polledLines(
          read,
          5,
          ctl(true, async () => !removed),
        ))
          got.push(l);
      })();
      await new Promise((r) => setTimeout(r, 30));
      buf.push(lines[3]!);
      await new Promise((r) => setTimeout(r, 40));
      removed = true;
      await done;
      expect(got).to.deep.equal([lines[0], lines[3]]);
      expect(
        await collect(
          polledLines(
            () => lines,
            1,
            ctl(false, async () => false),
          ),
        ),
      ).to.equal(lines[3]);
    });
  });
});

import { expect } from 'chai';
import { mkdir, mkdtemp, readlink, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { dialablePath, MaxUnixSocketPath } from '../../../../src/kubelet/pluginmanager/shell/manager.js';

describe('pluginmanager dialablePath: plugin sockets longer than sun_path', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ko-dial-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('a path that fits is dialled as it is', async () => {
    const p = '/var/lib/kubelet/plugins_registry/d.example.com-reg.sock';
    expect(await dialablePath(p, path.join(dir, 'links'))).to.equal(p);
  });

  it('a longer one through a short symlink to it, the same link each time, and a client connects', async () => {
    const deep = path.join(dir, 'x'.repeat(60), 'plugins_registry');
    await mkdir(deep, { recursive: true });
    const socket = path.join(deep, 'dra-6051.k8s.io-950ed934-03c2-42d2-a501-3b3152041b97-reg.sock');
    expect(Buffer.byteLength(socket)).to.be.greaterThan(MaxUnixSocketPath);
    // Listening on the long path itself fails as connect(2) would: from inside its directory it works.
    const server = net.createServer((c) => c.end('hello'));
    const cwd = process.cwd();
    process.chdir(deep);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path.basename(socket), resolve);
      });
    } finally {
      process.chdir(cwd);
    }
    try {
      const links = path.join(dir, 'links');
      const link = await dialablePath(socket, links);
      expect(Buffer.byteLength(link)).to.be.at.most(MaxUnixSocketPath);
      expect(await readlink(link)).to.equal(socket);
      expect(await dialablePath(socket, links)).to.equal(link);
      const got = await new Promise<string>((resolve, reject) => {
        const c = net.connect(link);
        let data = '';
        c.on('data', (d: Buffer) => (data += d.toString()));
        c.on('end', () => resolve(data));
        c.on('error', reject);
      });
      expect(got).to.equal('hello');
    } finally {
      server.close();
    }
  });
});

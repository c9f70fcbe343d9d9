import { expect } from 'chai';
import { createHash } from 'node:crypto';
import {
  authConfigJSON,
  decodeDockerConfigFieldAuth,
  DockerKeyring,
  keyringFromSecrets,
  parseDockercfg,
  parseDockerConfigJSON,
  repositoryToPull,
  urlsMatch,
  type PullSecret,
} from '../../../../src/kubelet/credentialprovider/keyring.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const b64 = (s: string) => Buffer.from(s).toString('base64');

function keyring(cfg: Record<string, { username: string; password?: string }>): DockerKeyring {
  const k = new DockerKeyring(sha);
  k.add(undefined, parseDockercfg(JSON.stringify(cfg)));
  return k;
}

describe('credential keyring (kubelet pkg/credentialprovider)', () => {
  it('matches registry globs by host label, port and path prefix (URLsMatchStr)', () => {
    const cases: [glob: string, target: string, match: boolean][] = [
      ['*.kubernetes.io', 'prefix.kubernetes.io', true],
      ['prefix.*.io', 'prefix.kubernetes.io', true],
      ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
      ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
      ['*.kubernetes.io', 'kubernetes.io', false],
      ['*.*.kubernetes.io', 'a.kubernetes.io', false],
      ['registry.io:5000', 'registry.io:5000/app', true],
      ['registry.io:5000', 'registry.io/app', false],
      ['registry.io', 'registry.io:5000/app', false],
      ['registry.io/foo', 'registry.io/foo/bar', true],
      ['registry.io/foo', 'registry.io/bar', false],
      ['127.0.0.1:5000', '127.0.0.1:5000/e2e/busybox', true],
      ['127.0.0.*:5000', '127.0.0.1:5000/e2e/busybox', true],
      ['x[a-c].io', 'xb.io/x', true],
      ['x[a-c].io', 'xd.io/x', false],
      ['[a-c].io', 'b.io/x', false], // Go's url.Parse refuses it: an IPv6 literal with junk after
      ['r?.io', 'r1.io/x', false], // in a URL `?` starts the query: the glob's host is `r`
    ];
    for (const [glob, target, want] of cases)
      expect(urlsMatch(glob, target), `${glob} ~ ${target}`).to.equal(want);
  });

  it('looks up most specific keys first, every matching credential in order, Docker Hub by its index key', () => {
    const k = keyring({
      'registry.io': { username: 'host' },
      'registry.io/team': { username: 'team' },
      'registry.io/team/app': { username: 'app' },
      '*.registry.io': { username: 'glob' },
      'https://index.docker.io/v1/': { username: 'hub' },
    });
    const users = (image: string) => k.lookup(image).map((c) => c.auth.username);
    expect(users('registry.io/team/app')).to.deep.equal(['app', 'team', 'host']);
    expect(users('registry.io/other')).to.deep.equal(['host']);
    expect(users('eu.registry.io/x')).to.deep.equal(['glob']);
    expect(users('docker.io/library/busybox')).to.deep.equal(['hub']);
    expect(users('quay.io/x')).to.deep.equal([]);
    // `v2/` and `v1/` path prefixes are API paths, not repository paths.
    const v2 = keyring({ 'https://reg.example:5000/v2/': { username: 'v2' } });
    expect(v2.lookup('reg.example:5000/a/b').map((c) => c.auth.username)).to.deep.equal(['v2']);
  });

  it('parses dockerconfigjson and dockercfg, `auth` padded or not, and refuses a bad auth field', () => {
    const json = parseDockerConfigJSON(
      JSON.stringify({
        auths: { 'r.io': { auth: b64('u:p:with:colons') }, 's.io': { username: 'a', password: 'b' } },
      }),
    );
    expect(json.get('r.io')).to.deep.equal({ username: 'u', password: 'p:with:colons', email: '' });
    expect(json.get('s.io')).to.deep.equal({ username: 'a', password: 'b', email: '' });
    expect(parseDockercfg(JSON.stringify({ 'r.io': { auth: 'dTpw' } })).get('r.io')?.username).to.equal('u');
    expect(decodeDockerConfigFieldAuth(b64('x:y').replace(/=+$/, ''))).to.deep.equal({
      username: 'x',
      password: 'y',
    });
    expect(() => decodeDockerConfigFieldAuth(b64('nocolon'))).to.throw(
      'must be formatted as base64(username:password)',
    );
    expect(() => decodeDockerConfigFieldAuth('!!!')).to.throw('illegal base64');
    expect(() => parseDockerConfigJSON('[1]')).to.throw();
  });

  it('hashes credentials as the kubelet serializes them (Go field order, empty fields left out, HTML escaped)', () => {
    expect(authConfigJSON({ username: 'u', password: 'p' })).to.equal('{"username":"u","password":"p"}');
    expect(authConfigJSON({ password: '<&>', email: 'e' })).to.equal(
      '{"password":"\\u003c\\u0026\\u003e","email":"e"}',
    );
    expect(authConfigJSON({})).to.equal('{}');
  });

  it("builds a keyring from a pod's pull secrets of both types, tracking each secret, ignoring other types", () => {
    const secrets: PullSecret[] = [
      {
        metadata: { uid: 'u1', namespace: 'ns', name: 'json' },
        type: 'kubernetes.io/dockerconfigjson',
        data: {
          '.dockerconfigjson': b64(JSON.stringify({ auths: { 'r.io': { username: 'a', password: 'b' } } })),
        },
      },
      {
        metadata: { uid: 'u2', namespace: 'ns', name: 'cfg' },
        type: 'kubernetes.io/dockercfg',
        data: { '.dockercfg': b64(JSON.stringify({ 'r.io': { username: 'c', password: 'd' } })) },
      },
      { metadata: { name: 'opaque' }, type: 'Opaque', data: { '.dockerconfigjson': b64('{}') } },
    ];
    const found = keyringFromSecrets(secrets, new DockerKeyring(sha)).lookup('r.io/app');
    expect(found.map((c) => [c.auth.username, c.source?.secret?.name])).to.deep.equal([
      ['a', 'json'],
      ['c', 'cfg'],
    ]);
    expect(found[0]!.hash).to.equal(sha('{"username":"a","password":"b"}'));
    const bad: PullSecret = {
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': b64('{"auths":{"r.io":{"auth":"bm9jb2xvbg=="}}}') },
    };
    expect(() => keyringFromSecrets([bad], new DockerKeyring(sha))).to.throw('base64(username:password)');
  });

  it('normalizes the repository to pull as ParseImageName does', () => {
    const cases: [string, string][] = [
      ['busybox', 'docker.io/library/busybox'],
      ['busybox:1.36', 'docker.io/library/busybox'],
      ['team/app:v1', 'docker.io/team/app'],
      ['index.docker.io/library/x', 'docker.io/library/x'],
      ['127.0.0.1:5000/e2e/busybox:1', '127.0.0.1:5000/e2e/busybox'],
      ['localhost/x@sha256:' + 'a'.repeat(64), 'localhost/x'],
      ['registry.io/a/b:tag@sha256:' + 'b'.repeat(64), 'registry.io/a/b'],
    ];
    for (const [image, want] of cases) expect(repositoryToPull(image), image).to.equal(want);
  });
});

import { expect } from 'chai';
import type { SecretVolumeSource } from '../../../../src/api/volumes.js';
import {
  type SecretLookup,
  decodeSecretData,
  makeSecretPayload,
} from '../../../../src/kubelet/volume/secret.js';
import { files, message } from './fixtures.js';

const secret = decodeSecretData({
  data: {
    username: Buffer.from('admin').toString('base64'),
    password: Buffer.from('s3cr3t\n').toString('base64'),
  },
});

describe('secret volume payload (secret.MakePayload)', () => {
  const cases: [string, SecretVolumeSource, SecretLookup, Record<string, [string, number]> | string][] = [
    [
      'every key with the API default mode 0644',
      { secretName: 's' },
      secret,
      { username: ['admin', 0o644], password: ['s3cr3t\n', 0o644] },
    ],
    [
      'defaultMode and per-item modes',
      {
        secretName: 's',
        defaultMode: 0o400,
        items: [
          { key: 'password', path: 'creds/pw', mode: 0o440 },
          { key: 'username', path: 'creds/user' },
        ],
      },
      secret,
      { 'creds/pw': ['s3cr3t\n', 0o440], 'creds/user': ['admin', 0o400] },
    ],
    [
      'a missing key fails the volume',
      { secretName: 's', items: [{ key: 'token', path: 't' }] },
      secret,
      'references non-existent secret key: token',
    ],
    [
      'an optional volume skips a missing key',
      {
        secretName: 's',
        optional: true,
        items: [
          { key: 'token', path: 't' },
          { key: 'username', path: 'u' },
        ],
      },
      secret,
      { u: ['admin', 0o644] },
    ],
    ['a missing Secret fails the volume', { secretName: 'db' }, undefined, 'secret "db" not found'],
    ['a missing optional Secret is empty', { secretName: 'db', optional: true }, undefined, {}],
    [
      'a lookup error is the volume error',
      { secretName: 'db' },
      { error: 'timed out waiting' },
      'timed out waiting',
    ],
  ];
  for (const [name, source, lookup, want] of cases) {
    it(name, () => {
      const r = makeSecretPayload(source, lookup);
      if (typeof want === 'string') expect(message(r)).to.equal(want);
      else expect(files(r)).to.deep.equal(want);
    });
  }

  it('decodes base64 values to their exact bytes', () => {
    const raw = Buffer.from([0, 1, 254, 255]);
    const r = makeSecretPayload(
      { secretName: 'b' },
      decodeSecretData({ data: { k: raw.toString('base64') } }),
    );
    expect(r.ok && r.payload.get('k')?.data.equals(raw)).to.equal(true);
  });

  it('does not share buffers with its input', () => {
    const input = decodeSecretData({ data: { k: Buffer.from('abc').toString('base64') } });
    const r = makeSecretPayload({ secretName: 'b' }, input);
    if (!r.ok) return expect.fail(r.message);
    r.payload.get('k')!.data[0] = 0x78;
    expect(input.data?.['k']?.toString()).to.equal('abc');
  });
});

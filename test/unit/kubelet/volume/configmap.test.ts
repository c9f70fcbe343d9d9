import { expect } from 'chai';
import type { ConfigMapVolumeSource } from '../../../../src/api/volumes.js';
import { type ConfigMapLookup, makeConfigMapPayload } from '../../../../src/kubelet/volume/configmap.js';
import { files, message } from './fixtures.js';

const cm: ConfigMapLookup = {
  data: { 'app.yaml': 'a: 1\n', 'log.level': 'debug' },
  binaryData: { 'logo.bin': Buffer.from([0xde, 0xad, 0xbe, 0xef]).toString('base64') },
};

describe('configMap volume payload (configmap.MakePayload)', () => {
  const cases: [string, ConfigMapVolumeSource, ConfigMapLookup, Record<string, [string, number]> | string][] =
    [
      [
        'all data and binaryData keys with the API default mode 0644',
        { name: 'cfg' },
        cm,
        {
          'app.yaml': ['a: 1\n', 0o644],
          'log.level': ['debug', 0o644],
          'logo.bin': [Buffer.from([0xde, 0xad, 0xbe, 0xef]).toString('utf8'), 0o644],
        },
      ],
      [
        'defaultMode applies to every key',
        { name: 'cfg', defaultMode: 0o400 },
        { data: { a: 'x' } },
        { a: ['x', 0o400] },
      ],
      [
        'items select keys, rename them into nested paths and set per-item modes',
        {
          name: 'cfg',
          defaultMode: 0o440,
          items: [
            { key: 'app.yaml', path: 'conf/app.yaml', mode: 0o600 },
            { key: 'log.level', path: 'level' },
          ],
        },
        cm,
        { 'conf/app.yaml': ['a: 1\n', 0o600], level: ['debug', 0o440] },
      ],
      [
        'items can name binaryData keys',
        { name: 'cfg', items: [{ key: 'logo.bin', path: 'logo' }] },
        { binaryData: { 'logo.bin': Buffer.from('PNG').toString('base64') } },
        { logo: ['PNG', 0o644] },
      ],
      [
        'data wins over binaryData for an item key present in both',
        { name: 'cfg', items: [{ key: 'k', path: 'k' }] },
        { data: { k: 'text' }, binaryData: { k: Buffer.from('bin').toString('base64') } },
        { k: ['text', 0o644] },
      ],
      [
        'without items, binaryData is written after data',
        { name: 'cfg' },
        { data: { k: 'text' }, binaryData: { k: Buffer.from('bin').toString('base64') } },
        { k: ['bin', 0o644] },
      ],
      [
        'a missing item key fails the volume',
        {
          name: 'cfg',
          items: [
            { key: 'app.yaml', path: 'a' },
            { key: 'nope', path: 'n' },
          ],
        },
        cm,
        'configmap references non-existent config key: nope',
      ],
      [
        'an optional volume skips a missing item key',
        {
          name: 'cfg',
          optional: true,
          items: [
            { key: 'app.yaml', path: 'a' },
            { key: 'nope', path: 'n' },
          ],
        },
        cm,
        { a: ['a: 1\n', 0o644] },
      ],
      ['a missing ConfigMap fails the volume', { name: 'cfg' }, undefined, 'configmap "cfg" not found'],
      ['a missing optional ConfigMap is empty', { name: 'cfg', optional: true }, undefined, {}],
      [
        'a missing optional ConfigMap with items is empty too',
        { name: 'cfg', optional: true, items: [{ key: 'a', path: 'a' }] },
        undefined,
        {},
      ],
      [
        'a lookup error is the volume error, optional or not',
        { name: 'cfg', optional: true },
        { error: 'object "ns"/"cfg" not registered' },
        'object "ns"/"cfg" not registered',
      ],
      ['an empty ConfigMap is an empty volume', { name: 'cfg' }, {}, {}],
    ];
  for (const [name, source, lookup, want] of cases) {
    it(name, () => {
      const r = makeConfigMapPayload(source, lookup);
      if (typeof want === 'string') expect(message(r)).to.equal(want);
      else expect(files(r)).to.deep.equal(want);
    });
  }

  it('keeps binary bytes exactly', () => {
    const bytes = Buffer.from([0, 255, 10, 13, 128]);
    const r = makeConfigMapPayload({ name: 'b' }, { binaryData: { raw: bytes.toString('base64') } });
    expect(r.ok && r.payload.get('raw')?.data.equals(bytes)).to.equal(true);
  });
});

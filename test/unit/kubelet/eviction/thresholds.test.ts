// Eviction thresholds from configuration (src/kubelet/eviction/thresholds.ts, signals.ts, quantity.ts):
// the kubelet's parsing, its errors, its defaults, and quantities printed as apimachinery prints them.
// Expected messages were checked against the v1.37.2 kubelet's own functions.
import { expect } from 'chai';
import {
  formatQuantity,
  newQuantity,
  parseQuantity,
  type QuantityFormat,
} from '../../../../src/kubelet/eviction/quantity.js';
import {
  DefaultEvictionHard,
  effectiveEvictionHard,
  signalToNodeCondition,
  signalToResource,
  Signals,
} from '../../../../src/kubelet/eviction/signals.js';
import { parseGoDuration } from '../../../../src/util/duration.js';
import {
  parseThresholdConfig,
  thresholdQuantity,
  updateContainerFsThresholds,
  type Threshold,
} from '../../../../src/kubelet/eviction/thresholds.js';

describe('eviction quantities', () => {
  // Expected strings printed by apimachinery v0.37.2's Quantity.String().
  const measured: [number, QuantityFormat, string][] = [
    [0, 'BinarySI', '0'],
    [512, 'BinarySI', '512'],
    [1000, 'BinarySI', '1k'],
    [1023, 'BinarySI', '1023'],
    [1024, 'BinarySI', '1Ki'],
    [1500, 'BinarySI', '1500'],
    [107374182, 'BinarySI', '107374182'],
    [104857600, 'BinarySI', '100Mi'],
    [1000000, 'BinarySI', '1000000'],
    [1024, 'DecimalSI', '1024'],
    [1000000, 'DecimalSI', '1M'],
    [3000, 'DecimalSI', '3k'],
  ];
  for (const [n, format, want] of measured) {
    it(`NewQuantity(${n}, ${format}) prints ${want}`, () => {
      expect(formatQuantity(newQuantity(n, format))).to.equal(want);
    });
  }
  const parsed: [string, string][] = [
    ['100Mi', '100Mi'],
    ['1.5Gi', '1536Mi'],
    ['500M', '500M'],
    ['1e6', '1e6'],
    ['1024Ki', '1Mi'],
    ['1000Ki', '1000Ki'],
    ['1500k', '1500k'],
    ['0.5Gi', '512Mi'],
    ['2000', '2k'],
    ['1.5', '1500m'],
    ['10e3', '10e3'],
    ['100m', '100m'],
  ];
  for (const [text, want] of parsed) {
    it(`parsed ${text} prints ${want}`, () => {
      expect(formatQuantity(parseQuantity(text))).to.equal(want);
    });
  }
});

describe('eviction signals', () => {
  it('maps every signal to a condition and a resource', () => {
    for (const s of Signals) {
      expect(signalToNodeCondition[s], s).to.be.a('string');
      expect(signalToResource[s], s).to.be.a('string');
    }
    expect(signalToNodeCondition['allocatableMemory.available']).to.equal('MemoryPressure');
    expect(signalToNodeCondition['containerfs.inodesFree']).to.equal('DiskPressure');
    expect(signalToNodeCondition['pid.available']).to.equal('PIDPressure');
    expect(signalToResource['imagefs.inodesFree']).to.equal('inodes');
    expect(signalToResource['nodefs.available']).to.equal('ephemeral-storage');
    expect(signalToResource['pid.available']).to.equal('pids');
  });

  const hardCases: [string, Record<string, string> | undefined, boolean, Record<string, string>][] = [
    ['unset: the defaults', undefined, false, { ...DefaultEvictionHard }],
    ['set: exactly what is set', { 'memory.available': '1Gi' }, false, { 'memory.available': '1Gi' }],
    ['empty: none', {}, false, {}],
    [
      'merged: the defaults under what is set',
      { 'memory.available': '1Gi' },
      true,
      { ...DefaultEvictionHard, 'memory.available': '1Gi' },
    ],
  ];
  for (const [name, configured, merge, want] of hardCases) {
    it(`evictionHard ${name}`, () => {
      expect(effectiveEvictionHard(configured, merge)).to.deep.equal(want);
    });
  }
});

describe('eviction threshold parsing', () => {
  it('reads the default evictionHard as the kubelet does', () => {
    const ts = parseThresholdConfig({ evictionHard: DefaultEvictionHard });
    expect(ts.map((t) => [t.signal, t.gracePeriodMs])).to.deep.equal([
      ['memory.available', 0],
      ['nodefs.available', 0],
      ['nodefs.inodesFree', 0],
      ['imagefs.available', 0],
      ['imagefs.inodesFree', 0],
    ]);
    const mem = ts[0] as Threshold;
    expect(formatQuantity(thresholdQuantity(mem.value, 8 * 1024 ** 3))).to.equal('100Mi');
    // 10% is the float32 0.1, a little over a tenth: 1 GiB gives 107374184 bytes, not 107374182.
    expect(thresholdQuantity((ts[1] as Threshold).value, 1024 ** 3).nano).to.equal(107374184n * 10n ** 9n);
  });

  it('gives soft thresholds their grace periods and every threshold of a signal its minimum reclaim', () => {
    const ts = parseThresholdConfig({
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: { 'memory.available': '300Mi', 'nodefs.available': '20%' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s', 'nodefs.available': '2m' },
      evictionMinimumReclaim: { 'memory.available': '0.5Gi', 'nodefs.available': '5%' },
    });
    expect(ts.map((t) => [t.signal, t.gracePeriodMs, t.minReclaim !== undefined])).to.deep.equal([
      ['memory.available', 0, true],
      ['memory.available', 90_000, true],
      ['nodefs.available', 120_000, true],
    ]);
  });

  it('adds allocatableMemory.available beside a hard memory.available when pods are enforced', () => {
    const ts = parseThresholdConfig({
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: { 'memory.available': '300Mi' },
      evictionSoftGracePeriod: { 'memory.available': '30s' },
      enforceNodeAllocatable: ['pods'],
    });
    expect(ts.map((t) => `${t.signal}/${t.gracePeriodMs}`)).to.deep.equal([
      'memory.available/0',
      'memory.available/30000',
      'allocatableMemory.available/0',
    ]);
  });

  it('drops 0% and 100%', () => {
    expect(parseThresholdConfig({ evictionHard: { 'nodefs.available': '0%', 'imagefs.available': '100%' } }))
      .to.be.empty;
  });

  const errors: [string, Parameters<typeof parseThresholdConfig>[0], string][] = [
    [
      'an unknown signal',
      { evictionHard: { 'cpu.available': '1' } },
      'unsupported eviction signal cpu.available',
    ],
    [
      'a percentage over 100',
      { evictionHard: { 'nodefs.available': '150%' } },
      'eviction percentage threshold nodefs.available must be <= 100%: 150%',
    ],
    [
      'a negative percentage',
      { evictionHard: { 'nodefs.available': '-5%' } },
      'eviction percentage threshold nodefs.available must be >= 0%: -5%',
    ],
    [
      'a zero quantity',
      { evictionHard: { 'memory.available': '0Mi' } },
      'eviction threshold memory.available must be positive: 0',
    ],
    [
      'a negative quantity',
      { evictionHard: { 'memory.available': '-1Gi' } },
      'eviction threshold memory.available must be positive: -1Gi',
    ],
    [
      'no quantity',
      { evictionHard: { 'memory.available': 'lots' } },
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ],
    [
      'an unknown suffix',
      { evictionHard: { 'memory.available': '10Xi' } },
      "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ],
    [
      'an exponent without digits',
      { evictionHard: { 'memory.available': '1e' } },
      "unable to parse quantity's suffix",
    ],
    [
      'no percentage',
      { evictionHard: { 'memory.available': 'x%' } },
      'strconv.ParseFloat: parsing "x": invalid syntax',
    ],
    [
      'a soft threshold without grace period',
      { evictionSoft: { 'memory.available': '1Gi' } },
      'grace period must be specified for the soft eviction threshold memory.available',
    ],
    [
      'a negative grace period',
      { evictionSoftGracePeriod: { 'memory.available': '-1s' } },
      'invalid eviction grace period specified: -1s, must be a positive value',
    ],
    [
      'a grace period without unit',
      { evictionSoftGracePeriod: { 'memory.available': '30' } },
      'time: missing unit in duration "30"',
    ],
    [
      'a grace period in an unknown unit',
      { evictionSoftGracePeriod: { 'memory.available': '3d' } },
      'time: unknown unit "d" in duration "3d"',
    ],
    [
      'a grace period with an exponent',
      { evictionSoftGracePeriod: { 'memory.available': '1e3s' } },
      'time: unknown unit "e" in duration "1e3s"',
    ],
    [
      'an empty grace period',
      { evictionSoftGracePeriod: { 'memory.available': '' } },
      'time: invalid duration ""',
    ],
    ['a bare sign', { evictionSoftGracePeriod: { 'memory.available': '+' } }, 'time: invalid duration "+"'],
    [
      'a grace period of an unknown signal',
      { evictionSoftGracePeriod: { 'memory.free': '1s' } },
      'unsupported eviction signal memory.free',
    ],
    [
      'a zero percentage minimum reclaim',
      { evictionMinimumReclaim: { 'nodefs.available': '0%' } },
      'eviction percentage minimum reclaim nodefs.available must be positive: 0%',
    ],
    [
      'a negative minimum reclaim',
      { evictionMinimumReclaim: { 'nodefs.available': '-1Gi' } },
      'negative eviction minimum reclaim specified for nodefs.available',
    ],
  ];
  for (const [name, config, message] of errors) {
    it(`refuses ${name}`, () => {
      expect(() => parseThresholdConfig(config)).to.throw(message);
    });
  }

  const durations: [string, number][] = [
    ['0', 0],
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['+2m', 120_000],
    ['.5s', 500],
  ];
  for (const [text, ms] of durations) {
    it(`reads the duration ${text}`, () => {
      expect(parseGoDuration(text)).to.equal(ms);
    });
  }
});

describe('containerfs thresholds', () => {
  const base = parseThresholdConfig({
    evictionHard: { 'nodefs.available': '10%', 'imagefs.available': '15%', 'imagefs.inodesFree': '5%' },
    evictionSoft: { 'nodefs.available': '20%' },
    evictionSoftGracePeriod: { 'nodefs.available': '1m' },
  });
  const containerfs = (ts: Threshold[]) =>
    ts
      .filter((t) => t.signal.startsWith('containerfs.'))
      .map(
        (t) =>
          `${t.signal}/${t.gracePeriodMs}/${'percentage' in t.value ? t.value.percentage.toFixed(2) : 'q'}`,
      );

  const cases: [string, boolean, boolean, string[]][] = [
    [
      'one filesystem: follow nodefs',
      false,
      false,
      [
        'containerfs.available/0/0.10',
        'containerfs.available/60000/0.20',
        'containerfs.inodesFree/0/0.00',
        'containerfs.inodesFree/0/0.00',
      ],
    ],
    [
      'images apart, containers with them: follow imagefs',
      true,
      false,
      [
        'containerfs.available/0/0.15',
        'containerfs.available/0/0.00',
        'containerfs.inodesFree/0/0.05',
        'containerfs.inodesFree/0/0.00',
      ],
    ],
    [
      'images apart, containers on nodefs: follow nodefs',
      true,
      true,
      [
        'containerfs.available/0/0.10',
        'containerfs.available/60000/0.20',
        'containerfs.inodesFree/0/0.00',
        'containerfs.inodesFree/0/0.00',
      ],
    ],
    ['containers apart but no image filesystem: untouched', false, true, []],
  ];
  for (const [name, imageFs, split, want] of cases) {
    it(name, () => {
      expect(containerfs(updateContainerFsThresholds(base, imageFs, split).thresholds)).to.deep.equal(want);
    });
  }

  it('replaces a configured containerfs threshold in place, with a warning', () => {
    const ts = parseThresholdConfig({
      evictionHard: { 'containerfs.available': '1Gi', 'nodefs.available': '10%' },
    });
    const { thresholds, warnings } = updateContainerFsThresholds(ts, false, false);
    expect(thresholds[0]?.signal).to.equal('containerfs.available');
    expect(thresholds[0]?.value).to.deep.equal((ts[1] as Threshold).value);
    expect(warnings).to.deep.equal(['found containerfs.available for hard eviction. ignoring']);
  });
});

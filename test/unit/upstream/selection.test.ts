import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../support/controlplane.js';
import {
  areaOf,
  classify,
  conformance,
  exactRegex,
  exclusionsFor,
  focused,
  incompleteness,
  listed,
  nodeConformance,
  summaryLine,
  validateExclusions,
  type GinkgoSpecReport,
} from '../../upstream/selection.js';

/**
 * The most entries test/upstream/excluded.yaml may hold. The list may only shrink: lower this number when an
 * exclusion goes; raising it needs a reason in the commit that does it.
 */
const MAX_EXCLUSIONS = 3;
// 1 -> 6 (2026-12-06): the [Conformance] preset's first runs: an ImageVolume spec that must pull (no registry
// here) and the four podCertificate projection specs (a kubelet feature still to build).
// 6 -> 2: podCertificate projected volume sources built (src/kubelet/podcertificate/).
// 2 -> 3: the podCertificate mTLS spec passes its volumes but runs agnhost with imagePullPolicy Always, which
// needs a registry this machine cannot reach (as the ImageVolume spec).

const spec = (
  texts: string[],
  leaf: string,
  labels: string[],
  state: string,
  msg = '',
): GinkgoSpecReport => ({
  ContainerHierarchyTexts: texts,
  ContainerHierarchyLabels: [labels],
  LeafNodeType: 'It',
  LeafNodeText: leaf,
  LeafNodeLabels: [],
  State: state,
  RunTime: 2e9,
  Failure: msg ? { Message: msg } : null,
});

describe('upstream e2e selection', () => {
  it('keeps the exclusion list valid, with a reason per spec, and no longer than it was', () => {
    const raw = parse(readFileSync(path.join(REPO_ROOT, 'test/upstream/excluded.yaml'), 'utf8')) as unknown;
    const list = validateExclusions(raw ?? []);
    expect(list.length).to.be.at.most(MAX_EXCLUSIONS);
    // The conformance preset spans every area: an exclusion names a sig and is a spec's full text.
    for (const e of list) expect(e.spec).to.match(/^\[sig-[a-z-]+\] .*\S$/);
  });

  it('refuses exclusions without a reason, with bad runtimes, or listed twice', () => {
    expect(() => validateExclusions([{ spec: '[sig-node] x' }])).to.throw(/reason/);
    expect(() =>
      validateExclusions([{ spec: '[sig-node] x', reason: 'a good reason', runtimes: ['vm'] }]),
    ).to.throw(/runtimes/);
    const twice = { spec: '[sig-node] x', reason: 'a good reason' };
    expect(() => validateExclusions([twice, twice])).to.throw(/twice/);
    expect(exclusionsFor(validateExclusions([{ ...twice, runtimes: ['sim'] }]), 'cri')).to.deep.equal([]);
  });

  it('escapes a spec text into a regex that matches exactly it', () => {
    const text = '[sig-node] Pods should (really) work? [NodeConformance]';
    const re = new RegExp(exactRegex(text));
    expect(re.test(text)).to.equal(true);
    expect(re.test(`${text} more`)).to.equal(false);
  });

  it('selects NodeConformance specs of the kubelet areas without the slow and gated ones', () => {
    const s = nodeConformance();
    expect(
      s.selects({ text: '[sig-node] Pods should run [NodeConformance]', labels: ['NodeConformance'] }),
    ).to.equal(true);
    expect(
      s.selects({ text: '[sig-node] Pods run [Slow] [NodeConformance]', labels: ['NodeConformance'] }),
    ).to.equal(false);
    expect(s.selects({ text: '[sig-apps] Deployments run', labels: ['NodeConformance'] })).to.equal(false);
    expect(s.selects({ text: '[sig-node] Pods run', labels: [] })).to.equal(false);
    expect(focused('Pods').selects({ text: '[sig-node] Pods run', labels: [] })).to.equal(true);
    expect(listed('quick', ['[sig-node] a']).selects({ text: '[sig-node] a', labels: [] })).to.equal(true);
  });

  it('classifies a report: passed, failed with its first lines, skipped at run time, excluded, not selected', () => {
    const reports = [
      spec(['[sig-node] Pods', 'when x'], 'passes', ['NodeConformance'], 'passed'),
      spec(['[sig-node] Pods'], 'fails', ['NodeConformance'], 'failed', '\nexpected 1\nto equal 2'),
      spec(
        ['[sig-node] Pods'],
        'skips',
        ['NodeConformance'],
        'skipped',
        'Only supported for providers [gce]',
      ),
      spec(['[sig-node] Pods'], 'excluded', ['NodeConformance'], 'skipped'),
      spec(['[sig-apps] Jobs'], 'other area', ['NodeConformance'], 'skipped'),
      { LeafNodeType: 'SynchronizedBeforeSuite', State: 'failed', Failure: { Message: 'nodes not ready' } },
    ];
    const results = classify(reports, nodeConformance(), [
      { spec: '[sig-node] Pods excluded', reason: 'no such kubelet feature here' },
    ]);
    expect(results.map((r) => [r.text, r.outcome, r.detail])).to.deep.equal([
      ['[sig-node] Pods when x passes', 'passed', ''],
      ['[sig-node] Pods fails', 'failed', 'failed: expected 1 / to equal 2'],
      ['[sig-node] Pods skips', 'skipped', 'Only supported for providers [gce]'],
      ['[sig-node] Pods excluded', 'excluded', 'no such kubelet feature here'],
      ['[SynchronizedBeforeSuite]', 'failed', 'nodes not ready'],
    ]);
    expect(results[0]!.area).to.equal('[sig-node] Pods');
    expect(summaryLine(results)).to.equal('1 passed, 2 failed, 2 skipped');
  });

  it('fails a preset spec that ginkgo never reported, naming it', () => {
    const selection = listed('quick', ['[sig-node] Pods passes', '[sig-node] Pods renamed upstream']);
    const results = classify([spec(['[sig-node] Pods'], 'passes', [], 'passed')], selection, []);
    const missing = incompleteness(results, selection);
    expect(missing.map((r) => [r.text, r.outcome, r.area])).to.deep.equal([
      ['[sig-node] Pods renamed upstream', 'failed', '[sig-node]'],
    ]);
    expect(missing[0]!.detail).to.match(/not reported by ginkgo/);
    expect(summaryLine([...results, ...missing])).to.equal('1 passed, 1 failed, 0 skipped');
  });

  it('fails a run that selected no spec, and one whose every spec is excluded', () => {
    const none = incompleteness([], focused('matches nothing'));
    expect(none.map((r) => [r.text, r.outcome])).to.deep.equal([['test:upstream selection', 'failed']]);
    expect(summaryLine(none)).to.equal('0 passed, 1 failed, 0 skipped');
    const excludedOnly = classify(
      [spec(['[sig-node] Pods'], 'excluded', ['NodeConformance'], 'skipped')],
      nodeConformance(),
      [{ spec: '[sig-node] Pods excluded', reason: 'no such kubelet feature here' }],
    );
    expect(incompleteness(excludedOnly, nodeConformance())).to.have.length(1);
    const ran = classify(
      [spec(['[sig-node] Pods'], 'passes', ['NodeConformance'], 'passed')],
      nodeConformance(),
      [],
    );
    expect(incompleteness(ran, nodeConformance())).to.deep.equal([]);
  });

  it('splits the Conformance specs of every area into a parallel and a serial phase', () => {
    const c = (text: string, labels = ['Conformance']) => ({ text, labels });
    const specs = [
      c('[sig-apps] Deployment should run [Conformance]'),
      c('[sig-scheduling] SchedulerPredicates [Serial] validates resource limits [Conformance]'),
      c('[sig-node] NoExecuteTaintManager evicts pods [Serial] [Disruptive] [Conformance]'),
      c('[sig-node] Pods should run [NodeConformance]', ['NodeConformance']),
    ];
    const parallel = conformance('parallel');
    const serial = conformance('serial');
    expect(specs.filter(parallel.selects).map((s) => s.text)).to.deep.equal([specs[0]!.text]);
    expect(specs.filter(serial.selects).map((s) => s.text)).to.deep.equal([specs[1]!.text, specs[2]!.text]);
    expect(parallel.labelFilter).to.equal('Conformance');
    expect(serial.focus.every((f) => new RegExp(f).test(specs[1]!.text))).to.equal(true);
    expect(parallel.skip.some((f) => new RegExp(f).test(specs[2]!.text))).to.equal(true);
  });

  it('names the area by its first container text without tags', () => {
    expect(areaOf('[sig-storage] Projected secret [Feature:X]')).to.equal('[sig-storage] Projected secret');
  });
});

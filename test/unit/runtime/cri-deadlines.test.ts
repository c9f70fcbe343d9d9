// How long each CRI call may take (src/runtime/cri/deadlines.ts).
import { expect } from 'chai';
import {
  CriDeadlines,
  DEFAULT_EXEC_GRACE_MS,
  DEFAULT_PULL_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SHORT_TIMEOUT_MS,
} from '../../../src/runtime/cri/deadlines.js';
import { errorKind } from '../../../src/util/errors.js';

describe('runtime/cri deadlines', () => {
  it("defaults to the kubelet's runtime request timeout and its companions", () => {
    const d = new CriDeadlines();
    expect([d.requestMs, d.shortMs, d.execGraceMs, d.pullMs]).to.deep.equal([
      DEFAULT_REQUEST_TIMEOUT_MS,
      DEFAULT_SHORT_TIMEOUT_MS,
      DEFAULT_EXEC_GRACE_MS,
      DEFAULT_PULL_TIMEOUT_MS,
    ]);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).to.equal(120_000);
  });

  it('gives StopContainer its grace in whole seconds on top of the request timeout', () => {
    const d = new CriDeadlines({ requestTimeoutMs: 1_000 });
    expect(d.stopContainer(30)).to.deep.equal({ graceSeconds: 30, timeoutMs: 31_000 });
    expect(d.stopContainer(0.2)).to.deep.equal({ graceSeconds: 1, timeoutMs: 2_000 });
    expect(d.stopContainer(-5)).to.deep.equal({ graceSeconds: 0, timeoutMs: 1_000 });
  });

  it('gives ExecSync its own timeout plus the grace, or the request timeout when it has none', () => {
    const d = new CriDeadlines({ requestTimeoutMs: 9_000, execGraceMs: 500 });
    expect(d.execSync(2)).to.deep.equal({ seconds: 2, timeoutMs: 2_500 });
    expect(d.execSync(1.5)).to.deep.equal({ seconds: 2, timeoutMs: 2_500 });
    expect(d.execSync(0)).to.deep.equal({ seconds: 0, timeoutMs: 9_000 });
  });

  it('refuses a timeout that is not a positive number', () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      let kind = 'none';
      try {
        new CriDeadlines({ shortTimeoutMs: bad });
      } catch (err) {
        kind = errorKind(err);
      }
      expect(kind, String(bad)).to.equal('InvalidArgument');
    }
  });
});

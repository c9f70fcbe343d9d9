import { expect } from 'chai';
import { DEFAULT_CASE_FILE, evaluateCase, loadCaseFile } from './harness.js';

// One mocha test per public case, so the cases count in `npm test`'s closing line.
const file = loadCaseFile(DEFAULT_CASE_FILE);
const areas = [...new Set(file.cases.map((c) => c.area))];

describe('kubelet conformance cases', () => {
  for (const area of areas) {
    describe(area, () => {
      for (const c of file.cases.filter((x) => x.area === area)) {
        it(`${c.id}`, async () => {
          const { verdict } = await evaluateCase(c, file);
          if (!verdict.pass) expect.fail(verdict.reason);
        });
      }
    });
  }
});

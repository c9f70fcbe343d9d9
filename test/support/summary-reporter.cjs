// Spec output while running, then the failures by name and one closing line that CI reads:
//   FAILED: <suite> <test>: <first line of the error>
//   N passed, N failed, N skipped
// Mocha's own "passing/failing" lines are not read by CI, so this line is the contract. The FAILED lines
// are repeated by scripts/test.sh at the very end of `npm test`, because CI keeps only the tail of the
// output and the upstream suite prints after ours.
'use strict';
const Mocha = require('mocha');
const { Spec } = Mocha.reporters;
const { EVENT_RUN_END, EVENT_TEST_FAIL } = Mocha.Runner.constants;

function firstLine(err) {
  const text = err && err.message ? String(err.message) : String(err);
  return text.split('\n', 1)[0].slice(0, 300);
}

class SummaryReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    const failures = [];
    // Hooks fail through EVENT_TEST_FAIL too, titled e.g. '"before all" hook for ...'.
    runner.on(EVENT_TEST_FAIL, (test, err) =>
      failures.push(`FAILED: ${test.fullTitle()}: ${firstLine(err)}`),
    );
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      // A hook failure counts as a failure even though it is not a test.
      const failed = s.failures || 0;
      const passed = s.passes || 0;
      const skipped = s.pending || 0;
      // Printed after Spec's epilogue, which is also registered on EVENT_RUN_END.
      process.nextTick(() => {
        const named = failures.length > 0 ? `\n${failures.join('\n')}\n` : '';
        process.stdout.write(`${named}\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
      });
    });
  }
}

module.exports = SummaryReporter;

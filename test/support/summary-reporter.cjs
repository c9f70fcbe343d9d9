// Spec output while running, then one closing line that CI reads:
//   N passed, N failed, N skipped
// Mocha's own "passing/failing" lines are not read by CI, so this line is the contract.
'use strict';
const Mocha = require('mocha');
const { Spec } = Mocha.reporters;
const { EVENT_RUN_END } = Mocha.Runner.constants;

class SummaryReporter extends Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      // A hook failure counts as a failure even though it is not a test.
      const failed = s.failures || 0;
      const passed = s.passes || 0;
      const skipped = s.pending || 0;
      // Printed after Spec's epilogue, which is also registered on EVENT_RUN_END.
      process.nextTick(() => {
        process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
      });
    });
  }
}

module.exports = SummaryReporter;

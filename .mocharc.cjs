// Mocha runs TypeScript through tsx (no type-check; `npm run typecheck` does that).
module.exports = {
  'node-option': ['import=tsx'],
  extension: ['ts'],
  reporter: './test/support/summary-reporter.cjs',
  timeout: 20000,
  'forbid-only': Boolean(process.env.CI),
};

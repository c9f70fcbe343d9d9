/**
 * `npm run conformance -- [cases.yaml ...]`: evaluates every case of each file, prints a table per area
 * and ends with `N passed, N failed`. Exits non-zero when any case failed or a file could not be read.
 * With no argument it runs the repo's copy of the public cases.
 */
import { DEFAULT_CASE_FILE, runCaseFile, type CaseResult } from './harness.js';

function printTable(path: string, results: CaseResult[]): void {
  const byArea = new Map<string, CaseResult[]>();
  for (const r of results) byArea.set(r.area, [...(byArea.get(r.area) ?? []), r]);
  console.log(`\n${path}`);
  for (const [area, rs] of byArea) {
    const passed = rs.filter((r) => r.verdict.pass).length;
    console.log(`\n  ${area}: ${passed}/${rs.length} passed`);
    const width = Math.max(...rs.map((r) => r.id.length), 4);
    for (const r of rs) {
      const detail = r.verdict.pass ? '' : `  ${r.verdict.reason.split('\n')[0]}`;
      console.log(`    ${r.id.padEnd(width)}  ${r.verdict.pass ? 'pass' : 'FAIL'}${detail}`);
    }
  }
}

async function main(): Promise<number> {
  const files = process.argv.slice(2).filter((a) => a !== '--');
  let passed = 0;
  let failed = 0;
  for (const path of files.length ? files : [DEFAULT_CASE_FILE]) {
    let results: CaseResult[];
    try {
      results = await runCaseFile(path);
    } catch (err) {
      console.error(`${path}: ${err instanceof Error ? err.message : String(err)}`);
      failed++;
      continue;
    }
    printTable(path, results);
    passed += results.filter((r) => r.verdict.pass).length;
    failed += results.filter((r) => !r.verdict.pass).length;
  }
  console.log(`\n${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();

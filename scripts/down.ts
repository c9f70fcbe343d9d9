// `npm run down`: stops what `npm run up` started (from .local/up.json) and leaves nothing of it behind: no
// process, namespace, link, route, mount or directory (scripts/lib/upstate.ts; test/cluster/updown.test.ts).
import { readUpState, stopUpRun } from './lib/upstate.js';

async function main(): Promise<void> {
  const state = await readUpState();
  if (!state) {
    console.log('nothing to stop: no .local/up.json (is `npm run up` running?)');
    return;
  }
  await stopUpRun(state);
}

main().catch((err: unknown) => {
  console.error(`npm run down failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

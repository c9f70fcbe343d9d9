// `npm run up` and `npm run down` as a user runs them: after `down`, nothing of the run is left on the machine
// (its network namespaces, bridge, veths, routes and host iptables rules; its processes; its mounts and
// directories); a run whose `up` was killed is cleaned up the same way by the next `up`, and a Ctrl-C of `up`
// leaves nothing either.
// Needs root on Linux (the cri nodes' namespaces and containerds).
import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../support/controlplane.js';
import { readUpState, UP_STATE_FILE, type UpState } from '../../scripts/lib/upstate.js';

const TSX = path.join(REPO_ROOT, 'node_modules/.bin/tsx');

/** What a run made on this machine, found from its state file and its bridge's name. */
interface RunFootprint {
  state: UpState;
  bridge: string;
  /** `10.B.` of the run's pod network (the bridge's /16). */
  octets: string;
}

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8' });
}

/** Starts `npm run up` (its own process group) and resolves once it printed its summary, all Ready, `kubectl top` served. */
function up(): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, ['scripts/up.ts'], {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`npm run up did not finish in 5 minutes:\n${out.slice(-3000)}`)),
      300_000,
    );
    const onData = (d: Buffer): void => {
      out += d.toString();
      // The summary ends with how to stop it; it says whether everything settled and whether kubectl top works.
      if (out.includes('Stop with Ctrl-C here')) {
        clearTimeout(timer);
        if (!out.includes('all nodes and pods are Ready'))
          reject(new Error(`npm run up did not settle:\n${out.slice(-3000)}`));
        else if (!out.includes('metrics-server serves metrics.k8s.io'))
          reject(new Error(`npm run up came up without metrics-server:\n${out.slice(-3000)}`));
        else resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`npm run up exited ${code}:\n${out.slice(-3000)}`));
    });
  });
}

function down(): string {
  return execFileSync(TSX, ['scripts/down.ts'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
}

async function footprint(): Promise<RunFootprint> {
  const state = await readUpState();
  if (!state?.bridge) throw new Error(`${UP_STATE_FILE} names no bridge: up ran without a pod network`);
  const addr = sh('ip', ['-4', '-o', 'addr', 'show', 'dev', state.bridge]);
  const m = /inet 10\.(\d+)\./.exec(addr);
  if (!m) throw new Error(`no 10.x address on ${state.bridge}: ${addr}`);
  return { state, bridge: state.bridge, octets: `10.${m[1]}.` };
}

/** Everything of the run still on the machine, one line per thing (empty: nothing left). */
function leftovers(run: RunFootprint): string[] {
  const suffix = run.bridge.slice('kob-'.length);
  const left: string[] = [];
  for (const ns of sh('ip', ['netns', 'list']).split('\n'))
    if (ns.startsWith(`kon-${suffix}`)) left.push(`netns ${ns}`);
  for (const l of sh('ip', ['-o', 'link', 'show']).split('\n'))
    if (l.includes(run.bridge) || l.includes(`kov${suffix}`)) left.push(`link ${l.trim()}`);
  // The run's range, unless a later run took the same range (then only its bridge's name tells them apart).
  const rangeTaken = sh('ip', ['-4', '-o', 'addr', 'show'])
    .split('\n')
    .some((a) => / kob-/.test(a) && !a.includes(run.bridge) && a.includes(`inet ${run.octets}`));
  const ours = (line: string): boolean =>
    line.includes(run.bridge) || (!rangeTaken && line.includes(run.octets));
  for (const r of sh('ip', ['-4', 'route', 'show', 'table', 'all']).split('\n'))
    if (ours(r)) left.push(`route ${r.trim()}`);
  for (const rule of sh('iptables-save', []).split('\n')) if (ours(rule)) left.push(`iptables ${rule}`);
  const dirs = [run.state.dir, run.state.stateDir ?? '', ...(run.state.containerdDirs ?? [])].filter(Boolean);
  for (const p of sh('ps', ['-eo', 'pid=,args=']).split('\n'))
    if (dirs.some((d) => p.includes(d))) left.push(`process ${p.trim()}`);
  for (const m of readFileSync('/proc/self/mountinfo', 'utf8').split('\n'))
    if (dirs.some((d) => m.includes(d))) left.push(`mount ${m}`);
  for (const d of dirs) if (existsSync(d)) left.push(`directory ${d}`);
  if (existsSync(UP_STATE_FILE)) left.push(`file ${UP_STATE_FILE}`);
  return left;
}

describe('npm run up / npm run down leave nothing behind', function () {
  this.timeout(900_000);

  after(async () => {
    // A failed case may leave a run up: stop it, so the next suite finds the machine as it was.
    const left = await readUpState();
    if (left) down();
  });

  before(async function () {
    const running = await readUpState();
    if (running) {
      try {
        process.kill(running.upPid, 0);
        throw new Error(`an npm run up is running (pid ${running.upPid}); stop it with npm run down first`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
  });

  it('npm run down removes every namespace, link, route, rule, process, mount and directory of the run', async () => {
    await up();
    const run = await footprint();
    // The run made what the check looks for: the cri nodes' namespaces, their containerds, routes.
    const before = leftovers(run);
    expect(before.filter((l) => l.startsWith('netns '))).to.have.length(2);
    expect(before.filter((l) => l.startsWith('process ')).length).to.be.above(4);
    expect(before.some((l) => l.startsWith('route '))).to.equal(true);
    down();
    expect(leftovers(run)).to.deep.equal([]);
  });

  it('after up was killed, the next up removes everything the dead run left before it starts', async () => {
    const first = await up();
    const crashed = await footprint();
    // The up process itself (tsx runs it as a child), as a crash or an OOM kill would end it.
    process.kill(crashed.state.upPid, 'SIGKILL');
    await new Promise((r) => first.once('exit', r));
    // The dead run's components, containerds, pods, mounts and network are all still there...
    expect(leftovers(crashed).filter((l) => l.startsWith('process ')).length).to.be.above(4);
    const second = await up();
    const next = await footprint();
    expect(next.bridge).to.not.equal(crashed.bridge);
    // ...until the next start (the state file is the new run's now).
    expect(leftovers(crashed).filter((l) => !l.startsWith('file '))).to.deep.equal([]);
    // A clean stop of up itself (Ctrl-C) leaves nothing either.
    process.kill(next.state.upPid, 'SIGTERM');
    await new Promise((r) => second.once('exit', r));
    expect(leftovers(next)).to.deep.equal([]);
  });
});

/**
 * listRuntimePods (kubelet: GetPods(all)): pods grouped by their UID label, records and pods newest first.
 * The listing avoids sorting what a runtime already lists in creation order; held here to a plain stable
 * sort of every list, on random listings in every order, with ties and pods that have no sandbox. With a memo,
 * a pod listed as before is the same object, and every answer equals one without it.
 */
import { expect } from 'chai';
import { listRuntimePods } from '../../../../src/kubelet/kuberuntime/shell/podstatus.js';
import {
  ManagedByLabel,
  PodNameLabel,
  PodNamespaceLabel,
  PodUIDLabel,
} from '../../../../src/runtime/labels.js';
import type { RuntimePod } from '../../../../src/kubelet/pleg/generic.js';
import type { Container, PodSandbox, Runtime } from '../../../../src/runtime/types.js';

const NODE = 'node-a';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function labelsOf(pod: number): Record<string, string> {
  return {
    [PodUIDLabel]: `uid-${pod}`,
    [PodNameLabel]: `pod-${pod}`,
    [PodNamespaceLabel]: 'default',
    [ManagedByLabel]: NODE,
  };
}

function sandbox(id: string, pod: number, createdAt: bigint, ready: boolean): PodSandbox {
  return {
    id,
    metadata: { name: `pod-${pod}`, namespace: 'default', uid: `uid-${pod}`, attempt: 0 },
    state: ready ? 'ready' : 'notready',
    createdAt,
    labels: labelsOf(pod),
    annotations: {},
  } as PodSandbox;
}

function container(id: string, pod: number, createdAt: bigint): Container {
  return {
    id,
    podSandboxId: 'sb',
    metadata: { name: 'c', attempt: 0 },
    image: 'img',
    imageRef: 'img',
    state: 'running',
    createdAt,
    labels: labelsOf(pod),
    annotations: {},
  } as Container;
}

function runtimeListing(sandboxes: PodSandbox[], containers: Container[]): Runtime {
  return {
    listPodSandbox: async () => [...sandboxes],
    listContainers: async () => [...containers],
  } as unknown as Runtime;
}

/** The same listing by sorting every list (the obvious way, which the code under test must agree with). */
function reference(sandboxes: PodSandbox[], containers: Container[]) {
  const desc = <T extends { createdAt: bigint }>(a: T, b: T): number =>
    a.createdAt === b.createdAt ? 0 : a.createdAt > b.createdAt ? -1 : 1;
  const pods = new Map<
    string,
    {
      uid: string;
      name: string;
      namespace: string;
      createdAt: bigint;
      containers: unknown[];
      sandboxes: unknown[];
    }
  >();
  const podOf = (labels: Record<string, string>) => {
    const uid = labels[PodUIDLabel]!;
    let p = pods.get(uid);
    if (!p) {
      p = {
        uid,
        name: labels[PodNameLabel]!,
        namespace: labels[PodNamespaceLabel]!,
        createdAt: 0n,
        containers: [],
        sandboxes: [],
      };
      pods.set(uid, p);
    }
    return p;
  };
  for (const sb of [...sandboxes].sort(desc)) {
    const p = podOf(sb.labels);
    p.sandboxes.push({ id: sb.id, state: sb.state === 'ready' ? 'running' : 'exited' });
    if (sb.createdAt > p.createdAt) p.createdAt = sb.createdAt;
  }
  for (const c of [...containers].sort(desc)) podOf(c.labels).containers.push({ id: c.id, state: c.state });
  return [...pods.values()].sort(desc).map(({ uid, name, namespace, containers: cs, sandboxes: sbs }) => ({
    uid,
    name,
    namespace,
    containers: cs,
    sandboxes: sbs,
  }));
}

describe('listRuntimePods: order of pods and records', () => {
  it('lists a creation-ordered runtime newest first', async () => {
    const sbs = [sandbox('s1', 1, 10n, true), sandbox('s2', 2, 20n, true), sandbox('s3', 1, 30n, false)];
    const cs = [container('c1', 1, 11n), container('c2', 2, 21n), container('c3', 1, 31n)];
    const pods = await listRuntimePods(runtimeListing(sbs, cs), NODE);
    expect(pods.map((p) => p.uid)).to.deep.equal(['uid-1', 'uid-2']);
    expect(pods[0]!.sandboxes).to.deep.equal([
      { id: 's3', state: 'exited' },
      { id: 's1', state: 'running' },
    ]);
    expect(pods[0]!.containers.map((c) => c.id)).to.deep.equal(['c3', 'c1']);
  });

  it('agrees with sorting every list, whatever order the runtime lists in', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const n = Math.floor(r() * 12);
      // Every other seed with few distinct times, so ties are common; some pods only have containers.
      const span = seed % 2 === 0 ? 8 : 1_000_000;
      const time = (): bigint => BigInt(Math.floor(r() * span));
      let sbs = Array.from({ length: n }, (_, i) => sandbox(`s${i}`, Math.floor(r() * 5), time(), r() < 0.5));
      let cs = Array.from({ length: Math.floor(r() * 12) }, (_, i) =>
        container(`c${i}`, Math.floor(r() * 7), time()),
      );
      const order = Math.floor(r() * 3);
      const byTime = <T extends { createdAt: bigint }>(a: T, b: T): number =>
        a.createdAt === b.createdAt ? 0 : a.createdAt < b.createdAt ? -1 : 1;
      if (order === 0) {
        sbs = sbs.sort(byTime);
        cs = cs.sort(byTime);
      } else if (order === 1) {
        sbs = sbs.sort(byTime).reverse();
        cs = cs.sort(byTime).reverse();
      }
      const got = await listRuntimePods(runtimeListing(sbs, cs), NODE);
      expect(JSON.parse(JSON.stringify(got)), `seed ${seed}`).to.deep.equal(reference(sbs, cs));
    }
  });
});

describe('listRuntimePods: a memo of the last listing', () => {
  it('answers a pod listed the same again with the same object, and a changed pod with a new one', async () => {
    const memo = new Map<string, RuntimePod>();
    const sbs = [sandbox('s1', 1, 10n, true), sandbox('s2', 2, 20n, true)];
    const cs = [container('c1', 1, 11n), container('c2', 2, 21n)];
    const first = await listRuntimePods(runtimeListing(sbs, cs), NODE, memo);
    expect([...memo.keys()]).to.deep.equal(['uid-2', 'uid-1']);

    // Pod 2's container exits: pod 1 is the same object, pod 2 a new one that says so.
    const exited = { ...cs[1]!, state: 'exited' } as Container;
    const second = await listRuntimePods(runtimeListing(sbs, [cs[0]!, exited]), NODE, memo);
    expect(second[1]).to.equal(first[1]);
    expect(second[0]).to.not.equal(first[0]);
    expect(second[0]!.containers).to.deep.equal([{ id: 'c2', state: 'exited' }]);
    expect(first[0]!.containers).to.deep.equal([{ id: 'c2', state: 'running' }]);
    expect(memo.get('uid-2')).to.equal(second[0]);

    // A new sandbox of pod 1 (newest, so pod 1 now comes first), a sandbox going not ready, a pod gone.
    const third = await listRuntimePods(
      runtimeListing([sbs[0]!, sandbox('s3', 1, 30n, true)], [cs[0]!]),
      NODE,
      memo,
    );
    expect(third.map((p) => p.uid)).to.deep.equal(['uid-1']);
    expect(third[0]).to.not.equal(second[1]);
    expect([...memo.keys()]).to.deep.equal(['uid-1']);
    const notReady = await listRuntimePods(
      runtimeListing([sbs[0]!, sandbox('s3', 1, 30n, false)], [cs[0]!]),
      NODE,
      memo,
    );
    expect(notReady[0]).to.not.equal(third[0]);
    expect(notReady[0]!.sandboxes.map((s) => s.state)).to.deep.equal(['exited', 'running']);
  });

  it('agrees with a listing without a memo over random changes', async () => {
    const memo = new Map<string, RuntimePod>();
    const r = rng(7);
    let sbs: PodSandbox[] = [];
    let cs: Container[] = [];
    for (let round = 0; round < 200; round++) {
      // Each round adds, removes or flips a few records; most pods stay as they were.
      const changes = Math.floor(r() * 3);
      for (let k = 0; k < changes; k++) {
        const what = r();
        const pod = Math.floor(r() * 6);
        if (what < 0.3) sbs.push(sandbox(`s${round}-${k}`, pod, BigInt(round * 10 + k), r() < 0.7));
        else if (what < 0.6) cs.push(container(`c${round}-${k}`, pod, BigInt(round * 10 + k)));
        else if (what < 0.75 && sbs.length > 0)
          sbs = sbs.filter((_, i) => i !== Math.floor(r() * sbs.length));
        else if (what < 0.9 && cs.length > 0) {
          const i = Math.floor(r() * cs.length);
          cs = cs.map((c, j) =>
            j === i ? ({ ...c, state: c.state === 'running' ? 'exited' : 'running' } as Container) : c,
          );
        } else if (cs.length > 0) cs = cs.filter((_, i) => i !== Math.floor(r() * cs.length));
      }
      const withMemo = await listRuntimePods(runtimeListing(sbs, cs), NODE, memo);
      const without = await listRuntimePods(runtimeListing(sbs, cs), NODE);
      expect(withMemo, `round ${round}`).to.deep.equal(without);
      expect([...memo.values()], `round ${round}`).to.have.members(withMemo);
    }
  });
});

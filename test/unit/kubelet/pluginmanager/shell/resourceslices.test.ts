// The start's ResourceSlice wipe: after the Node exists, and only for a node that a list begun after it asked
// shows with slices (one list shared by the nodes that ask while another is under way).
import { expect } from 'chai';
import type { RequestOptions } from '../../../../../src/kube/client.js';
import { DRAPluginHandler } from '../../../../../src/kubelet/pluginmanager/shell/drahandler.js';
import {
  NodeResourceSlices,
  RESOURCE_SLICES_PATH,
  restNodeResourceSlices,
} from '../../../../../src/kubelet/pluginmanager/shell/resourceslices.js';
import { KindError } from '../../../../../src/util/errors.js';
import { silentLogger } from '../../../../../src/util/logger.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A list the test answers by hand, one at a time. */
class ManualLists {
  pending: { resolve: (names: string[]) => void; reject: (err: Error) => void }[] = [];
  list = (): Promise<string[]> =>
    new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
    });
}

describe('NodeResourceSlices: which nodes have ResourceSlices, shared by the nodes of a process', () => {
  it('answers a caller from a list begun after it asked, the callers meanwhile sharing the next one', async () => {
    const lists = new ManualLists();
    const slices = new NodeResourceSlices(lists.list);
    const first = slices.nodesWithSlices();
    expect(slices.lists).to.equal(1);
    // Asked while the first list is under way: that list may predate what they must see.
    const second = slices.nodesWithSlices();
    const third = slices.nodesWithSlices();
    await tick();
    expect(slices.lists, 'the next list waits for the running one').to.equal(1);
    lists.pending[0]!.resolve(['vn-a']);
    expect([...(await first)]).to.deep.equal(['vn-a']);
    await tick();
    expect(slices.lists).to.equal(2);
    lists.pending[1]!.resolve(['vn-a', 'vn-b', '']);
    const [b, c] = await Promise.all([second, third]);
    expect(b).to.equal(c);
    expect([...b].sort()).to.deep.equal(['', 'vn-a', 'vn-b']);
    // Nothing under way: a new caller begins a list of its own.
    const fourth = slices.nodesWithSlices();
    expect(slices.lists).to.equal(3);
    lists.pending[2]!.resolve([]);
    expect((await fourth).size).to.equal(0);
  });

  it('a failed list fails its callers; the ones queued behind it get a list of their own', async () => {
    const lists = new ManualLists();
    const slices = new NodeResourceSlices(lists.list);
    const first = slices.nodesWithSlices();
    const queued = slices.nodesWithSlices();
    lists.pending[0]!.reject(new Error('boom'));
    let failed: unknown;
    await first.catch((err: unknown) => (failed = err));
    expect(String(failed)).to.contain('boom');
    await tick();
    lists.pending[1]!.resolve(['vn-a']);
    expect([...(await queued)]).to.deep.equal(['vn-a']);
  });

  it('over the API: the slices of every node; a server without the ResourceSlice API has none', async () => {
    const calls: RequestOptions[] = [];
    let answer: () => Promise<unknown> = () =>
      Promise.resolve({ items: [{ spec: { nodeName: 'vn-a' } }, { spec: { nodeSelector: {} } }] });
    const slices = restNodeResourceSlices({
      request: <T>(req: RequestOptions) => {
        calls.push(req);
        return answer() as Promise<T>;
      },
    });
    expect([...(await slices.nodesWithSlices())].sort()).to.deep.equal(['', 'vn-a']);
    expect(calls[0]).to.deep.include({ method: 'GET', path: RESOURCE_SLICES_PATH });
    answer = () =>
      Promise.reject(new KindError('NotFound', 'the server could not find the requested resource'));
    expect((await slices.nodesWithSlices()).size).to.equal(0);
    answer = () => Promise.reject(new KindError('Unavailable', 'down'));
    let failed = false;
    await slices.nodesWithSlices().catch(() => (failed = true));
    expect(failed).to.equal(true);
  });
});

describe('DRAPluginHandler.wipeAtStart: the kubelet DRA plugin manager start wipe', () => {
  function handler(nodeName = 'vn-a'): { h: DRAPluginHandler; deletes: string[] } {
    const deletes: string[] = [];
    const h = new DRAPluginHandler({
      nodeName,
      logger: silentLogger,
      client: {
        request: <T>(req: RequestOptions) => {
          if (req.method === 'DELETE') deletes.push(`${req.path}?${req.query?.fieldSelector ?? ''}`);
          return Promise.resolve({} as T);
        },
      },
    });
    return { h, deletes };
  }
  const registration = (): { promise: Promise<void>; resolve: () => void } => {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  };

  it('waits for the Node, then deletes the slices of a node the list shows with some', async () => {
    const { h, deletes } = handler();
    const registered = registration();
    const lists = new ManualLists();
    const slices = new NodeResourceSlices(lists.list);
    const done = h.wipeAtStart(registered.promise, slices);
    await tick();
    expect(slices.lists, 'not before the Node exists').to.equal(0);
    registered.resolve();
    await tick();
    expect(slices.lists).to.equal(1);
    lists.pending[0]!.resolve(['vn-a']);
    await done;
    expect(deletes).to.deep.equal([`${RESOURCE_SLICES_PATH}?spec.nodeName=vn-a`]);
  });

  it('sends nothing for a node the list shows without slices', async () => {
    const { h, deletes } = handler();
    const slices = new NodeResourceSlices(() => Promise.resolve(['vn-b', '']));
    await h.wipeAtStart(Promise.resolve(), slices);
    expect(deletes).to.deep.equal([]);
  });

  it('deletes as the kubelet does when the list fails or there is none to ask', async () => {
    const failing = handler();
    await failing.h.wipeAtStart(
      Promise.resolve(),
      new NodeResourceSlices(() => Promise.reject(new Error('down'))),
    );
    expect(failing.deletes).to.deep.equal([`${RESOURCE_SLICES_PATH}?spec.nodeName=vn-a`]);
    const alone = handler();
    await alone.h.wipeAtStart(Promise.resolve());
    expect(alone.deletes).to.deep.equal([`${RESOURCE_SLICES_PATH}?spec.nodeName=vn-a`]);
  });

  it('does nothing once stopped before its Node existed', async () => {
    const { h, deletes } = handler();
    const registered = registration();
    const slices = new NodeResourceSlices(() => Promise.resolve(['vn-a']));
    const done = h.wipeAtStart(registered.promise, slices);
    h.stop();
    registered.resolve();
    await done;
    expect(slices.lists).to.equal(0);
    expect(deletes).to.deep.equal([]);
  });
});

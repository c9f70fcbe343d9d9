/** What a call threw or a promise rejected with, for tests that check the error itself. */
import { expect } from 'chai';
import { KindError } from '../../src/util/errors.js';

/** The error `fn` throws; fails the test when it returns. */
export function catchErr(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

/** The KindError `fn` throws; fails the test when it returns or throws something else. */
export function kindThrown(fn: () => unknown): KindError {
  const err = catchErr(fn);
  expect(err, String(err)).to.be.instanceOf(KindError);
  return err as KindError;
}

/** The error `p` (or the call `p`) fails with; fails the test when it succeeds. */
export async function rejection(p: Promise<unknown> | (() => unknown)): Promise<Error> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    return err as Error;
  }
  return expect.fail('expected a failure');
}

/** The KindError (the error kind the runtime and API client map failures to) `p` rejects with. */
export async function kindRejection(p: Promise<unknown>): Promise<KindError> {
  const err = await rejection(p);
  expect(err, String(err)).to.be.instanceOf(KindError);
  return err as KindError;
}

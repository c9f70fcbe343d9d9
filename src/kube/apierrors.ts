/**
 * What an API server's answer that is not a success means to a caller: a KindError whose kind follows the
 * status code (and the Status object's reason), and whether and when the request may be sent again, as
 * client-go's REST client decides it from 429 or 5xx with `Retry-After`.
 */
import { KindError, type ErrorKind } from '../util/errors.js';

/** The API server's Status object, as far as we read it. */
interface StatusBody {
  kind?: string;
  message?: string;
  reason?: string;
  code?: number;
}

function kindForStatus(code: number, reason: string | undefined): ErrorKind {
  if (code === 404) return 'NotFound';
  if (code === 409) return reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict';
  if (code === 410) return 'Gone';
  if (code === 401 || code === 403) return 'Forbidden';
  if (code === 400 || code === 422) return 'InvalidArgument';
  if (code === 429 || code >= 500) return 'Unavailable';
  return 'Unknown';
}

/** Times a request answered 429 or 5xx with `Retry-After` is sent again (client-go's REST client: 10). */
export const MAX_RETRIES = 10;

/**
 * The seconds to wait before sending a request again, when its answer asks for it: 429 or 5xx with a
 * `Retry-After` of whole seconds (client-go reads no other form, and waits no longer than it says).
 */
export function retryAfterSeconds(status: number, header: string | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  if (header === undefined || !/^[0-9]{1,6}$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

/** A header's text: the first of repeated values, as Go's `Header.Get` reads it. */
export function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The error of an answer that is not a success: apiError, and for a 429 or 5xx with `Retry-After` the seconds
 * to wait in `context.retryAfterSeconds` (see retryWaitMs).
 */
export function answerError(
  status: number,
  body: string,
  what: string,
  retryAfter: string | undefined,
): KindError {
  const err = apiError(status, body, what);
  const wait = retryAfterSeconds(status, retryAfter);
  if (wait !== undefined) err.context['retryAfterSeconds'] = wait;
  return err;
}

/** How long to wait before sending again what failed with `err` after `retries` retries; undefined: do not. */
export function retryWaitMs(err: unknown, retries: number): number | undefined {
  const wait = err instanceof KindError ? err.context['retryAfterSeconds'] : undefined;
  return typeof wait === 'number' && retries < MAX_RETRIES ? wait * 1000 : undefined;
}

/** A KindError for an API error; `context.code` and `context.reason` carry the server's words. */
export function apiError(code: number, body: string, what: string): KindError {
  let status: StatusBody = {};
  try {
    status = JSON.parse(body) as StatusBody;
  } catch {
    status = { message: body.slice(0, 500) };
  }
  const kind = kindForStatus(code, status.reason);
  return new KindError(kind, `${what}: ${code} ${status.reason ?? ''} ${status.message ?? ''}`.trim(), {
    code,
    reason: status.reason,
  });
}

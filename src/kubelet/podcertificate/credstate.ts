/**
 * The credential state of one podCertificate projection (the kubelet's podcertificate manager, its
 * projectionRecord), and every decision about it as a pure function of the state, the request it waits on
 * (as the node's PodCertificateRequest informer has it) and the time:
 *
 *                        ┌───────────────────────────┐
 *                        ▼                           │
 *   initial ──► wait ──► fresh ──► waitRefresh ──────┘
 *                 │                   │
 *                 ├──► denied ◄───────┤
 *                 └──► failed ◄───────┘
 *
 * - initial: nothing asked yet; the manager creates a request (a new key) and the state becomes wait.
 * - wait: a request is out. Issued: fresh with its chain. Denied / Failed: those, for good, with a Warning
 *   Event. Not in the informer: retried (the informer may lag), and once 10 min (+ up to 5 min of jitter) have
 *   passed since its creation it is taken as deleted and the state starts over at initial.
 * - fresh: key and chain are served. From beginRefreshAt (+ jitter) on, a new request (with a new key) is made
 *   and the state becomes waitRefresh; 10 min past beginRefreshAt a CertificateOverdueForRefresh Event, past
 *   notAfter a CertificateExpired Event, each once.
 * - waitRefresh: the old key and chain are still served while the refresh request is out; its outcome as in
 *   wait (a deleted one goes back to fresh, which asks again; Denied / Failed drop the old credentials too).
 * - denied, failed: terminal; the volume reports the signer's reason and message.
 *
 * Invariants: the private key of a state never leaves this process (no state is written anywhere); a state is
 * replaced, never mutated, so a reader holding one sees it whole.
 */
import type { PodCertificateRequest } from '../../api/podcertificaterequest.js';
import { pemBlocks, pemEncode } from '../../util/pem.js';
import { parseRFC3339 } from '../../util/rfc3339.js';
import { goQuote } from '../../util/goquote.js';

/** How long a request that does not show up in the informer is waited for (before jitter). */
export const ASSUME_DELETED_AFTER_MS = 10 * 60_000;
/** How long past beginRefreshAt a certificate is overdue for refresh. */
export const REFRESH_OVERDUE_AFTER_MS = 10 * 60_000;
/** Jitter added to beginRefreshAt and to the abandon time: uniform in [0, 5 min). */
export const JITTER_MAX_MS = 5 * 60_000;

/** A served key and chain, with when to refresh them and which Events were recorded about them. */
interface Issued {
  /** PEM PRIVATE KEY (PKCS#8). */
  privateKey: string;
  /** PEM CERTIFICATE blocks (cleanCertificateChain). */
  certChain: string;
  beginRefreshAt: number;
  notAfter: number;
  overdueEventRecorded: boolean;
  expiredEventRecorded: boolean;
}

export type CredState =
  | { kind: 'initial' }
  | { kind: 'wait'; privateKey: string; requestName: string; abandonAt: number }
  | ({ kind: 'fresh' } & Issued)
  | ({ kind: 'waitRefresh' } & Issued & {
        refreshPrivateKey: string;
        refreshRequestName: string;
        refreshAbandonAt: number;
      })
  | { kind: 'denied'; reason: string; message: string }
  | { kind: 'failed'; reason: string; message: string };

export const INITIAL: CredState = Object.freeze({ kind: 'initial' });

/** A Warning Event about the pod. */
export interface CredEvent {
  reason: string;
  message: string;
}

/**
 * What the manager does after a step: `done` (the projection leaves the queue until something wakes it),
 * `retry` (requeued with back-off; `error` is logged), or `create` a request with a new key and then call
 * `requestCreated`.
 */
export type CredAction = { kind: 'done' } | { kind: 'retry'; error: string } | { kind: 'create' };

export interface StepResult {
  state: CredState;
  events: CredEvent[];
  action: CredAction;
}

export interface StepInput {
  now: number;
  /** Uniform [0, JITTER_MAX_MS). */
  jitterMs: number;
  /** The request `pendingRequestName(state)` names, as the informer has it; undefined when it has none. */
  request?: PodCertificateRequest;
}

/** The request a state waits on (wait, waitRefresh), for the caller to look up. */
export function pendingRequestName(state: CredState): string | undefined {
  if (state.kind === 'wait') return state.requestName;
  if (state.kind === 'waitRefresh') return state.refreshRequestName;
  return undefined;
}

/** The served credentials of a state, or the kubelet's error for it. */
export function credentialBundle(
  state: CredState,
): { ok: true; privateKey: string; certChain: string } | { ok: false; error: string } {
  switch (state.kind) {
    case 'initial':
    case 'wait':
      return { ok: false, error: 'credential bundle is not issued yet' };
    case 'fresh':
    case 'waitRefresh':
      return { ok: true, privateKey: state.privateKey, certChain: state.certChain };
    case 'denied':
      return {
        ok: false,
        error: `PodCertificateRequest was permanently denied: reason=${goQuote(state.reason)} message=${goQuote(state.message)}`,
      };
    case 'failed':
      return {
        ok: false,
        error: `PodCertificateRequest was permanently failed: reason=${goQuote(state.reason)} message=${goQuote(state.message)}`,
      };
    default: {
      const never: never = state;
      throw new Error(`unknown credential state ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The chain as it is written into the pod: every PEM block of `chain` as a CERTIFICATE block, without what
 * stood between the blocks or in their headers (the kubelet's cleanCertificateChain).
 */
export function cleanCertificateChain(chain: string): string {
  return pemBlocks(chain)
    .map((b) => pemEncode('CERTIFICATE', b.der))
    .join('');
}

/** RFC 3339 to ms; NaN when absent or not a time. */
function timeOf(s: string | undefined): number {
  return parseRFC3339(s) ?? NaN;
}

const done = (state: CredState, events: CredEvent[] = []): StepResult => ({
  state,
  events,
  action: { kind: 'done' },
});

/**
 * The Events a served certificate is due (overdue for refresh, expired), each once: the state to keep, with
 * what was recorded marked.
 */
function dueEvents<S extends Issued>(state: S, now: number): { state: S; events: CredEvent[] } {
  const events: CredEvent[] = [];
  let next = state;
  if (now > state.beginRefreshAt + REFRESH_OVERDUE_AFTER_MS && !state.overdueEventRecorded) {
    events.push({ reason: 'CertificateOverdueForRefresh', message: 'PodCertificate refresh overdue' });
    next = { ...next, overdueEventRecorded: true };
  }
  if (now > state.notAfter && !state.expiredEventRecorded) {
    events.push({ reason: 'CertificateExpired', message: 'PodCertificate expired' });
    next = { ...next, expiredEventRecorded: true };
  }
  return { state: next, events };
}

/**
 * The Warning Event of a request the signer denied or failed. The kubelet passes the condition's reason as
 * the format of its Eventf and its own sentence as the argument, so Go prints the reason followed by
 * `%!(EXTRA string=<sentence>)`; a condition's reason cannot hold a `%` (API validation), so that is all.
 */
function terminalEvent(
  type: 'Denied' | 'Failed',
  request: PodCertificateRequest,
  reason: string,
  message: string,
): CredEvent {
  const ref = `${request.metadata.namespace ?? ''}/${request.metadata.name ?? ''}`;
  const sentence = `PodCertificateRequest ${ref} ${type === 'Denied' ? 'was denied' : 'failed'}, reason=${goQuote(reason)}, message=${goQuote(message)}`;
  return { reason: type, message: `${reason}%!(EXTRA string=${sentence})` };
}

/**
 * The outcome of the request a wait state waits on: the terminal state it reached (with its Event), or
 * undefined while it is pending. The first Issued, Denied or Failed condition decides, as the kubelet reads
 * them (API validation allows only one, with status True).
 */
function outcome(
  request: PodCertificateRequest,
  privateKey: string,
  jitterMs: number,
): { state: CredState; events: CredEvent[] } | undefined {
  for (const c of request.status?.conditions ?? []) {
    switch (c.type) {
      case 'Denied':
        return {
          state: { kind: 'denied', reason: c.reason, message: c.message },
          events: [terminalEvent('Denied', request, c.reason, c.message)],
        };
      case 'Failed':
        return {
          state: { kind: 'failed', reason: c.reason, message: c.message },
          events: [terminalEvent('Failed', request, c.reason, c.message)],
        };
      case 'Issued': {
        const s = request.status ?? {};
        return {
          state: {
            kind: 'fresh',
            privateKey,
            certChain: cleanCertificateChain(s.certificateChain ?? ''),
            beginRefreshAt: timeOf(s.beginRefreshAt) + jitterMs,
            notAfter: timeOf(s.notAfter),
            overdueEventRecorded: false,
            expiredEventRecorded: false,
          },
          events: [],
        };
      }
    }
  }
  return undefined;
}

/** The error of a request the informer does not have (yet), as the kubelet words its lister's NotFound. */
function notInInformer(namespace: string, name: string): string {
  return `while getting PodCertificateRequest "${namespace}/${name}": podcertificaterequest.certificates.k8s.io "${name}" not found`;
}

/**
 * One step of a projection (kubelet handleProjection, without its I/O). `namespace` is the pod's (for the
 * wording of errors).
 */
export function step(state: CredState, namespace: string, input: StepInput): StepResult {
  const { now, jitterMs, request } = input;
  switch (state.kind) {
    case 'initial':
      return { state, events: [], action: { kind: 'create' } };
    case 'wait': {
      if (!request) {
        if (now > state.abandonAt) {
          return {
            state: INITIAL,
            events: [],
            action: {
              kind: 'retry',
              error: `PodCertificateRequest "${namespace}/${state.requestName}" appears to have been deleted`,
            },
          };
        }
        return {
          state,
          events: [],
          action: { kind: 'retry', error: notInInformer(namespace, state.requestName) },
        };
      }
      const o = outcome(request, state.privateKey, jitterMs);
      return o ? done(o.state, o.events) : done(state);
    }
    case 'denied':
    case 'failed':
      return done(state);
    case 'fresh': {
      if (now < state.beginRefreshAt) return done(state);
      const due = dueEvents(state, now);
      return { state: due.state, events: due.events, action: { kind: 'create' } };
    }
    case 'waitRefresh': {
      if (!request) {
        if (now > state.refreshAbandonAt) {
          return {
            state: freshOf(state),
            events: [],
            action: { kind: 'retry', error: 'PodCertificateRequest appears to have been deleted' },
          };
        }
        return {
          state,
          events: [],
          action: { kind: 'retry', error: notInInformer(namespace, state.refreshRequestName) },
        };
      }
      const o = outcome(request, state.refreshPrivateKey, jitterMs);
      if (o) return done(o.state, o.events);
      const due = dueEvents(state, now);
      return done(due.state, due.events);
    }
    default: {
      const never: never = state;
      throw new Error(`unknown credential state ${JSON.stringify(never)}`);
    }
  }
}

/** A waitRefresh state's served credentials as a fresh state (its refresh request given up). */
function freshOf(s: Extract<CredState, { kind: 'waitRefresh' }>): CredState {
  return {
    kind: 'fresh',
    privateKey: s.privateKey,
    certChain: s.certChain,
    beginRefreshAt: s.beginRefreshAt,
    notAfter: s.notAfter,
    overdueEventRecorded: s.overdueEventRecorded,
    expiredEventRecorded: s.expiredEventRecorded,
  };
}

/** What the manager created for a `create` action. */
export interface CreatedRequest {
  name: string;
  /** The API server's creationTimestamp (RFC 3339); the time of creation when absent. */
  creationTimestamp?: string;
  /** PEM PRIVATE KEY of the request's key pair. */
  privateKey: string;
}

/**
 * The state after the request of a `create` action was created: initial -> wait, fresh -> waitRefresh (any
 * other state is returned as it is: the step that asked was not one of those).
 */
export function requestCreated(
  state: CredState,
  created: CreatedRequest,
  now: number,
  jitterMs: number,
): CredState {
  const at = timeOf(created.creationTimestamp);
  const abandonAt = (Number.isNaN(at) ? now : at) + ASSUME_DELETED_AFTER_MS + jitterMs;
  if (state.kind === 'initial')
    return { kind: 'wait', privateKey: created.privateKey, requestName: created.name, abandonAt };
  if (state.kind === 'fresh')
    return {
      ...state,
      kind: 'waitRefresh',
      refreshPrivateKey: created.privateKey,
      refreshRequestName: created.name,
      refreshAbandonAt: abandonAt,
    };
  return state;
}

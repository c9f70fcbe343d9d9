// What the podcertificate tests share: an informer of PodCertificateRequests a test fills, and times and PEM.
import type { PodCertificateRequest } from '../../../../src/api/podcertificaterequest.js';
import type { InformerHandlers } from '../../../../src/kube/informer.js';

export const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
export const pem = (b64: string): string =>
  `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;

/** The node's requests as its informer has them: `put` is the informer hearing of a new or changed one. */
export class FakeRequests {
  readonly store = new Map<string, PodCertificateRequest>();
  private readonly handlers: InformerHandlers<PodCertificateRequest>[] = [];
  get(key: string): PodCertificateRequest | undefined {
    return this.store.get(key);
  }
  addHandlers(h: InformerHandlers<PodCertificateRequest>): void {
    this.handlers.push(h);
  }
  waitForSync(): Promise<void> {
    return Promise.resolve();
  }
  put(r: PodCertificateRequest): void {
    const key = `${r.metadata.namespace}/${r.metadata.name}`;
    const old = this.store.get(key);
    this.store.set(key, r);
    for (const h of this.handlers)
      if (old) h.update?.(old, r);
      else h.add?.(r);
  }
}

/** `r` with an Issued status: chain `chain`, valid from `at`, refresh after `refreshAfterMs`. */
export function issuedRequest(
  r: PodCertificateRequest,
  chain: string,
  at: number,
  refreshAfterMs: number,
  lifetimeMs: number,
): PodCertificateRequest {
  return {
    ...r,
    status: {
      conditions: [{ type: 'Issued', status: 'True', reason: 'Reason', message: 'Issued' }],
      certificateChain: chain,
      notBefore: iso(at),
      beginRefreshAt: iso(at + refreshAfterMs),
      notAfter: iso(at + lifetimeMs),
    },
  };
}

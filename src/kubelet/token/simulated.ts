/**
 * Service-account tokens for nodes that simulate them (VirtualNode `spec.kubelet.serviceAccountTokens:
 * Simulated`, the default on sim): an unsigned token with the claims a bound token would carry (issuer,
 * subject, audience, expiry, the pod it is bound to), written where a kubelet writes the real one. No
 * TokenRequest is sent, so thousands of simulated pods cost the API server nothing; the API server rejects the
 * token, which says plainly that it is not one of its own (`alg: none`, issuer `kubelet-operator/simulated`).
 * Pure: the clock's time comes in.
 */
import type { Pod } from '../../api/core.js';
import type { ServiceAccountTokenProjection } from '../../api/volumes.js';

export const SimulatedTokenIssuer = 'kubelet-operator/simulated';

function b64url(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64url');
}

export function simulatedServiceAccountToken(
  pod: Pod,
  p: ServiceAccountTokenProjection,
  nowMs: number,
): string {
  const ns = pod.metadata.namespace ?? '';
  const sa = pod.spec.serviceAccountName || 'default';
  const iat = Math.floor(nowMs / 1000);
  const claims = {
    iss: SimulatedTokenIssuer,
    sub: `system:serviceaccount:${ns}:${sa}`,
    aud: p.audience ? [p.audience] : [],
    iat,
    nbf: iat,
    exp: iat + (p.expirationSeconds ?? 3600),
    'kubernetes.io': {
      namespace: ns,
      serviceaccount: { name: sa },
      pod: { name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
    },
  };
  return `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}.`;
}

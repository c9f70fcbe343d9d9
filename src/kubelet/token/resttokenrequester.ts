/**
 * The TokenRequest API behind the token manager: POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token
 * with an authentication.k8s.io/v1 TokenRequest, through the operator's rate-limited client. The operator's
 * ServiceAccount needs `create` on `serviceaccounts/token` (the kubelet's node authorizer grants the same).
 *
 * Errors keep the API server's own message (client-go's StatusError reads the same), so the token manager's
 * `failed to fetch token: <message>` matches the kubelet's word for word.
 */
import type { KubeClient } from '../../kube/client.js';
import { KindError, errorKind, errorMessage, isNotFound } from '../../util/errors.js';
import type {
  TokenRequestResult,
  TokenRequester,
  TokenRequestSpec,
  TokenRequestStatus,
} from './tokenmanager.js';

/** The wire object, both ways. */
interface TokenRequestObject {
  apiVersion: 'authentication.k8s.io/v1';
  kind: 'TokenRequest';
  metadata: Record<string, unknown>;
  spec: TokenRequestSpec;
  status?: Partial<TokenRequestStatus>;
}

interface APIResourceList {
  resources?: { name?: string }[];
}

const enc = encodeURIComponent;

/**
 * The server's message out of one of our client's errors, which read `<METHOD> <path>: <code> <reason>
 * <message>` (kube/client.ts apiError). Anything else (a connection failure) is kept whole.
 */
export function apiServerMessage(err: unknown, what: string): string {
  const message = errorMessage(err);
  if (!(err instanceof KindError) || typeof err.context.code !== 'number') return message;
  const prefix = `${what}: ${err.context.code} `;
  if (!message.startsWith(prefix)) return message;
  let rest = message.slice(prefix.length);
  const reason = typeof err.context.reason === 'string' ? err.context.reason : '';
  if (reason !== '' && rest.startsWith(reason)) rest = rest.slice(reason.length);
  rest = rest.trim();
  return rest !== '' ? rest : reason !== '' ? reason : message;
}

export class RestTokenRequester implements TokenRequester {
  private supported: Promise<boolean> | undefined;

  constructor(private readonly client: Pick<KubeClient, 'request'>) {
    if (!client) throw new KindError('InvalidArgument', 'token requester needs a client', {});
  }

  async createToken(
    namespace: string,
    serviceAccountName: string,
    spec: TokenRequestSpec,
  ): Promise<TokenRequestResult> {
    const path = `/api/v1/namespaces/${enc(namespace)}/serviceaccounts/${enc(serviceAccountName)}/token`;
    const body: TokenRequestObject = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: {},
      spec,
    };
    const context = { namespace, serviceAccount: serviceAccountName };
    let out: TokenRequestObject | undefined;
    try {
      out = await this.client.request<TokenRequestObject>({ method: 'POST', path, body });
    } catch (err) {
      // A 404 is usually the service account; only when discovery lacks the subresource is it the API.
      if (isNotFound(err) && !(await this.tokenRequestsSupported())) {
        throw new KindError(
          'NotFound',
          'the API server does not have TokenRequest endpoints enabled',
          context,
          {
            cause: err,
          },
        );
      }
      throw new KindError(errorKind(err), apiServerMessage(err, `POST ${path}`), context, { cause: err });
    }
    const token = out?.status?.token;
    const expirationTimestamp = out?.status?.expirationTimestamp;
    if (typeof token !== 'string' || token === '' || typeof expirationTimestamp !== 'string') {
      throw new KindError('Internal', 'TokenRequest response has no token or expiration', context);
    }
    return { spec: out?.spec, status: { token, expirationTimestamp } };
  }

  /** Whether core/v1 serves serviceaccounts/token; asked once, like the kubelet's sync.Once. */
  private tokenRequestsSupported(): Promise<boolean> {
    this.supported ??= this.client
      .request<APIResourceList>({ method: 'GET', path: '/api/v1' })
      .then((list) => (list?.resources ?? []).some((r) => r.name === 'serviceaccounts/token'))
      .catch(() => false);
    return this.supported;
  }
}

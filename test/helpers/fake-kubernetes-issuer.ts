/**
 * A local stand-in for a Kubernetes API server's service account token issuer, over HTTPS with
 * a certificate from a test CA. It follows the Kubernetes documentation; nothing here is
 * Kubernetes' code:
 *
 *   "Configure Service Accounts for Pods", section "Service account issuer discovery"
 *   (kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/): the
 *   discovery document at `/.well-known/openid-configuration` (`issuer`, `jwks_uri`
 *   `<issuer>/openid/v1/jwks`, `response_types_supported: [id_token]`,
 *   `subject_types_supported: [public]`, `id_token_signing_alg_values_supported: [RS256]`) and
 *   the key set at `/openid/v1/jwks`.
 *
 *   "Managing Service Accounts" / "Service account tokens" (kubernetes.io/docs/reference/access-
 *   authn-authz/service-accounts-admin/) and the TokenRequest API: a projected token (volume
 *   `serviceAccountToken` with `audience` and `expirationSeconds`) carries `aud`, `exp`, `iat`,
 *   `nbf`, `iss`, `jti`, `sub` `system:serviceaccount:<namespace>:<name>` and the
 *   `kubernetes.io` claim `{namespace, node: {name, uid}, pod: {name, uid}, serviceaccount:
 *   {name, uid}}`; header `alg: RS256`, `kid`.
 *
 * The issuer here is `https://127.0.0.1:<port>` instead of the cluster's.
 */
import { randomUUID } from 'node:crypto';
import { json, startHttpsFake, type HttpsFake } from './fake-https.js';
import { makeSigningKey, signToken, type SigningKey } from './fake-oidc-keys.js';

export interface Pod {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly pod?: string;
}

export interface FakeKubernetesIssuer extends HttpsFake {
  readonly issuer: string;
  readonly key: SigningKey;
  /** A projected service account token for `audience`, valid `expirationSeconds` (default 600). */
  token(pod: Pod, audience: string, expirationSeconds?: number): Promise<string>;
}

export async function startFakeKubernetesIssuer(): Promise<FakeKubernetesIssuer> {
  const key = await makeSigningKey();
  let issuer = '';
  const fake = await startHttpsFake((_req, url, res) => {
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        jwks_uri: `${issuer}/openid/v1/jwks`,
        response_types_supported: ['id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (url.pathname === '/openid/v1/jwks') return json(res, 200, { keys: [key.publicJwk] });
    json(res, 404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
  });
  issuer = fake.url;
  return {
    ...fake,
    issuer,
    key,
    token(pod, audience, expirationSeconds = 600) {
      const now = Math.floor(Date.now() / 1000);
      const podName = pod.pod ?? `${pod.serviceAccount}-7d9f8-abcde`;
      return signToken(key, {
        aud: [audience],
        exp: now + expirationSeconds,
        iat: now,
        iss: issuer,
        jti: randomUUID(),
        'kubernetes.io': {
          namespace: pod.namespace,
          node: { name: 'node-1', uid: randomUUID() },
          pod: { name: podName, uid: randomUUID() },
          serviceaccount: { name: pod.serviceAccount, uid: randomUUID() },
        },
        nbf: now,
        sub: `system:serviceaccount:${pod.namespace}:${pod.serviceAccount}`,
      });
    },
  };
}

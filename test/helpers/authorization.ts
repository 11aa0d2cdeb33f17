/** An authorization-code request with PKCE, as a relying party makes it (openid-client). */
import * as client from 'openid-client';
import { webClientSecret } from '../../src/idp/clients.js';

/** svc's own web client (`svc`, its secret derived from `secretKey`) at the bundled provider of svc at `url`, over plain http. */
export function svcWebClient(url: string, secretKey: string): Promise<client.Configuration> {
  return client.discovery(new URL(`${url}/api/idp`), 'svc', undefined, client.ClientSecretBasic(webClientSecret(secretKey)), { execute: [client.allowInsecureRequests] });
}

export interface AuthorizationRequest {
  /** Where the browser goes first. */
  readonly href: string;
  /** For the code exchange. */
  readonly verifier: string;
  readonly state: string;
}

export async function authorizationRequest(config: client.Configuration, redirectUri: string, scope: string): Promise<AuthorizationRequest> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const href = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, scope, state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  }).href;
  return { href, verifier, state };
}

/** An authorization-code request with PKCE, as a relying party makes it (openid-client). */
import * as client from 'openid-client';

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

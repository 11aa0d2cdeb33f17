/**
 * The browser login: authorization code + PKCE (S256) with state and nonce, the browser coming
 * back to a loopback listener. The URL is always printed on stderr (the opener may find no
 * browser); the listener takes the one callback with this login's state and closes.
 */
import * as oidc from 'openid-client';
import { CliError } from '../errors.js';
import type { BrowserOpener } from './browser-open.js';
import { providerReason, type SsoProvider } from './discovery.js';
import { listenForCallback } from './loopback.js';

export interface CodeFlowOptions {
  readonly port: number;
  /** undefined: print the URL only. */
  readonly open: BrowserOpener | undefined;
  readonly say: (line: string) => void;
}

export async function codeFlowLogin(config: oidc.Configuration, provider: SsoProvider, options: CodeFlowOptions): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
  const state = oidc.randomState();
  const listener = await listenForCallback(options.port, state);
  try {
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: listener.redirectUri,
      scope: provider.scope,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    if (options.open === undefined) {
      options.say(`To log in, visit:\n${url.href}`);
    } else {
      options.say(`Opening the login page in your browser; if it does not open, visit:\n${url.href}`);
      options.open(url.href);
    }
    // The listener takes only the callback with this state; openid-client checks it again.
    const callback = await listener.callback;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
      listener.finish({ ok: true });
      return tokens;
    } catch (err: unknown) {
      const reason = failureReason(err, listener.redirectUri);
      listener.finish({ ok: false, reason });
      throw new CliError(`SSO login failed: ${reason}`, { cause: err });
    }
  } finally {
    listener.close();
  }
}

/** The provider's reason, and for a refused code what can cause it (the redirect URI is compared). */
function failureReason(err: unknown, redirectUri: string): string {
  const reason = providerReason(err);
  if (err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') {
    return `${reason}: the provider refused the authorization code for ${redirectUri} (used already, expired, or issued for another redirect URI)`;
  }
  return reason;
}

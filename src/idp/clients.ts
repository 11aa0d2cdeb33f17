/**
 * svc's own two clients of the provider (DESIGN §7); other applications' are idp.config's
 * staticClients (./static-clients.ts):
 * - `svc`, confidential, for svc's own SSO login at `<url>/auth/callback`. Its secret is derived
 *   from `server.secretkey` by HMAC with a fixed label: every replica computes the same one and
 *   nothing new is stored; changing server.secretkey changes it. Its back-channel logout URI is
 *   svc's own endpoint.
 * - `svc-cli`, public (PKCE), a native application: loopback redirects on any port (RFC 8252
 *   §7.3, which oidc-provider applies to native clients), and the device flow (RFC 8628).
 */
import { createHmac } from 'node:crypto';
import type { ClientMetadata } from 'oidc-provider';

export const WEB_CLIENT_ID = 'svc';
export const CLI_CLIENT_ID = 'svc-cli';
export const CLIENT_IDS: readonly string[] = [WEB_CLIENT_ID, CLI_CLIENT_ID];
/** svc's back-channel logout endpoint (src/http/routes/backchannel-logout.ts), under its `url`. */
export const BACKCHANNEL_LOGOUT_PATH = '/auth/backchannel-logout';
const SECRET_LABEL = 'svc idp client secret: svc';
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export function webClientSecret(serverSecretKey: string): string {
  return createHmac('sha256', serverSecretKey).update(SECRET_LABEL).digest('base64url');
}

export function ownClients(url: string, serverSecretKey: string): ClientMetadata[] {
  return [
    {
      client_id: WEB_CLIENT_ID,
      client_secret: webClientSecret(serverSecretKey),
      redirect_uris: [`${url}/auth/callback`],
      post_logout_redirect_uris: [url, `${url}/login`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // golang/oauth2 and Dex's default; a client has one method in oidc-provider.
      token_endpoint_auth_method: 'client_secret_basic',
      // Its ID tokens then carry `sid` (what svc's SSO session records), and a logout at the
      // provider from another application ends svc's sessions of it too.
      backchannel_logout_uri: `${url}${BACKCHANNEL_LOGOUT_PATH}`,
      backchannel_logout_session_required: true,
    },
    {
      client_id: CLI_CLIENT_ID,
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/auth/callback', 'http://localhost/auth/callback'],
      grant_types: ['authorization_code', 'refresh_token', DEVICE_CODE_GRANT],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
  ];
}

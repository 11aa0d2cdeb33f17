/**
 * A device authorization request from a client not allowed the device grant is answered
 * `unauthorized_client` (RFC 6749 §5.2, which RFC 8628 §3.2 refers to), not oidc-provider's
 * `invalid_request` (issue 53): the request is well formed, the client may not use the grant.
 *
 * oidc-provider has no hook between its grant check and its answer; its error event comes after
 * the JSON body is set and before it is sent, so the body is corrected there, only when the
 * authenticated client indeed lacks the grant and the error is that check's.
 */
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { DEVICE_CODE_GRANT } from './clients.js';

const GRANT_REFUSED = `${DEVICE_CODE_GRANT} is not allowed for this client`;

export function answerUnauthorizedClient(provider: Provider): void {
  provider.on('device_authorization.error', function deviceGrantNotAllowed(ctx: KoaContextWithOIDC) {
    const client = ctx.oidc?.client;
    if (client === undefined || client.grantTypeAllowed(DEVICE_CODE_GRANT)) return;
    const body = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
    if (typeof body !== 'object' || body === null || body.error !== 'invalid_request' || body.error_description !== GRANT_REFUSED) return;
    ctx.body = { ...body, error: 'unauthorized_client' };
  });
}

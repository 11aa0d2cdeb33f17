/**
 * `svc-cli`'s ID tokens carry `sid`, as `svc`'s do: a command-line session svc records then names
 * the provider session and grant it came from, so ending it from svc can revoke the CLI's
 * refresh token (./session-end.ts). oidc-provider puts `sid` in a client's codes, refresh tokens
 * and ID tokens only when `client.includeSid()` says so, which it derives from a back-channel
 * logout URI. Rejected: giving `svc-cli` svc's own back-channel URI, which would make every
 * logout at the provider send svc a logout token for a client whose offline grant outlives that
 * logout; and asking for `sid` through the claims parameter, which a CLI from before would not do.
 *
 * A `svc-cli` refresh token without `sid` (issued before this) would mint ID tokens without one
 * for months, sessions that nothing could follow to the grant: it is refused (invalid_grant, the
 * CLI says "log in again"), and the new login carries `sid`.
 */
import type Provider from 'oidc-provider';
import { CLI_CLIENT_ID } from './clients.js';

/** What findAccount is given of the token it is asked for (oidc-provider's model instance). */
export interface AccountToken {
  readonly kind?: string;
  readonly clientId?: string | undefined;
  readonly sid?: string | undefined;
}

/** A `svc-cli` refresh token from before its client carried `sid`: refused at the refresh. */
export function isSidlessCliRefresh(token: AccountToken | undefined): boolean {
  return token?.kind === 'RefreshToken' && token.clientId === CLI_CLIENT_ID && (typeof token.sid !== 'string' || token.sid === '');
}

/** client.includeSid is oidc-provider's (lib/models/client.js) but not in its published types. */
interface SidDecision {
  readonly clientId: string;
  includeSid(): boolean;
}

export function includeSidForCli(provider: Provider): void {
  const prototype = provider.Client.prototype as unknown as SidDecision;
  const includeSid = prototype.includeSid;
  prototype.includeSid = function cliIncludesSid(this: SidDecision): boolean {
    return this.clientId === CLI_CLIENT_ID || Boolean(includeSid.call(this));
  };
}

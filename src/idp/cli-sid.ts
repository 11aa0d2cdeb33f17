/**
 * `svc-cli`'s ID tokens carry `sid`, as `svc`'s do: a command-line session svc records then names
 * the provider session and grant it came from, so ending it from svc can revoke the CLI's
 * refresh token (./session-end.ts). oidc-provider puts `sid` in a client's codes, refresh tokens
 * and ID tokens only when `client.includeSid()` says so, which it derives from a back-channel
 * logout URI. Rejected: giving `svc-cli` svc's own back-channel URI, which would make every
 * logout at the provider send svc a logout token for a client whose offline grant outlives that
 * logout; and asking for `sid` through the claims parameter, which a CLI from before would not do.
 */
import type Provider from 'oidc-provider';
import { CLI_CLIENT_ID } from './clients.js';

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

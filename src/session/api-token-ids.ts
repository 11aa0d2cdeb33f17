/**
 * Names a local API token's principal by its record's id (`apiTokenId`), the id its owner chose
 * and `svc account get` and `token-created` show: the token itself carries only a random jti,
 * which the audit trail recorded before and nobody could match to a token (issue 52).
 *
 * A wrapper around the local verifier, which has already checked that the record is listed
 * (session/validity.ts): the record is looked up once per principal object (the verifier hands
 * out one per token), so the proxy's fast path pays a WeakMap lookup. A principal whose record
 * is no longer listed when looked up (deleted in between) is refused, as the next check would.
 */
import { Unauthenticated } from '../errors.js';
import type { Principal } from '../principal.js';
import type { TokenVerifier } from './token-verifier.js';
import type { AccountSettings } from '../accounts/account.js';

export function withApiTokenIds(verifier: TokenVerifier, accounts: () => ReadonlyMap<string, AccountSettings>): TokenVerifier {
  const named = new WeakMap<Principal, Principal>();

  function withId(principal: Principal): Principal {
    if (principal.kind !== 'apiKey') return principal;
    const known = named.get(principal);
    if (known !== undefined) return known;
    // Records written before tokens had a jti were signed with their id as the jti.
    const record = accounts().get(principal.username)?.tokens.find((t) => (t.jti ?? t.id) === principal.tokenId);
    if (record === undefined) throw new Unauthenticated(`this API token of account '${principal.username}' was deleted`);
    const result: Principal = { ...principal, apiTokenId: record.id };
    named.set(principal, result);
    return result;
  }

  return {
    issuer: verifier.issuer,
    known(token) {
      const principal = verifier.known(token);
      return principal === undefined ? undefined : withId(principal);
    },
    async verify(token) {
      return withId(await verifier.verify(token));
    },
  };
}

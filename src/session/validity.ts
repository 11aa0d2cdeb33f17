/**
 * Whether a well-signed svc token is still honoured by its account (DESIGN §3), as a pipeline of
 * small named checks run in order; the first that fails names the reason. Synchronous: the
 * local verifier runs it on every use, on the proxy's fast path too. Revocation is not here but
 * in the authenticator (authenticate.ts), which applies it to every issuer's tokens alike.
 */
import { missingAccountReason, type AccountSettings, type ApiTokenRecord } from '../accounts/config.js';
import { Unauthenticated } from '../errors.js';
import type { TokenClaims, TokenSigner } from './tokens.js';

export interface ValidityDeps {
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly signer: Pick<TokenSigner, 'passwordBinding'>;
  /** When the account was last seen disabled (account-cutoffs.ts), in ms; undefined: never. */
  readonly disabledAt: (name: string) => number | undefined;
}

type Check = (claims: TokenClaims, account: AccountSettings, deps: ValidityDeps) => string | undefined;

function accountEnabled(claims: TokenClaims, account: AccountSettings): string | undefined {
  return account.enabled ? undefined : `account '${claims.username}' is disabled`;
}

function hasCapability(claims: TokenClaims, account: AccountSettings): string | undefined {
  return account.capabilities.includes(claims.kind) ? undefined : `account '${claims.username}' does not have the ${claims.kind} capability`;
}

/**
 * Whether a stored record is the one this token was signed for. The jti is random per token,
 * so a new token that reuses a deleted token's id does not bring the deleted one back. Records
 * written before jtis were random have none (the token's jti was its id): those must match on
 * id, iat and exp, which a later token with the same id cannot do unless it was made in the
 * same second with the same expiry.
 */
function signedFor(record: ApiTokenRecord, claims: TokenClaims): boolean {
  if (record.jti !== undefined) return record.jti === claims.jti;
  return record.id === claims.jti && record.iat === claims.iat && record.exp === claims.exp;
}

/**
 * Each settings version's token list, indexed by jti (by id for records without one), built the
 * first time a token of that version is checked: every API request checks its token, and a
 * scan of the list would cost in proportion to the tokens an account holds. Keyed by the list
 * itself, so a new settings version gets a new index and the old one goes with its list.
 */
const tokenIndexes = new WeakMap<readonly ApiTokenRecord[], ReadonlyMap<string, readonly ApiTokenRecord[]>>();

function tokenIndex(tokens: readonly ApiTokenRecord[]): ReadonlyMap<string, readonly ApiTokenRecord[]> {
  let index = tokenIndexes.get(tokens);
  if (index === undefined) {
    const built = new Map<string, ApiTokenRecord[]>();
    for (const record of tokens) {
      const key = record.jti ?? record.id;
      const same = built.get(key);
      if (same === undefined) built.set(key, [record]);
      else same.push(record);
    }
    index = built;
    tokenIndexes.set(tokens, index);
  }
  return index;
}

/** API tokens are revoked by deleting their record: the record must still be listed. */
function apiTokenListed(claims: TokenClaims, account: AccountSettings): string | undefined {
  if (claims.kind !== 'apiKey') return undefined;
  const candidates = tokenIndex(account.tokens).get(claims.jti) ?? [];
  // The message names no id: the jti is random, and the record that had the id is gone.
  return candidates.some((t) => signedFor(t, claims)) ? undefined : `this API token of account '${claims.username}' was deleted`;
}

const PASSWORD_CHANGED = (name: string) => `the password of account '${name}' changed after this token was issued; log in again`;

/**
 * A session must be newer than the last password change. `iat` has whole seconds; a password
 * change stores a whole-second mtime and only commits once that second has begun (see
 * password-change.ts), so `iat >= mtime` keeps the sessions made with the new password and
 * drops every older one. API tokens survive a password change (unlike Argo CD, where users lose them).
 */
function issuedAfterPasswordChange(claims: TokenClaims, account: AccountSettings): string | undefined {
  if (claims.kind !== 'login' || account.passwordMtime === undefined) return undefined;
  return claims.iat * 1000 >= account.passwordMtime.getTime() ? undefined : PASSWORD_CHANGED(claims.username);
}

/**
 * A session must have been checked against the password in force now. The mtime rule alone
 * misses a login that read the old hash before the change and signed after it (iat >= mtime):
 * its `pwh` names the old hash. Sessions from versions without `pwh` are left to the mtime rule.
 */
function checkedAgainstCurrentPassword(claims: TokenClaims, account: AccountSettings, deps: ValidityDeps): string | undefined {
  if (claims.kind !== 'login' || claims.pwh === undefined) return undefined;
  const hash = account.passwordHash;
  return hash !== undefined && deps.signer.passwordBinding(hash) === claims.pwh ? undefined : PASSWORD_CHANGED(claims.username);
}

/**
 * Re-enabling an account does not revive what was issued before it was disabled: a token must
 * be issued after the account was last seen disabled. `iat` has whole seconds, so a token of the
 * very second of the disable is refused too (the account could not log in then anyway).
 */
function issuedAfterLastDisabled(claims: TokenClaims, _account: AccountSettings, deps: ValidityDeps): string | undefined {
  const disabledAt = deps.disabledAt(claims.username);
  if (disabledAt === undefined || claims.iat * 1000 > disabledAt) return undefined;
  return `account '${claims.username}' was disabled after this token was issued; log in again`;
}

/**
 * A session must be issued at or after the account's `sessionsNotBefore` (a second factor
 * removed or reset, an operator's break-glass): whole seconds, as the password mtime. API tokens
 * are left alone: they were made on purpose and are deleted one by one.
 */
function issuedAfterSessionsCutoff(claims: TokenClaims, account: AccountSettings): string | undefined {
  if (claims.kind !== 'login' || account.sessionsNotBefore === undefined) return undefined;
  if (claims.iat * 1000 >= account.sessionsNotBefore.getTime()) return undefined;
  return `the sessions of account '${claims.username}' were ended after this token was issued (a second factor changed, or an operator ended them); log in again`;
}

const ACCOUNT_CHECKS: readonly Check[] = [accountEnabled, hasCapability, apiTokenListed, issuedAfterPasswordChange, checkedAgainstCurrentPassword, issuedAfterLastDisabled, issuedAfterSessionsCutoff];

/** The token's account when every account rule holds; throws Unauthenticated with the first that fails. Synchronous. */
export function checkAccount(claims: TokenClaims, deps: ValidityDeps): AccountSettings {
  const account = deps.accounts().get(claims.username);
  if (account === undefined) throw new Unauthenticated(missingAccountReason(claims.username));
  for (const check of ACCOUNT_CHECKS) {
    const reason = check(claims, account, deps);
    if (reason !== undefined) throw new Unauthenticated(reason);
  }
  return account;
}

export const REVOKED = 'token is revoked; log in again';

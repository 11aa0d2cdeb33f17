/**
 * Logging out with a token (DELETE /api/v1/session, POST /auth/logout), by its kind. Rule: no
 * token svc accepts has a revocation that lives only in state that can be lost (issue 52).
 *
 * - Session, SSO and workload tokens: revoked by jti in the state backend (registry.ts). When
 *   that record is lost, the revocations epoch refuses every such token of before the loss.
 * - API tokens (`apiKey`, and SSO users' personal ones, `ssoApiKey`): the epoch must not refuse
 *   them (they outlive a loss of state by design), so a revocation in state alone would come back
 *   with a loss. Logging out with one deletes its record from svc-secret, as
 *   `svc account delete-token` does (the same audit event, `token-deleted`), then revokes its jti
 *   in state too, so every replica refuses it before its store reload. When the store write fails,
 *   the logout fails and says why: never a state-only revocation reported as success. Without a
 *   way to delete that kind of token here, the logout is refused and names the command that does.
 *
 * Rejected: refusing API tokens at a loss of state (a CI job's token must not die with Redis).
 */
import type { Logger } from 'pino';
import type { AuditSource } from '../audit/trail.js';
import { InvalidRequest, NotFound, SvcError, Unavailable } from '../errors.js';
import { personOf } from '../person.js';
import type { Principal } from '../principal.js';
import type { SessionRegistry } from './registry.js';
import type { Revocation } from './revocation.js';

/** The kinds whose record is in the config store. */
export type StoredTokenKind = 'apiKey' | 'ssoApiKey';

/** Deletes the record of the caller's own token (by its `apiTokenId`) and records `token-deleted`. */
export type DeleteStoredToken = (principal: Principal & { readonly apiTokenId: string }, source: AuditSource) => Promise<void>;

export interface LogoutDeps {
  readonly sessions: Pick<SessionRegistry, 'logout'>;
  readonly revocation: Pick<Revocation, 'revoke'>;
  readonly log: Pick<Logger, 'warn'>;
}

export interface Logout {
  /** Ends the token the caller sent; rejects with a SvcError saying why when that is not durable. */
  logout(principal: Principal, source: AuditSource): Promise<void>;
  /** Set by the feature that owns the kind's records (accounts, SSO personal tokens). */
  deleteStoredWith(kind: StoredTokenKind, remove: DeleteStoredToken): void;
}

/** The command that deletes the token, for a person to run. */
export function deleteCommandFor(principal: Pick<Principal, 'kind' | 'username' | 'apiTokenId'>): string {
  const id = principal.apiTokenId ?? '<id>';
  return principal.kind === 'apiKey' ? `svc account delete-token --account ${principal.username} ${id}` : `svc account delete-token ${id} (logged in with svc login --sso)`;
}

export function isStoredKind(kind: Principal['kind']): kind is StoredTokenKind {
  return kind === 'apiKey' || kind === 'ssoApiKey';
}

export function createLogout(deps: LogoutDeps): Logout {
  const removers = new Map<StoredTokenKind, DeleteStoredToken>();

  async function deleteStored(principal: Principal, kind: StoredTokenKind, source: AuditSource): Promise<void> {
    const remove = removers.get(kind);
    const id = principal.apiTokenId;
    if (remove === undefined || id === undefined) {
      throw new InvalidRequest(`an API token is not ended by logging out: its revocation would be kept only in the state backend, which can lose it; delete the token with '${deleteCommandFor(principal)}'`);
    }
    try {
      await remove({ ...principal, apiTokenId: id }, source);
    } catch (err: unknown) {
      // Deleted meanwhile (another replica, the command): it is gone, which is what was asked.
      if (!(err instanceof NotFound)) {
        deps.log.warn({ err, tokenId: id }, 'logout: the API token\'s record could not be deleted from the config store; the token still works');
        if (err instanceof SvcError) throw err;
        throw new Unavailable(`logout failed: this API token's record could not be deleted from the config store, so the token still works; try again, or delete it with '${deleteCommandFor(principal)}'`, { cause: err });
      }
    }
    // Durable already: the state write only makes every replica refuse it before its store reload.
    await deps.revocation.revoke(principal.tokenId, principal.expiresAt).catch((err: unknown) => {
      deps.log.warn({ err, tokenId: id }, 'logout: the API token\'s record is deleted; its revocation could not be shared, so other replicas refuse it once they reload the config store');
    });
  }

  return {
    async logout(principal, source) {
      if (isStoredKind(principal.kind)) return deleteStored(principal, principal.kind, source);
      await deps.sessions.logout(personOf(principal), principal.tokenId, principal.expiresAt, { via: 'logout', source });
    },
    deleteStoredWith(kind, remove) {
      removers.set(kind, remove);
    },
  };
}

/**
 * The identity behind each `sub` the provider issued, in the state backend so that any replica
 * can answer findAccount (token, userinfo, refresh). Written at login, and at a refresh that
 * changed it (an unchanged one only has its life extended: no sealing, no rewrite).
 * It lives as long as the longest-lived token that may name it: the session's lifetime, or the
 * refresh token's when the login asked for offline access (a refresh must find it). A save never
 * shortens what an earlier login of the same user still needs.
 *
 * The record is sealed (src/lib/sealed.ts, its own key from `server.secretkey`): it holds what a
 * connector keeps to refresh a login (an upstream refresh or access token) and the user's email
 * and groups, which whoever reads the state backend (a Redis shared with other tools) must not
 * learn or alter. The seal is bound to the record's `sub` (its additional data), so a record
 * copied under another user's key does not open there. A record that does not open is no
 * account: the token asking gets nothing.
 */
import type { Identity } from '../../../connectors/connector.js';
import type { Sealer } from '../../lib/sealed.js';
import type { StateBackend } from '../../state/state.js';

export interface StoredAccount {
  readonly connectorId: string;
  readonly identity: Identity;
}

export interface AccountStore {
  save(sub: string, account: StoredAccount, ttlS: number): Promise<void>;
  /**
   * After a refresh: writes `next` unless it equals `previous` (what find() gave); either way the
   * record lives at least ttlS more (written again if it has gone meanwhile).
   */
  update(sub: string, previous: StoredAccount, next: StoredAccount, ttlS: number): Promise<void>;
  find(sub: string): Promise<StoredAccount | undefined>;
}

const accountKey = (sub: string): string => `idp:account:${sub}`;

/**
 * How much longer than asked a record's life is extended: a user who refreshes again and again
 * has it extended once in this time rather than at every grant (one backend command fewer).
 */
export const EXTENSION_SLACK_MS = 60 * 60 * 1000;

/**
 * How many opened account records the sealer remembers (src/lib/sealed.ts `rememberOpened`):
 * every refresh grant reads its user's record, which does not change between grants.
 */
export const REMEMBERED_ACCOUNTS = 1024;

/** `sealer`: sealed with the purpose 'idp-account' (remembering REMEMBERED_ACCOUNTS opened records). */
export function createAccountStore(state: StateBackend, sealer: Sealer): AccountStore {
  async function save(sub: string, account: StoredAccount, ttlS: number): Promise<void> {
    const left = (await state.ttlMs(accountKey(sub))) ?? 0;
    await state.set(accountKey(sub), sealer.seal(JSON.stringify(account), sub), { ttlMs: Math.max(ttlS * 1000, left) });
  }

  /** Makes the record live at least ttlS more; false when there is none to extend. */
  async function keep(sub: string, ttlS: number): Promise<boolean> {
    const left = await state.ttlMs(accountKey(sub));
    if (left === null) return false;
    return left >= ttlS * 1000 || state.expire(accountKey(sub), ttlS * 1000 + EXTENSION_SLACK_MS);
  }

  return {
    save,
    async update(sub, previous, next, ttlS) {
      // Both come from the same connector code, so equal identities serialise alike.
      if (JSON.stringify(previous) === JSON.stringify(next) && (await keep(sub, ttlS))) return;
      await save(sub, next, ttlS);
    },
    async find(sub) {
      const sealed = await state.get(accountKey(sub));
      const text = sealed === null ? undefined : sealer.open(sealed, sub);
      if (text === undefined) return undefined;
      const value = JSON.parse(text) as StoredAccount;
      return typeof value.connectorId === 'string' && typeof value.identity?.userId === 'string' ? value : undefined;
    },
  };
}

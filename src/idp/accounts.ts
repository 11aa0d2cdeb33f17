/**
 * The identity behind each `sub` the provider issued, in the state backend so that any replica
 * can answer findAccount (token, userinfo, refresh). Written at login and at each refresh.
 * It lives as long as the longest-lived token that may name it: the session's lifetime, or the
 * refresh token's when the login asked for offline access (a refresh must find it). A save never
 * shortens what an earlier login of the same user still needs.
 *
 * The record is sealed (src/lib/sealed.ts, its own key from `server.secretkey`): it holds what a
 * connector keeps to refresh a login (an upstream refresh or access token) and the user's email
 * and groups, which whoever reads the state backend (a Redis shared with other tools) must not
 * learn or alter. A record that does not open is no account: the token asking gets nothing.
 */
import type { Identity } from '../../connectors/connector.js';
import type { Sealer } from '../lib/sealed.js';
import type { StateBackend } from '../state/state.js';

export interface StoredAccount {
  readonly connectorId: string;
  readonly identity: Identity;
}

export interface AccountStore {
  save(sub: string, account: StoredAccount, ttlS: number): Promise<void>;
  find(sub: string): Promise<StoredAccount | undefined>;
}

const accountKey = (sub: string): string => `idp:account:${sub}`;

/** `sealer`: sealed with the purpose 'idp-account'. */
export function createAccountStore(state: StateBackend, sealer: Sealer): AccountStore {
  return {
    async save(sub, account, ttlS) {
      const left = (await state.ttlMs(accountKey(sub))) ?? 0;
      await state.set(accountKey(sub), sealer.seal(JSON.stringify(account)), { ttlMs: Math.max(ttlS * 1000, left) });
    },
    async find(sub) {
      const sealed = await state.get(accountKey(sub));
      const text = sealed === null ? undefined : sealer.open(sealed);
      if (text === undefined) return undefined;
      const value = JSON.parse(text) as StoredAccount;
      return typeof value.connectorId === 'string' && typeof value.identity?.userId === 'string' ? value : undefined;
    },
  };
}

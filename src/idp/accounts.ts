/**
 * The identity behind each `sub` the provider issued, in the state backend so that any replica
 * can answer findAccount (token, userinfo, refresh). Written at login and at each refresh.
 * It lives as long as the longest-lived token that may name it: the session's lifetime, or the
 * refresh token's when the login asked for offline access (a refresh must find it). A save never
 * shortens what an earlier login of the same user still needs.
 */
import type { Identity } from '../../connectors/connector.js';
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

export function createAccountStore(state: StateBackend): AccountStore {
  return {
    async save(sub, account, ttlS) {
      const left = (await state.ttlMs(accountKey(sub))) ?? 0;
      await state.set(accountKey(sub), JSON.stringify(account), { ttlMs: Math.max(ttlS * 1000, left) });
    },
    async find(sub) {
      const text = await state.get(accountKey(sub));
      if (text === null) return undefined;
      const value = JSON.parse(text) as StoredAccount;
      return typeof value.connectorId === 'string' && typeof value.identity?.userId === 'string' ? value : undefined;
    },
  };
}

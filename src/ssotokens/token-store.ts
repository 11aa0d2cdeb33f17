/**
 * Writes of SSO users' token records (records.ts) to svc-secret. Each is a serialised
 * read-modify-write of one key through the config store, as local accounts' tokens are
 * (accounts/api-tokens.ts): concurrent writes never lose a token, and every replica sees the
 * result through the store's watch. A record the settings could not read is refused, not
 * rewritten: dropping what it held would lose tokens silently.
 */
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import { ProblemSink } from '../config/problems.js';
import type { ConfigStore } from '../config/store.js';
import { MAX_API_TOKENS_ENV } from '../accounts/api-tokens.js';
import { Conflict, NotFound, Unavailable } from '../errors.js';
import { parseUser, recordKeyOf, serializeUser, type IndexedUser, type SsoTokenRecord, type SsoTokenUser } from './records.js';


export interface SsoTokenStore {
  /** Adds one token; the user's record is made with `user` when it has none. Conflict past `maxTokens`. */
  add(user: Omit<SsoTokenUser, 'tokens'>, token: SsoTokenRecord, maxTokens: number): Promise<void>;
  /** Removes one token of the user; NotFound when it has none of that id. */
  remove(sub: string, id: string): Promise<SsoTokenRecord>;
  /** Removes every token of the user (its identity was refused upstream); how many there were. */
  dropUser(sub: string): Promise<number>;
}

export function createSsoTokenStore(store: ConfigStore): SsoTokenStore {
  function stored(current: Readonly<Record<string, string>>, key: string): IndexedUser | undefined {
    const text = current[key];
    if (text === undefined) return undefined;
    const sink = new ProblemSink();
    const user = parseUser(key, text, sink.scoped(SETTINGS_SECRET));
    if (user === undefined) throw new Unavailable(`the personal API token record ${key} in ${SETTINGS_SECRET} cannot be read (${sink.problems.map((p) => p.message).join('; ')}); fix or delete it first`);
    return user;
  }

  return {
    async add(user, token, maxTokens) {
      const key = recordKeyOf(user.sub);
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
        const existing = stored(current, key);
        const tokens = existing?.tokens ?? [];
        if (tokens.length >= maxTokens) {
          throw new Conflict(`'${user.name}' already has ${tokens.length} personal API tokens, the most allowed (${MAX_API_TOKENS_ENV}=${maxTokens}); delete one first (expired ones count until deleted)`);
        }
        const base = existing ?? { ...user, tokens: [] };
        return { set: { [key]: serializeUser({ ...base, identity: user.identity, connectorId: user.connectorId, tokens: [...tokens, token] }) } };
      }));
    },

    async remove(sub, id) {
      const key = recordKeyOf(sub);
      let removed: SsoTokenRecord | undefined;
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
        const existing = stored(current, key);
        removed = existing?.tokens.find((t) => t.id === id);
        if (existing === undefined || removed === undefined) throw new NotFound(`you have no personal API token with id '${id.slice(0, 80)}'`);
        const rest = existing.tokens.filter((t) => t.id !== id);
        return rest.length > 0 ? { set: { [key]: serializeUser({ ...existing, tokens: rest }) } } : { delete: [key] };
      }));
      return removed as SsoTokenRecord;
    },

    async dropUser(sub) {
      const key = recordKeyOf(sub);
      let count = 0;
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
        if (current[key] === undefined) return {};
        try {
          count = stored(current, key)?.tokens.length ?? 0;
        } catch {
          count = 0;   // unreadable: its tokens already fail; deleting it is still right
        }
        return { delete: [key] };
      }));
      return count;
    },
  };
}

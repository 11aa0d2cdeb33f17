/**
 * Where SSO users' personal API tokens are kept: svc-secret, one key per user,
 * `ssotokens.<first 32 hex of SHA-256(sub)>`, holding JSON
 * `{sub, name, connectorId, identity, tokens: [{id, name, jti, iat, exp, groups}]}`.
 *
 * svc-secret rather than the state backend: it survives a restart with either state backend,
 * every replica reads it through the config store's watch, and it already holds local accounts'
 * token records. The key is a hash of the stable id because an SSO `sub` may hold any
 * character and must never become a local account's key (`accounts.*`). `identity` is what the
 * connector needs to recheck the user (an LDAP DN, an upstream refresh token), sealed with a
 * key of its own derived from `server.secretkey` and bound to the record's key. `ssotokens.` is
 * an owned prefix (config/own-secrets.ts): configuration's `$` references cannot read it.
 */
import { createHash } from 'node:crypto';
import type { SettingsSection } from '../config/settings.js';
import type { ScopedSink } from '../config/problems.js';

export const RECORD_PREFIX = 'ssotokens.';

export interface SsoTokenRecord {
  readonly id: string;
  readonly name: string;
  readonly jti: string;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly exp: number;
  /** The user's groups when the token was made: the most it can ever use. */
  readonly groups: readonly string[];
}

export interface SsoTokenUser {
  readonly sub: string;
  /** The readable name when the first token was made, for people and the log. */
  readonly name: string;
  readonly connectorId: string;
  /** The connector's Identity, sealed (purpose sso-token-identity, context: the record key). */
  readonly identity: string;
  readonly tokens: readonly SsoTokenRecord[];
}

/** A user's records with their tokens indexed by jti, as the verifier reads them on every use. */
export interface IndexedUser extends SsoTokenUser {
  readonly byJti: ReadonlyMap<string, SsoTokenRecord>;
}

export function recordKeyOf(sub: string): string {
  return `${RECORD_PREFIX}${createHash('sha256').update(sub, 'utf8').digest('hex').slice(0, 32)}`;
}

export function serializeUser(user: SsoTokenUser): string {
  const { sub, name, connectorId, identity, tokens } = user;
  return JSON.stringify({ sub, name, connectorId, identity, tokens });
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function parseToken(raw: unknown): SsoTokenRecord | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const t = raw as Record<string, unknown>;
  if (!isString(t['id']) || !isString(t['name']) || !isString(t['jti']) || !isWhole(t['iat']) || !isWhole(t['exp'])) return undefined;
  const groups = t['groups'];
  if (!Array.isArray(groups) || !groups.every(isString)) return undefined;
  return { id: t['id'], name: t['name'], jti: t['jti'], iat: t['iat'], exp: t['exp'], groups };
}

/** One key's user, or undefined after reporting why (the user's tokens then do not work). */
export function parseUser(key: string, text: string, sink: ScopedSink): IndexedUser | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    sink.add([key], 'is not JSON; the personal API tokens it held do not work until it is fixed or deleted');
    return undefined;
  }
  const u = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const tokens = Array.isArray(u['tokens']) ? u['tokens'].map(parseToken) : [undefined];
  if (!isString(u['sub']) || !isString(u['name']) || !isString(u['connectorId']) || !isString(u['identity']) || tokens.some((t) => t === undefined)) {
    sink.add([key], 'is not a personal API token record {sub, name, connectorId, identity, tokens: [{id, name, jti, iat, exp, groups}]}; its tokens do not work until it is fixed or deleted');
    return undefined;
  }
  // A record copied under another user's key would hand that user's tokens to this one.
  if (recordKeyOf(u['sub']) !== key) {
    sink.add([key], "holds the record of another user (the key is not the hash of its 'sub'); its tokens do not work");
    return undefined;
  }
  const list = tokens as SsoTokenRecord[];
  return { sub: u['sub'], name: u['name'], connectorId: u['connectorId'], identity: u['identity'], tokens: list, byJti: new Map(list.map((t) => [t.jti, t])) };
}

/** svc-secret's `ssotokens.*` keys, by key. A bad record is reported and left out: its tokens fail. */
export const ssoTokenRecordsSection: SettingsSection<ReadonlyMap<string, IndexedUser>> = {
  parse({ secret, secretSink }) {
    const users = new Map<string, IndexedUser>();
    for (const [key, text] of Object.entries(secret)) {
      if (!key.startsWith(RECORD_PREFIX)) continue;
      const user = parseUser(key, text, secretSink);
      if (user !== undefined) users.set(key, user);
    }
    return users;
  },
};

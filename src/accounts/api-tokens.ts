/**
 * API tokens: generate (sign a JWT `sub=<name>:apiKey` with a random jti, then list
 * `{id, jti, iat, exp?}` under svc-secret `accounts.<name>.tokens`) and delete by id (drop the
 * record: validity.ts refuses a token whose record is no longer listed). The jti is random
 * rather than the id so that a new token reusing a deleted token's id does not revive the
 * deleted one, and so that revoking one account's token never touches another account's token
 * of the same id (revocation is keyed by jti). The token itself is never stored. Every write is a serialised
 * read-modify-write of the Secret that changes only that one key, so concurrent calls never
 * lose a token and the rest of the file stays as the operator wrote it. A write the settings
 * would ignore (the account's stored values do not parse) is refused: settings-guard.ts.
 *
 * An account holds at most `maxTokens` (SVC_MAX_API_TOKENS_PER_ACCOUNT, default 100) records,
 * expired ones included: every token's record sits in the Secret and in memory, and a caller
 * allowed to make tokens must not be able to grow both without end.
 */
import { randomUUID } from 'node:crypto';
import { parseTokens, type ApiTokenRecord } from './config.js';
import { SETTINGS_SECRET } from '../config/manifests.js';
import { ownKeysOnly } from '../config/own-secrets.js';
import { ProblemSink } from '../config/problems.js';
import type { ConfigStore } from '../config/store.js';
import { Conflict, InvalidRequest, NotFound, PermissionDenied } from '../errors.js';
import type { Accounts } from './account-queries.js';
import { patchThatTakesEffect, unreadableAccount } from './settings-guard.js';

/** Starts with a letter or digit: the id is a path segment of DELETE …/token/{id}, where `.` and `..` are dot segments. */
/** The claims of an API token; the session module signs them (accounts knows nothing of JWTs). */
export interface ApiTokenClaims {
  readonly username: string;
  readonly kind: 'apiKey';
  readonly jti: string;
  readonly iat: number;
  readonly exp: number | undefined;
}

export interface ApiTokenSigner {
  sign(claims: ApiTokenClaims): Promise<string>;
}

const TOKEN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const DEFAULT_MAX_API_TOKENS = 100;
export const MAX_API_TOKENS_ENV = 'SVC_MAX_API_TOKENS_PER_ACCOUNT';

/** Past this, `exp` stops being a plain date (and near 2^53 s, a safe integer); 0 means "never". */
const MAX_EXPIRES_IN_SECONDS = 100 * 365.25 * 24 * 3600;

export interface GenerateRequest {
  readonly id?: string | undefined;
  /** Seconds; 0 or absent: the token never expires. */
  readonly expiresInSeconds?: number | undefined;
}

export interface ApiTokens {
  generate(name: string, request: GenerateRequest): Promise<{ readonly token: string; readonly id: string }>;
  remove(name: string, id: string): Promise<void>;
}

export interface ApiTokensDeps {
  readonly store: ConfigStore;
  readonly accounts: Pick<Accounts, 'find'>;
  readonly signer: ApiTokenSigner;
  readonly now: () => number;
  /** The most token records one account may hold (DEFAULT_MAX_API_TOKENS). */
  readonly maxTokens?: number;
}

export function tokensKey(name: string): string {
  return `accounts.${name}.tokens`;
}

export function createApiTokens({ store, accounts, signer, now, maxTokens = DEFAULT_MAX_API_TOKENS }: ApiTokensDeps): ApiTokens {
  return {
    async generate(name, request) {
      const account = accounts.find(name);
      if (!account.capabilities.includes('apiKey')) throw new PermissionDenied(`account '${name}' does not have the apiKey capability`);
      const id = request.id ?? randomUUID();
      if (!TOKEN_ID.test(id)) throw new InvalidRequest(`token id '${id.slice(0, 80)}' must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
      const seconds = request.expiresInSeconds ?? 0;
      if (!Number.isSafeInteger(seconds) || seconds < 0) throw new InvalidRequest('expiresIn must be a whole number of seconds >= 0 (0: never)');
      if (seconds > MAX_EXPIRES_IN_SECONDS) throw new InvalidRequest(`expiresIn must be at most 100 years (${MAX_EXPIRES_IN_SECONDS} s); 0 makes a token that never expires`);
      const iat = Math.floor(now() / 1000);
      const jti = randomUUID();
      const record: ApiTokenRecord = seconds > 0 ? { id, jti, iat, exp: iat + seconds } : { id, jti, iat };
      const token = await signer.sign({ username: name, kind: 'apiKey', jti, iat, exp: record.exp });
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
        const list = storedTokens(current, name);
        if (list.some((t) => t.id === id)) throw new Conflict(`account '${name}' already has a token with id '${id}'`);
        if (list.length >= maxTokens) {
          throw new Conflict(`account '${name}' already has ${list.length} API tokens, the most allowed (${MAX_API_TOKENS_ENV}=${maxTokens}); delete one first (expired ones count until deleted)`);
        }
        return patchThatTakesEffect(store, name, current, { set: { [tokensKey(name)]: JSON.stringify([...list, record]) } });
      }));
      return { token, id };
    },

    async remove(name, id) {
      accounts.find(name);
      await store.updateSecret(SETTINGS_SECRET, ownKeysOnly((current) => {
        const list = storedTokens(current, name);
        if (!list.some((t) => t.id === id)) throw new NotFound(`token with id '${id}' does not exist for account '${name}'`);
        const rest = list.filter((t) => t.id !== id);
        const patch = rest.length > 0 ? { set: { [tokensKey(name)]: JSON.stringify(rest) } } : { delete: [tokensKey(name)] };
        return patchThatTakesEffect(store, name, current, patch);
      }));
    },
  };
}

/**
 * The list as stored right now, read by the settings' own parser. A list it refuses (not JSON,
 * or one record it cannot read) is refused here too rather than rewritten: dropping the records
 * it cannot read would lose tokens, and keeping them would leave a list the settings ignore.
 */
function storedTokens(current: Readonly<Record<string, string>>, name: string): ApiTokenRecord[] {
  const sink = new ProblemSink();
  const list = parseTokens(current[tokensKey(name)], sink.scoped(SETTINGS_SECRET), tokensKey(name));
  if (list === undefined) throw unreadableAccount(name, sink.problems);
  return list;
}

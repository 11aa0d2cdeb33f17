/**
 * Which provider session, and which grant of the command line, a `sid` of svc's own clients
 * belongs to. svc's SSO sessions record the `sid` of the ID token they logged in with
 * (src/oidc/callback.ts for `svc`, the first use of a CLI's token for `svc-cli`); to end what is
 * behind one (../session-end.ts) that `sid` must lead back to it:
 * - every save of a Session that holds an authorization of `svc` or `svc-cli` writes
 *   `idp:sid-session:<sha256 of the sid>` -> the session's `uid`, with the session's TTL,
 *   before the session itself: oidc-provider finds a session only by its cookie id or `uid`;
 * - every save of a `svc-cli` RefreshToken writes `idp:sid-grant:<sha256 of the sid>` -> its
 *   grant id, with the refresh token's TTL: the CLI's offline grant outlives the session (24 h
 *   against months), and a logout at the provider keeps it, so the session cannot lead to it.
 * Neither value grants anything by itself (the session cookie holds the session's id, never its
 * uid; a grant id is no token); the `sid` is digested so that it cannot shape the key.
 *
 * A stale entry (the session destroyed, the grant revoked, another session of the same uid) is
 * harmless: the look-up ends at findByUid or Grant.find, and the caller checks the account.
 */
import { createHash } from 'node:crypto';
import type { AdapterConstructor, AdapterPayload } from 'oidc-provider';
import { CLI_CLIENT_ID, CLIENT_IDS } from '../clients.js';
import type { StateBackend } from '../../state/state.js';
import { ttlMsFor } from './adapter-payload.js';

const digest = (sid: string): string => createHash('sha256').update(sid).digest('base64url');
const sidSessionKey = (sid: string): string => `idp:sid-session:${digest(sid)}`;
const sidGrantKey = (sid: string): string => `idp:sid-grant:${digest(sid)}`;

/** The `uid` of the provider session whose `svc` or `svc-cli` client holds `sid`; null when none is known. */
export function sessionUidOfSid(state: Pick<StateBackend, 'get'>, sid: string): Promise<string | null> {
  return state.get(sidSessionKey(sid));
}

/** The grant of the `svc-cli` refresh tokens issued with `sid`; null when none is known. */
export function cliGrantOfSid(state: Pick<StateBackend, 'get'>, sid: string): Promise<string | null> {
  return state.get(sidGrantKey(sid));
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The index entries a save of `payload` in `model` writes first: key -> value. */
function entriesOf(model: string, payload: AdapterPayload): [string, string][] {
  if (model === 'Session' && nonEmpty(payload.uid)) {
    const uid = payload.uid;
    return CLIENT_IDS.map((clientId) => payload.authorizations?.[clientId]?.sid)
      .filter(nonEmpty)
      .map((sid) => [sidSessionKey(sid), uid]);
  }
  if (model === 'RefreshToken' && payload.clientId === CLI_CLIENT_ID && nonEmpty(payload.sid) && nonEmpty(payload.grantId)) {
    return [[sidGrantKey(payload.sid), payload.grantId]];
  }
  return [];
}

/** `Base` with each Session and `svc-cli` RefreshToken save indexing its `sid` first. */
export function withSessionSidIndex(Base: AdapterConstructor, state: Pick<StateBackend, 'set'>): AdapterConstructor {
  return class SessionSidIndexAdapter extends Base {
    readonly #model: string;

    constructor(name: string) {
      super(name);
      this.#model = name;
    }

    override async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const entries = entriesOf(this.#model, payload);
      if (entries.length > 0) {
        const ttlMs = ttlMsFor(expiresIn);
        for (const [key, value] of entries) await state.set(key, value, ttlMs === undefined ? {} : { ttlMs });
      }
      return super.upsert(id, payload, expiresIn);
    }
  };
}

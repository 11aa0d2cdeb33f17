/**
 * Which provider session, and which grant of the command line, a `sid` of svc's own clients
 * belongs to. svc's SSO sessions record the `sid` of the ID token they logged in with
 * (src/oidc/callback.ts for `svc`, the first use of a CLI's token for `svc-cli`); to end what is
 * behind one (../session-end.ts) that `sid` must lead back to it:
 * - every save of a Session that holds an authorization of `svc` or `svc-cli` writes
 *   `idp:sid-session:<sha256 of the sid>` -> the session's `uid`, with the session's TTL,
 *   before the session itself: oidc-provider finds a session only by its cookie id or `uid`;
 * - every save of a `svc-cli` RefreshToken adds its grant id to hash
 *   `idp:sid-grants:<sha256 of the sid>`, which lives as long as its longest-lived refresh
 *   token: the CLI's offline grant outlives the session (24 h against months), a logout at the
 *   provider keeps it, and each CLI login through one provider session makes a grant of its own
 *   (the loopback consent is asked every time) under the same `sid`, so the session cannot lead
 *   to them all. At most MAX_CLI_GRANTS_PER_SID: past it a login is refused rather than left
 *   out of the index, where ending its session could not reach it.
 * Neither value grants anything by itself (the session cookie holds the session's id, never its
 * uid; a grant id is no token); the `sid` is digested so that it cannot shape the key.
 *
 * A stale entry (the session destroyed, the grant revoked, another session of the same uid) is
 * harmless: the look-up ends at findByUid or Grant.find, and the caller checks the account.
 */
import { createHash } from 'node:crypto';
import { errors, type AdapterConstructor, type AdapterPayload } from 'oidc-provider';
import { CLI_CLIENT_ID, CLIENT_IDS } from '../clients.js';
import type { StateBackend } from '../../state/state.js';
import { ttlMsFor } from './adapter-payload.js';

const digest = (sid: string): string => createHash('sha256').update(sid).digest('base64url');
const sidSessionKey = (sid: string): string => `idp:sid-session:${digest(sid)}`;
const sidGrantsKey = (sid: string): string => `idp:sid-grants:${digest(sid)}`;
/** CLI logins through one provider session (its life, 24 h): far above a person's, a bound on the hash. */
export const MAX_CLI_GRANTS_PER_SID = 100;

/** The `uid` of the provider session whose `svc` or `svc-cli` client holds `sid`; null when none is known. */
export function sessionUidOfSid(state: Pick<StateBackend, 'get'>, sid: string): Promise<string | null> {
  return state.get(sidSessionKey(sid));
}

/** The grants of the `svc-cli` refresh tokens issued with `sid`. */
export async function cliGrantsOfSid(state: Pick<StateBackend, 'hashGetAll'>, sid: string): Promise<string[]> {
  return Object.keys(await state.hashGetAll(sidGrantsKey(sid)));
}

/** Drops revoked grants from the index of `sid`. */
export function forgetCliGrants(state: Pick<StateBackend, 'hashDelete'>, sid: string, grantIds: readonly string[]): Promise<void> {
  return grantIds.length === 0 ? Promise.resolve() : state.hashDelete(sidGrantsKey(sid), ...grantIds);
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** `Base` with each Session and `svc-cli` RefreshToken save indexing its `sid` first. */
export function withSessionSidIndex(Base: AdapterConstructor, state: Pick<StateBackend, 'set' | 'hashSet'>): AdapterConstructor {
  async function index(model: string, payload: AdapterPayload, ttlMs: number | undefined): Promise<void> {
    if (model === 'Session' && nonEmpty(payload.uid)) {
      const sids = CLIENT_IDS.map((clientId) => payload.authorizations?.[clientId]?.sid).filter(nonEmpty);
      for (const sid of sids) await state.set(sidSessionKey(sid), payload.uid, ttlMs === undefined ? {} : { ttlMs });
    }
    if (model === 'RefreshToken' && payload.clientId === CLI_CLIENT_ID && nonEmpty(payload.sid) && nonEmpty(payload.grantId)) {
      const added = await state.hashSet(sidGrantsKey(payload.sid), payload.grantId, '', { maxFields: MAX_CLI_GRANTS_PER_SID, ...(ttlMs === undefined ? {} : { extendTtlMs: ttlMs }) });
      if (!added) throw new errors.InvalidGrant(`more than ${MAX_CLI_GRANTS_PER_SID} command-line logins through one provider session; log out at the provider and log in again`);
    }
  }

  return class SessionSidIndexAdapter extends Base {
    readonly #model: string;

    constructor(name: string) {
      super(name);
      this.#model = name;
    }

    override async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      await index(this.#model, payload, ttlMsFor(expiresIn));
      return super.upsert(id, payload, expiresIn);
    }
  };
}

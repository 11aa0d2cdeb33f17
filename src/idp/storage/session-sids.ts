/**
 * Which provider session svc's own `svc` client's `sid` belongs to. svc's SSO session records
 * the `sid` of the ID token it logged in with (src/oidc/callback.ts); to end the provider session
 * behind it (../session-end.ts) that `sid` must lead back to the session, which oidc-provider
 * finds only by its cookie id or its `uid`. So every save of a Session that holds an
 * authorization of the `svc` client writes `idp:sid-session:<sha256 of the sid>` -> the
 * session's `uid`, with the session's TTL, before the session itself: a `sid` svc can hold
 * always leads to its session. The `uid` grants nothing by itself (the session cookie holds
 * the session's id, never its uid); the `sid` is digested so that it cannot shape the key.
 *
 * A stale entry (the session destroyed, or another session of the same uid) is harmless: the
 * look-up ends at findByUid, and the caller checks the account.
 */
import { createHash } from 'node:crypto';
import type { AdapterConstructor, AdapterPayload } from 'oidc-provider';
import { WEB_CLIENT_ID } from '../clients.js';
import type { StateBackend } from '../../state/state.js';
import { ttlMsFor } from './adapter-payload.js';

const sidSessionKey = (sid: string): string => `idp:sid-session:${createHash('sha256').update(sid).digest('base64url')}`;

/** The `uid` of the provider session whose `svc` client holds `sid`; null when none is known. */
export function sessionUidOfSid(state: Pick<StateBackend, 'get'>, sid: string): Promise<string | null> {
  return state.get(sidSessionKey(sid));
}

/** `Base` with each Session save indexing the `svc` client's `sid` first. */
export function withSessionSidIndex(Base: AdapterConstructor, state: Pick<StateBackend, 'set'>): AdapterConstructor {
  return class SessionSidIndexAdapter extends Base {
    readonly #sessions: boolean;

    constructor(name: string) {
      super(name);
      this.#sessions = name === 'Session';
    }

    override async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      const sid = this.#sessions ? payload.authorizations?.[WEB_CLIENT_ID]?.sid : undefined;
      if (typeof sid === 'string' && sid !== '' && typeof payload.uid === 'string') {
        const ttlMs = ttlMsFor(expiresIn);
        await state.set(sidSessionKey(sid), payload.uid, ttlMs === undefined ? {} : { ttlMs });
      }
      return super.upsert(id, payload, expiresIn);
    }
  };
}

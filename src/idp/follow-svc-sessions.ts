/**
 * A svc session that came from a login at the bundled provider takes the provider session behind
 * it along when it ends (the sessions list, "sign out everywhere else", the per-account bound;
 * svc's logout continues at the provider's /session/end instead): otherwise that provider session would log the user in to svc again without a
 * password, and the applications signed in through it would never hear of the end. The link is
 * the `sid` of svc's own clients, recorded with the svc session at login or, for the CLI's token,
 * at its first use (./storage/session-sids.ts); a CLI's `sid` also revokes the CLI's grant, which
 * outlives the provider session. svc's other sessions of the same provider session or CLI login
 * end with it (`via: provider`).
 */
import type { Logger } from 'pino';
import type { EndContext, SessionRegistry } from '../session/registry.js';
import type { ProviderSessionEnd } from './session-end.js';

export interface FollowSvcSessionsDeps {
  readonly sessions: Pick<SessionRegistry, 'onEnded' | 'endBySid'>;
  readonly sessionEnd: Pick<ProviderSessionEnd, 'endBySvcSid'>;
  /** The bundled provider's issuer: only svc sessions it gave are followed. */
  readonly issuer: string;
  readonly log: Pick<Logger, 'info'>;
}

/** Follows session ends until the returned function is called. */
export function followSvcSessions(deps: FollowSvcSessionsDeps): () => void {
  return deps.sessions.onEnded(async (record, context) => {
    if (record.issuer !== deps.issuer || record.sid === undefined) return;
    // Ended because the provider session ended (its own logout token, or this very step): nothing is left there.
    // A logout goes on to the provider's /session/end, which asks the user and ends it there
    // (RP-initiated logout); ending it first would skip that page.
    if (context.via === 'backchannel' || context.via === 'provider' || context.via === 'logout') return;
    const { sids = [] } = await deps.sessionEnd.endBySvcSid(record.sid, record.account);
    const others: EndContext = { via: 'provider', ...(context.source !== undefined ? { source: context.source } : {}) };
    let ended = 0;
    // The same login's other ID tokens (the CLI refreshes its own) are sessions of the same sid.
    for (const sid of sids) ended += await deps.sessions.endBySid(deps.issuer, sid, others);
    if (ended > 0) deps.log.info({ account: record.account, ended }, 'sessions: svc sessions of the same provider session ended with it');
  });
}

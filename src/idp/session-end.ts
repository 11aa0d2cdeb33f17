/**
 * Ends a session of the bundled provider from svc's side: when the svc session it gave ends
 * (the sessions list, the per-account bound) or when its upstream login ends
 * (an upstream connector's back-channel logout). Done as oidc-provider's end_session does with
 * `logout=yes`, so the clients see the same thing: every client of the session with a
 * `backchannelLogoutUri` gets its logout token from `client.backchannelLogout(sub, sid)` (the
 * very call end_session makes, with that client's `sid`), the grants that do not persist logout
 * are revoked, and the session is destroyed. svc's own `svc` client is not sent a token (svc
 * ends its own sessions of that `sid` in process, main/sso.ts) and its grant is always revoked:
 * an ended svc session must leave nothing that mints svc tokens without a new login.
 *
 * A session is ended only when it is the expected account's: a stale index entry, or an upstream
 * `sid` that names another user's session, must never end someone else's.
 * Knows nothing of HTTP or of svc's own sessions.
 */
import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import type { AuditTrail } from '../audit/trail.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { StateBackend } from '../state/state.js';
import { WEB_CLIENT_ID } from './clients.js';
import { sessionUidOfSid } from './storage/session-sids.js';

/** Why the provider session ends, for the audit trail's `svc.via`. */
export type ProviderEndVia = 'svc-session' | 'upstream-backchannel';

export interface ProviderEndOutcome {
  readonly outcome: 'ended' | 'gone' | 'other-account';
  /** The `sid` the session's `svc` client had: svc's own sessions of it end with it. */
  readonly svcSid?: string;
}

export interface ProviderSessionEndDeps {
  /** The provider in force (rebuilt when its keys change; its storage stays). */
  readonly provider: () => Provider;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly state: Pick<StateBackend, 'get'>;
}

export interface ProviderSessionEnd {
  /** Ends the provider session of `uid` if it is `account`'s: what happened. */
  endByUid(uid: string, account: string, via: ProviderEndVia): Promise<ProviderEndOutcome>;
  /** Ends the provider session whose `svc` client holds `sid` (./storage/session-sids.ts), if it is `account`'s. */
  endBySvcSid(sid: string, account: string): Promise<ProviderEndOutcome>;
}

/** client.backchannelLogout is oidc-provider's (lib/models/client.js) but not in its published types. */
interface LogoutCapableClient {
  readonly clientId: string;
  readonly backchannelLogoutUri?: string | undefined;
  backchannelLogout(sub: string, sid: string | undefined): Promise<void>;
}

export function createProviderSessionEnd(deps: ProviderSessionEndDeps): ProviderSessionEnd {
  const end: ProviderSessionEnd = {
    async endBySvcSid(sid, account) {
      const uid = await sessionUidOfSid(deps.state, sid);
      return uid === null ? { outcome: 'gone' } : end.endByUid(uid, account, 'svc-session');
    },
    async endByUid(uid, account, via) {
      const provider = deps.provider();
      const session = await provider.Session.findByUid(uid);
      if (session?.accountId === undefined) return { outcome: 'gone' };
      if (session.accountId !== account) {
        deps.log.warn({ account, via }, 'identity provider: a session end named a provider session of another account; that session stays');
        deps.audit.record({ category: 'session', type: 'end', action: 'idp-session-ended', outcome: 'failure', reason: 'the provider session belongs to another account', user: { id: account }, svc: { via } });
        return { outcome: 'other-account' };
      }
      const authorizations = Object.entries(session.authorizations ?? {});
      const notified = await sendLogoutTokens(provider, account, authorizations, deps.log);
      await revokeGrants(provider, authorizations);
      await session.destroy();
      deps.log.info({ account, via, notified }, 'identity provider: session ended from svc');
      deps.audit.record({ category: 'session', type: 'end', action: 'idp-session-ended', outcome: 'success', user: { id: account }, svc: { via, notified } });
      const svcSid = session.sidFor(WEB_CLIENT_ID);
      return { outcome: 'ended', ...(svcSid !== undefined ? { svcSid } : {}) };
    },
  };
  return end;
}

type Authorizations = readonly (readonly [string, { readonly sid?: string | undefined; readonly grantId?: string | undefined; readonly persistsLogout?: boolean | undefined }])[];

/** end_session's sending, client by client; a delivery failure is logged (the provider's own events) and ends nothing else. */
async function sendLogoutTokens(provider: Provider, sub: string, authorizations: Authorizations, log: Pick<Logger, 'warn'>): Promise<string[]> {
  const notified: string[] = [];
  await Promise.all(authorizations.map(async ([clientId, { sid }]) => {
    if (clientId === WEB_CLIENT_ID) return;
    const client = await findClient(provider, clientId, log);
    if (client?.backchannelLogoutUri === undefined) return;
    try {
      await client.backchannelLogout(sub, sid);
      notified.push(clientId);
      provider.emit('backchannel.success', undefined, client, sub, sid);
    } catch (err: unknown) {
      provider.emit('backchannel.error', undefined, err, client, sub, sid);
    }
  }));
  return notified.sort();
}

/** A client removed from idp.config meanwhile is skipped, as end_session skips it. */
async function findClient(provider: Provider, clientId: string, log: Pick<Logger, 'warn'>): Promise<LogoutCapableClient | undefined> {
  try {
    return (await provider.Client.find(clientId)) as unknown as LogoutCapableClient | undefined;
  } catch (err: unknown) {
    log.warn({ client: clientId, reason: describeFailure(err) }, 'identity provider: a client of an ended session cannot be read; it gets no logout token');
    return undefined;
  }
}

/** As end_session's revoke(): every token of the grant, then the grant; svc's own always. */
async function revokeGrants(provider: Provider, authorizations: Authorizations): Promise<void> {
  await Promise.all(authorizations.map(async ([clientId, { grantId, persistsLogout }]) => {
    if (grantId === undefined || (persistsLogout === true && clientId !== WEB_CLIENT_ID)) return;
    await Promise.all([
      provider.AccessToken.revokeByGrantId(grantId),
      provider.RefreshToken.revokeByGrantId(grantId),
      provider.AuthorizationCode.revokeByGrantId(grantId),
      provider.DeviceCode.revokeByGrantId(grantId),
      provider.Grant.adapter.destroy(grantId),
    ]);
  }));
}

/**
 * Ends a session of the bundled provider from svc's side: when the svc session it gave ends
 * (the sessions list, the per-account bound) or when its upstream login ends
 * (an upstream connector's back-channel logout). Done as oidc-provider's end_session does with
 * `logout=yes`, so the clients see the same thing: every client of the session with a
 * `backchannelLogoutUri` gets its logout token from `client.backchannelLogout(sub, sid)` (the
 * very call end_session makes, with that client's `sid`), the grants that do not persist logout
 * are revoked, and the session is destroyed. svc's own clients (`svc`, `svc-cli`) are not sent a
 * token (svc ends its own sessions of their `sid`s in process, main/sso.ts) and their grants are
 * always revoked: an ended svc session must leave nothing that mints svc tokens without a new
 * login. The CLI's offline grant outlives the provider session (a logout there keeps it, and it
 * lives months against the session's day), so a `svc-cli` `sid` also leads to its grant directly.
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
import { CLI_CLIENT_ID, CLIENT_IDS } from './clients.js';
import { cliGrantsOfSid, forgetCliGrants, sessionUidOfSid } from './storage/session-sids.js';

/** Why the provider session ends, for the audit trail's `svc.via`. */
export type ProviderEndVia = 'svc-session' | 'upstream-backchannel';

export interface ProviderEndOutcome {
  /** `grant-revoked`: the provider session was gone, the CLI's grant of that `sid` is revoked. */
  readonly outcome: 'ended' | 'grant-revoked' | 'gone' | 'other-account';
  /** The `sid`s svc's own clients had in what ended: svc's own sessions of them end with it. */
  readonly sids?: readonly string[];
}

export interface ProviderSessionEndDeps {
  /** The provider in force (rebuilt when its keys change; its storage stays). */
  readonly provider: () => Provider;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly state: Pick<StateBackend, 'get' | 'hashGetAll' | 'hashDelete'>;
}

export interface ProviderSessionEnd {
  /** Ends the provider session of `uid` if it is `account`'s: what happened. */
  endByUid(uid: string, account: string, via: ProviderEndVia): Promise<ProviderEndOutcome>;
  /**
   * Ends the provider session whose `svc` or `svc-cli` client holds `sid`, and revokes the
   * `svc-cli` grants of that `sid` (./storage/session-sids.ts), each only if it is `account`'s.
   */
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
      const ended: ProviderEndOutcome = uid === null ? { outcome: 'gone' } : await end.endByUid(uid, account, 'svc-session');
      if (ended.outcome === 'other-account') return ended;
      // Also when the session ended: it names only the latest CLI login's grant, each login has its own.
      const revoked = await revokeCliGrantsOfSid(deps, sid, account);
      if (ended.outcome === 'ended' || revoked === 'gone') return ended;
      return revoked === 'revoked' ? { outcome: 'grant-revoked', sids: [sid] } : { outcome: 'other-account' };
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
      const sids = CLIENT_IDS.map((clientId) => session.sidFor(clientId)).filter((sid): sid is string => sid !== undefined);
      return { outcome: 'ended', sids };
    },
  };
  return end;
}

type Authorizations = readonly (readonly [string, { readonly sid?: string | undefined; readonly grantId?: string | undefined; readonly persistsLogout?: boolean | undefined }])[];

/** end_session's sending, client by client; a delivery failure is logged (the provider's own events) and ends nothing else. */
async function sendLogoutTokens(provider: Provider, sub: string, authorizations: Authorizations, log: Pick<Logger, 'warn'>): Promise<string[]> {
  const notified: string[] = [];
  await Promise.all(authorizations.map(async ([clientId, { sid }]) => {
    if (CLIENT_IDS.includes(clientId)) return;
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

/** As end_session's revoke(), the grants of svc's own clients always. */
async function revokeGrants(provider: Provider, authorizations: Authorizations): Promise<void> {
  await Promise.all(authorizations.map(async ([clientId, { grantId, persistsLogout }]) => {
    if (grantId === undefined || (persistsLogout === true && !CLIENT_IDS.includes(clientId))) return;
    await revokeGrant(provider, grantId);
  }));
}

/** Every token of the grant, then the grant (end_session's revoke()). */
async function revokeGrant(provider: Provider, grantId: string): Promise<void> {
  await Promise.all([
    provider.AccessToken.revokeByGrantId(grantId),
    provider.RefreshToken.revokeByGrantId(grantId),
    provider.AuthorizationCode.revokeByGrantId(grantId),
    provider.DeviceCode.revokeByGrantId(grantId),
    provider.Grant.adapter.destroy(grantId),
  ]);
}

/**
 * The `svc-cli` grants whose refresh tokens carry `sid`, revoked if they are `account`'s: `gone`
 * when none is left (never issued, revoked already, or the provider session's end took them).
 */
async function revokeCliGrantsOfSid(deps: ProviderSessionEndDeps, sid: string, account: string): Promise<'revoked' | 'gone' | 'other-account'> {
  const provider = deps.provider();
  const found = await Promise.all((await cliGrantsOfSid(deps.state, sid)).map(async (id) => ({ id, grant: await provider.Grant.find(id) })));
  const live = found.filter(({ grant }) => grant?.clientId === CLI_CLIENT_ID);
  if (live.some(({ grant }) => grant?.accountId !== account)) {
    deps.log.warn({ account }, 'identity provider: a session end named a command-line grant of another account; those grants stay');
    deps.audit.record({ category: 'session', type: 'end', action: 'idp-grant-revoked', outcome: 'failure', reason: 'the grant belongs to another account', user: { id: account }, svc: { client: CLI_CLIENT_ID } });
    return 'other-account';
  }
  await Promise.all(live.map(({ id }) => revokeGrant(provider, id)));
  await forgetCliGrants(deps.state, sid, found.map(({ id }) => id));
  if (live.length === 0) return 'gone';
  deps.log.info({ account, client: CLI_CLIENT_ID, grants: live.length }, "identity provider: the command line's grants of an ended svc session revoked");
  deps.audit.record({ category: 'session', type: 'end', action: 'idp-grant-revoked', outcome: 'success', user: { id: account }, svc: { client: CLI_CLIENT_ID, grants: live.length } });
  return 'revoked';
}

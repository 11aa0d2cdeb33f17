/**
 * The bundled identity provider: oidc-provider configured as DESIGN §7 and docs/idp.md say
 * (issuer `<url>/api/idp`, svc's two clients and idp.config's staticClients, Dex's scopes, claims and lifetimes, the
 * device flow), storing everything in the state backend through ./adapter.ts. Users log in
 * through ./interactions.ts; this module only builds the provider and answers its callbacks
 * (findAccount, the implied consent of first-party clients, refresh through the connector).
 *
 * Imported lazily (oidc-provider prints a runtime warning on Node 20 at import).
 */
import { logProviderRefusals } from '../http/provider-refusals.js';
import type { AuditTrail } from '../audit/trail.js';
import { auditTokenChecks, auditTokenGrants } from './token-audit.js';
import { createTokenIntrospection } from './token-introspection.js';
import { createUserStanding, type UserStanding } from './user-standing.js';
import { DEFAULT_GROUPS_RECHECK_MS } from '../ssotokens/settings-section.js';
import Provider, { type Configuration, type FindAccount, type KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from 'pino';
import type { Identity } from '../../connectors/connector.js';
import { refusesUser, upstreamReason } from '../../connectors/errors.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { StateBackend } from '../state/state.js';
import type { AccountStore } from './storage/federated-accounts.js';
import { answeringUnavailable } from './storage/storage-unavailable.js';
import { createStateAdapterClass } from './storage/adapter.js';
import { asSessionRekey } from './storage/session-rekey.js';
import { temporarilyUnavailable } from './unavailable.js';
import { withSessionSidIndex } from './storage/session-sids.js';
import type { UpstreamLinks } from './storage/upstream-sessions.js';
import { linkUpstreamSession } from './upstream-link.js';
import { createCookieKeys } from '../lib/cookie-keys.js';
import { PROVIDER_COOKIE_NAMES } from './cookie-names.js';
import { claimsOf, CLAIMS_BY_SCOPE, SCOPES } from './claims.js';
import { includeSidForCli, isSidlessCliRefresh } from './cli-sid.js';
import { CLI_CLIENT_ID, CLIENT_IDS, ownClients } from './clients.js';
import type { ConnectorSource } from './connectors/connector-source.js';
import { issuerOf, MOUNT_PATH } from './issuer.js';
import { withStaticClients, type StaticClientSource } from './static-clients.js';
import { answerUnauthorizedClient } from './unauthorized-client.js';
import type { IdpKeys } from './keys.js';
import {
  ACCESS_TOKEN_TTL_S, AUTHORIZATION_CODE_TTL_S, DEVICE_CODE_TTL_S, GRANT_TTL_S, ID_TOKEN_TTL_S,
  INTERACTION_TTL_S, REFRESH_TOKEN_TTL_S, SESSION_TTL_S,
} from './lifetimes.js';
import { deviceConfirmPage, deviceDonePage, deviceInputPage, errorPage, loggedOutPage, logoutPage } from './login/pages.js';
import { setPageHeaders } from '../http/security-headers.js';
import { pendingOf, requestSource, type PendingDeps } from './pending-source.js';
import { consentPortOf } from './login/loopback-consent.js';
import { limitRequestSize, serveDevicePage, withDeviceXsrf } from './request-bounds.js';
import { onlyRouteSpellings } from './route-spelling.js';


export interface ProviderDeps {
  /** svc's `url`; the issuer is `<url>/api/idp`. */
  readonly url: string;
  readonly keys: IdpKeys;
  readonly serverSecretKey: string;
  readonly state: StateBackend;
  readonly accounts: AccountStore;
  readonly connectors: ConnectorSource;
  readonly log: Logger;
  /** Epoch ms; the pending bound charges by it. */
  readonly now?: () => number;
  /**
   * The bound on pending logins and who a request is counted as (./storage/pending-bound.ts,
   * ../http/client-address.ts); without it, the default bound and no trusted proxy.
   */
  readonly pending?: PendingDeps;
  /** idp.config's staticClients as they are now (./static-clients.ts); none when absent. */
  readonly staticClients?: StaticClientSource;
  /** client-token-issued and client-token-refused (./token-audit.ts). */
  readonly audit?: AuditTrail;
  /** Where logins through an upstream OIDC session are linked to it, for its back-channel logout (./upstream-link.ts). */
  readonly upstreamLinks?: UpstreamLinks;
  /** `users.sso.groupsRecheck` (ms): how often introspection asks the connector about a token's user; DEFAULT_GROUPS_RECHECK_MS when absent. */
  readonly groupsRecheckMs?: () => number;
  /** The users' standing at their connectors (./user-standing.ts); built from the other deps when absent. */
  readonly standing?: UserStanding;
}


/** The signal connectors get for a refresh: long enough for a slow directory, bounded. */
const REFRESH_TIMEOUT_MS = 15_000;

export function createProvider(deps: ProviderDeps): Provider {
  const now = deps.now ?? Date.now;
  const pending = pendingOf(deps, now);
  const xsrfKey = deps.keys.cookie[0] ?? '';
  const standing = deps.standing ?? standingOf(deps, now);
  const introspection = createTokenIntrospection({ staticClients: deps.staticClients ?? (() => []), standing });
  const config: Configuration = {
    adapter: withStaticClients(answeringUnavailable(withSessionSidIndex(createStateAdapterClass(deps.state, {
      serverSecretKey: deps.serverSecretKey,
      pending: { bound: pending.bound, sourceOf: () => requestSource(Provider.ctx?.req, pending.trustedProxies) },
    }), deps.state)), deps.staticClients ?? (() => [])),
    clients: ownClients(deps.url, deps.serverSecretKey),
    cookies: { keys: createCookieKeys(deps.keys.cookie), names: { ...PROVIDER_COOKIE_NAMES } },
    jwks: { keys: deps.keys.signing.map((k) => ({ ...k.jwk, alg: 'RS256', use: 'sig' })) },
    scopes: [...SCOPES],
    claims: Object.fromEntries(Object.entries(CLAIMS_BY_SCOPE).map(([scope, claims]) => [scope, [...claims]])),
    // Dex puts the scope claims in the ID token too; svc reads groups from it.
    conformIdTokenClaims: false,
    extraParams: ['connector_id'],
    findAccount: findAccount(deps, standing),
    loadExistingGrant: impliedGrant,
    issueRefreshToken: async (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access') && code.accountId !== undefined && (await canRefresh(deps, code.accountId)),
    interactions: { url: (_ctx, interaction) => `${MOUNT_PATH}/interaction/${interaction.uid}` },
    // svc's own clients and every public one; another confidential client authenticates at /token, and may send PKCE (then checked).
    pkce: { required: (_ctx, client) => CLIENT_IDS.includes(client.clientId) || client.clientAuthMethod === 'none' },
    rotateRefreshToken: true,
    // Logout tokens go to the static clients' backchannelLogoutUri (features.backchannelLogout). Those
    // URLs are the operator's own configuration (registration is off), often on a private network,
    // which oidc-provider's SSRF guard (a dispatcher refusing special-use addresses) would refuse.
    fetch: (url, init) => {
      const { dispatcher: _ssrfGuard, ...rest } = init as RequestInit & { dispatcher?: unknown };
      return globalThis.fetch(url, rest);
    },
    features: {
      devInteractions: { enabled: false },
      backchannelLogout: { enabled: true },
      // svc's clients never push their requests; on by default, it stored 56 KB per anonymous request.
      pushedAuthorizationRequests: { enabled: false },
      deviceFlow: {
        enabled: true,
        userCodeInputSource: (ctx, form, _out, err) => {
          setPageHeaders(ctx, 'idp');
          ctx.body = deviceInputPage(form, err === undefined ? undefined : deviceErrorOf(err));
        },
        userCodeConfirmSource: (ctx, form, client, _info, userCode) => {
          setPageHeaders(ctx, 'idp');
          ctx.body = deviceConfirmPage(form, client.clientName ?? client.clientId, userCode);
        },
        successSource: (ctx) => {
          setPageHeaders(ctx, 'idp');
          ctx.body = deviceDonePage();
        },
      },
      // A client revokes only its own tokens; anything else is answered as RFC 7009 says, 200 and no effect.
      // A public client (svc-cli's logout) may revoke its own: RFC 7009 §2.1 lets it, and whoever
      // holds one of its tokens could only give it up. A refresh token takes its whole grant along.
      revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      // Confidential static clients only, their own tokens unless `introspection: any` (./token-introspection.ts).
      introspection: introspection.feature,
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx, form) => {
          setPageHeaders(ctx, 'idp');
          ctx.body = logoutPage(form);
        },
        postLogoutSuccessSource: (ctx) => {
          setPageHeaders(ctx, 'idp');
          ctx.body = loggedOutPage();
        },
      },
      userinfo: { enabled: true },
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: AUTHORIZATION_CODE_TTL_S,
      IdToken: ID_TOKEN_TTL_S,
      DeviceCode: DEVICE_CODE_TTL_S,
      Interaction: INTERACTION_TTL_S,
      Session: SESSION_TTL_S,
      Grant: GRANT_TTL_S,
      RefreshToken: REFRESH_TOKEN_TTL_S,
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      setPageHeaders(ctx, 'idp');
      ctx.body = errorPage('Login failed', out.error_description ?? out.error);
    },
  };
  const provider = new Provider(issuerOf(deps.url), config);
  includeSidForCli(provider);
  answerUnauthorizedClient(provider);
  provider.on('server_error', (_ctx, err) => deps.log.error({ err }, 'identity provider error'));
  provider.on('backchannel.error', (_ctx, err, client) => deps.log.warn({ client: client.clientId, reason: describeFailure(err) }, 'a back-channel logout token could not be delivered to a client; its session there stays until it expires'));
  provider.on('backchannel.success', (_ctx, client) => deps.log.info({ client: client.clientId }, 'back-channel logout token delivered'));
  logProviderRefusals(provider as unknown as Parameters<typeof logProviderRefusals>[0], deps.log);
  if (deps.audit !== undefined) auditTokenGrants(provider as unknown as Parameters<typeof auditTokenGrants>[0], deps.audit, pending.trustedProxies);
  // First: every check below compares ctx.path with a route's spelling, which the router would not (./route-spelling.ts).
  provider.use(onlyRouteSpellings(MOUNT_PATH));
  provider.use(limitRequestSize);
  // The audit outside the answer's shaping: it records what the client was told.
  if (deps.audit !== undefined) provider.use(auditTokenChecks(deps.audit, pending.trustedProxies) as unknown as Parameters<typeof provider.use>[0]);
  provider.use(introspection.answer);
  provider.use(serveDevicePage(issuerOf(deps.url), xsrfKey, new URL(deps.url).protocol === 'https:'));
  withDeviceXsrf(provider, xsrfKey);
  // A Session removal at a resume is a re-key, which need not wait for a replica (./storage/session-rekey.ts).
  provider.use(async function resumeRekeysSession(ctx, next) {
    if (ctx.method === 'GET' && RESUME_PATH.test(ctx.path)) return asSessionRekey(next);
    await next();
  });
  if (deps.upstreamLinks !== undefined) {
    provider.use(linkUpstreamSession(provider, { links: deps.upstreamLinks, log: deps.log }, (ctx) => ctx.method === 'GET' && RESUME_PATH.test(ctx.path)));
  }
  // offline_access survives oidc-provider's scope check only with prompt=consent (OIDC Core §11,
  // panva/node-oidc-provider#777); Dex issues refresh tokens without it, and svc's CLI relies on
  // that, so the prompt is added here and the consent is implied in interactions.ts.
  provider.use(async function offlineNeedsConsent(ctx, next) {
    if (ctx.path === '/auth' && ctx.method === 'GET' && ctx.query['prompt'] === undefined && /(^| )offline_access( |$)/.test(String(ctx.query['scope'] ?? ''))) {
      ctx.query = { ...ctx.query, prompt: 'consent' };
    }
    await next();
  });
  return provider;
}

/** oidc-provider's resume routes (`resume`, `device_resume`): where a login step ends and the session is re-keyed. */
const RESUME_PATH = /^\/(auth|device)\/[^/]+$/;

function deviceErrorOf(err: Error): 'wrong_code' | 'aborted' | 'failed' {
  if ('userCode' in err || err.name === 'NoCodeError') return 'wrong_code';
  return err.name === 'AbortedError' ? 'aborted' : 'failed';
}

function standingOf(deps: ProviderDeps, now: () => number): UserStanding {
  return createUserStanding({
    state: deps.state, accounts: deps.accounts, connectors: deps.connectors, now, log: deps.log,
    recheckMs: deps.groupsRecheckMs ?? (() => DEFAULT_GROUPS_RECHECK_MS), callbackUrl: `${issuerOf(deps.url)}/callback`,
  });
}

function findAccount(deps: ProviderDeps, standing: UserStanding): FindAccount {
  return async (_ctx, sub, token) => {
    if (isSidlessCliRefresh(token)) {
      deps.log.info({ client: CLI_CLIENT_ID }, 'identity provider: a command-line refresh token without sid (from before svc-cli carried one) refused; the user logs in again with svc login --sso');
      return undefined;   // invalid_grant: svc could not end what it would mint (./cli-sid.ts)
    }
    const account = await deps.accounts.find(sub);
    if (account === undefined) return undefined;
    let identity = account.identity;
    if (token?.kind === 'RefreshToken') {
      const fresh = await refreshed(deps, account.connectorId, identity);
      // The user's other tokens learn of it at introspection (./user-standing.ts).
      if (fresh !== UPSTREAM_DOWN) await standing.record(sub, fresh === null);
      if (fresh === null) return undefined;   // invalid_grant: the upstream no longer vouches for the user
      if (fresh === UPSTREAM_DOWN) throw temporarilyUnavailable('the source of this login cannot be reached now; try again later');
      identity = fresh;
      await deps.accounts.update(sub, account, { connectorId: account.connectorId, identity }, REFRESH_TOKEN_TTL_S);
    }
    const claims = claimsOf(sub, account.connectorId, identity);
    return { accountId: sub, claims: () => claims };
  };
}

/** A connector that could not answer (directory down, timeout): not a refusal of the user. */
const UPSTREAM_DOWN = Symbol('upstream down');

/**
 * The connector's fresh view of the user; null when it refuses or cannot refresh; UPSTREAM_DOWN
 * when it fails. The refresh grant answers the last with temporarily_unavailable before the
 * refresh token is used (oidc-provider finds the account first), so a directory blip ends no
 * session: svc's renewal (oidc/refresh.ts) and the CLI keep their refresh token and try again.
 */
async function refreshed(deps: ProviderDeps, connectorId: string, identity: Identity): Promise<Identity | null | typeof UPSTREAM_DOWN> {
  const connector = deps.connectors.get(connectorId);
  if (connector?.refresh === undefined) return null;
  // A timer cleared at the end rather than AbortSignal.timeout, whose signal is tracked by weak
  // reference until collected: 3 KB per refresh grant and work for every collection.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), REFRESH_TIMEOUT_MS);
  try {
    return await connector.refresh(identity, { callbackUrl: `${issuerOf(deps.url)}/callback`, wantGroups: true, signal: deadline.signal });
  } catch (err: unknown) {
    // A person the upstream no longer lets in is refused (invalid_grant), not "down".
    if (refusesUser(err)) {
      deps.log.info({ connector: connectorId, reason: err instanceof Error ? err.message : String(err) }, 'identity provider: the connector refused to refresh a login; no new tokens');
      return null;
    }
    // One line with the connector's reason; the stack only at debug.
    deps.log.warn({ connector: connectorId, reason: upstreamReason(err) ?? describeFailure(err) }, 'identity provider: refreshing a login at its connector failed; no new tokens');
    deps.log.debug({ err, connector: connectorId }, 'identity provider: refresh failure');
    return UPSTREAM_DOWN;
  } finally {
    clearTimeout(timer);
  }
}

async function canRefresh(deps: ProviderDeps, sub: string): Promise<boolean> {
  const account = await deps.accounts.find(sub);
  return account !== undefined && deps.connectors.get(account.connectorId)?.refresh !== undefined;
}

/**
 * Every client is first-party (svc's own, and the applications its administrator registered): consent is implied (Dex's skipApprovalScreen, as under Argo CD),
 * except for a public client's loopback redirect, asked on the login page (./loopback-consent.ts).
 * The grant holds whatever the request asks of the scopes the provider knows.
 */
async function impliedGrant(ctx: KoaContextWithOIDC) {
  const { oidc } = ctx;
  const client = oidc.client;
  const accountId = oidc.session?.accountId;
  if (client === undefined || accountId === undefined) return undefined;
  // A public client's loopback redirect is asked every time (./loopback-consent.ts): only this authorization's answer counts.
  const asked = consentPortOf(client, oidc.params?.['redirect_uri']) !== undefined;
  const grantId = oidc.result?.['consent']?.grantId ?? (asked ? undefined : oidc.session?.grantIdFor(client.clientId));
  if (asked && grantId === undefined) return undefined;
  const existing = grantId === undefined ? undefined : await oidc.provider.Grant.find(grantId);
  const grant = existing ?? new oidc.provider.Grant({ clientId: client.clientId, accountId });
  const scope = String(oidc.params?.['scope'] ?? 'openid');
  grant.addOIDCScope(scope.split(' ').filter((s) => (SCOPES as readonly string[]).includes(s)));
  await grant.save();
  return grant;
}

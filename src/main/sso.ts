/**
 * Single sign-on against an existing OIDC provider (`oidc.config`, read at start): its token
 * verifier joins the authentication stage, then its routes and session renewal join the app. The same
 * pieces serve any SsoProvider, so the bundled provider can use them with a value of its own.
 */
import { Unavailable } from '../errors.js';
import { ssoPerson } from '../person.js';
import { CLIENT_IDS, WEB_CLIENT_ID, webClientSecret } from '../idp/clients.js';
import { followSvcSessions } from '../idp/follow-svc-sessions.js';
import { issuerOf } from '../idp/issuer.js';
import { localKeySet } from '../idp/keys.js';
import type { JWTVerifyGetKey } from 'jose';
import type { IdpFeature } from './idp.js';
import { ssoRoutes } from '../http/routes/sso.js';
import { backchannelLogoutRoutes } from '../http/routes/backchannel-logout.js';
import { ssoRenewal, tokenRecheck } from '../http/sso-renewal.js';
import { loginRecorder } from '../http/routes/record-login.js';
import type { BackchannelLogoutDeps } from '../oidc/backchannel-logout.js';
import { createProviderClient, warnAboutProvider, type ProviderClient } from '../oidc/client.js';
import { describeSsoInForce, ssoInForce } from '../oidc/in-force.js';
import type { LoginStartDeps } from '../oidc/login-start.js';
import { ssoProviderFromOidc, type SsoProvider } from '../oidc/provider.js';
import { createSessionRefresh } from '../oidc/refresh.js';
import { createSealer, type SealPurpose, type Sealer } from '../lib/sealed.js';
import { createUserInfoGroups, type UserInfoGroups } from '../oidc/userinfo-groups.js';
import { createSsoVerifier, type SsoVerifier } from '../oidc/sso-verifier.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
import type { Services } from './services.js';

export interface SsoStage {
  readonly verifier: SsoVerifier;
  feature(authentication: Authentication): Feature;
}

/** undefined when no external provider is configured at start. */
export function prepareSso(services: Services): SsoStage | undefined {
  const { settings, log } = services;
  const current = settings.current();
  log.info({}, describeSsoInForce(current));
  if (current.oidc === undefined) return undefined;
  const provider = ssoProviderFromOidc(current.oidc, current.oidcTlsInsecureSkipVerify);
  warnAboutProvider(provider, log);
  return prepareSsoFor(services, provider);
}

/**
 * The bundled provider as svc's SSO provider: issuer `<url>/api/idp`, the confidential client
 * `svc` with its secret derived from server.secretkey, tokens for `svc` or `svc-cli`, and its
 * end-session endpoint as the logout URL. svc reaches it at its own `url`, as a browser does.
 */
export function prepareBundledSso(services: Services, idp: Pick<IdpFeature, 'publishedKeys' | 'sessionEnd' | 'upstreamLogout'>): SsoStage | undefined {
  const { url, serverSecretKey } = services.settings.current();
  if (serverSecretKey === undefined) return undefined;
  const issuer = issuerOf(url);
  // Its ID tokens are verified with the keys it publishes, in process: no HTTP fetch of its JWKS.
  const stage = prepareSsoFor(services, {
    issuer,
    clientID: WEB_CLIENT_ID,
    clientSecret: webClientSecret(serverSecretKey),
    audiences: CLIENT_IDS,
    skipAudienceCheckWhenTokenHasNoAudience: false,
    scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
    idTokenClaims: undefined,
    redirectPath: '/auth/callback',
    logoutURL: `${issuer}/session/end?id_token_hint={{token}}&post_logout_redirect_uri={{logoutRedirectURL}}`,
    userInfo: undefined,
    tls: { rootCA: undefined, insecureSkipVerify: false },
  }, localKeySet(idp.publishedKeys), (sessions) => idp.upstreamLogout(sessions));
  return {
    verifier: stage.verifier,
    feature(authentication) {
      const inner = stage.feature(authentication);
      // A svc session ended ends the provider session it came from (idp/follow-svc-sessions.ts).
      const stopFollowing = followSvcSessions({ sessions: authentication.sessions, sessionEnd: idp.sessionEnd, issuer, log: services.log });
      return {
        ...inner,
        close: async () => {
          stopFollowing();
          await inner.close?.();
        },
      };
    },
  };
}

/**
 * `localKeys`: the provider's keys in process, for the bundled provider (else its JWKS is fetched).
 * `upstream`: the bundled provider's upstream connectors whose logout tokens are taken too.
 */
export function prepareSsoFor(services: Services, provider: SsoProvider, localKeys?: JWTVerifyGetKey, upstream?: UpstreamLogouts): SsoStage {
  const { settings, state, log, now } = services;
  const client = createProviderClient(provider);
  const sealers = new Map<SealPurpose, Sealer>();
  let sealedWith: string | undefined;
  // Read per use, so a rotated server.secretkey takes effect (and old sealed values stop opening).
  const sealer = (purpose: SealPurpose) => (): Sealer => {
    const key = settings.current().serverSecretKey;
    if (key === undefined) throw new Unavailable('single sign-on needs server.secretkey in svc-secret');
    if (key !== sealedWith) {
      sealers.clear();
      sealedWith = key;
    }
    let found = sealers.get(purpose);
    if (found === undefined) sealers.set(purpose, (found = createSealer(key, purpose)));
    return found;
  };
  const userInfo: UserInfoGroups | undefined = provider.userInfo === undefined
    ? undefined
    : createUserInfoGroups({ client, state, sealer: sealer('userinfo-groups'), log, now });
  const verifier = createSsoVerifier({
    client,
    groupClaims: () => settings.current().policy.scopes,
    ...(userInfo !== undefined ? { groupSource: userInfo.source } : {}),
    ...(localKeys !== undefined ? { localKeys } : {}),
    now,
  });
  return { verifier, feature: (authentication) => ssoFeature(services, authentication, client, verifier, userInfo, sealer, upstream) };
}

type UpstreamLogouts = (sessions: Authentication['sessions']) => NonNullable<BackchannelLogoutDeps['upstream']>;

function ssoFeature(
  services: Services,
  authentication: Authentication,
  client: ProviderClient,
  verifier: SsoVerifier,
  userInfo: UserInfoGroups | undefined,
  sealer: (purpose: SealPurpose) => () => Sealer,
  upstream: UpstreamLogouts | undefined,
): Feature {
  const { settings, state, log, now } = services;
  const refresh = createSessionRefresh({
    client, verifier, state, sealer: sealer('refresh-token'), userInfo, log, now,
    keepMs: () => settings.current().sessionDurationMs,
    isRevoked: (tokenId) => authentication.revocation.isRevoked(tokenId),
    revoke: (tokenId, expiresAt) => authentication.revocation.revoke(tokenId, expiresAt),
    recheckMs: () => settings.current().ssoTokenLimits.groupsRecheckMs,
    audit: services.audit,
    // A registry that cannot follow now must not lose the renewed token: the list shows the session again when it is next used.
    onRenewed: (sub, oldId, next) => authentication.sessions.renewed(ssoPerson(client.provider.issuer, sub), oldId, next).catch((err: unknown) => log.warn({ err, sub }, 'sessions: a renewed SSO session could not be followed in the list now')),
  });
  // The same recheck for a session's token sent as a bearer or on a WebSocket handshake (http/caller.ts).
  authentication.recheckTokensWith(tokenRecheck(refresh, log));
  // A session ended from the list or by back-channel logout cannot be renewed either.
  const stopForgetting = authentication.sessions.onEnded(async (record) => {
    if (record.issuer !== client.provider.issuer) return;
    for (const token of [record.id, ...(record.earlier ?? []).map((e) => e.id)]) await refresh.forget(token);
  });
  const login: LoginStartDeps = { client, sealer: sealer('login-state'), serverUrl: () => settings.current().url, now };
  return {
    name: 'sso',
    beforeDispatch: ssoRenewal(refresh, log, () => settings.current().url),
    routers: [backchannelLogoutRoutes({
      logout: {
        token: { issuer: client.provider.issuer, clientId: client.provider.clientID, keys: () => verifier.keySet(), state, now },
        sessions: authentication.sessions,
        ...(upstream !== undefined ? { upstream: upstream(authentication.sessions) } : {}),
      },
      trustedProxies: services.trustedProxies,
      audit: services.audit,
      log,
      now,
    }), ssoRoutes({
      login,
      callback: { client, verifier, refresh, userInfo, localAccountNames: () => settings.current().accounts },
      refresh,
      authenticator: authentication.authenticator,
      logout: authentication.logout,
      recordLogin: loginRecorder(authentication.sessions, services.trustedProxies, log),
      trustedProxies: services.trustedProxies,
      logoutURL: () => client.provider.logoutURL,
      outcomes: services.loginOutcomes,
    })],
    close: () => {
      stopForgetting();
      return client.close();
    },
  };
}

/**
 * The SSO provider in force, and an external provider's `oidc.config`, are read at start (its
 * verifier is registered by issuer and its routes hold its client); the bundled provider's
 * connectors and keys apply live. A change that needs a restart is said in the log, every time,
 * with what stays in force until then: an operator who edits oidc.config is not left guessing.
 */
export function ssoChangeNotice(services: Services): Feature {
  const { settings, log } = services;
  const atStart = settings.current();
  const unsubscribe = settings.onChange((now, previous) => {
    const providerChanged = ssoInForce(now) !== ssoInForce(previous);
    // Compared whole, secrets included, never logged.
    const oidcChanged = JSON.stringify(now.oidc) !== JSON.stringify(previous.oidc);
    if (!providerChanged && !oidcChanged) return;
    log.warn(
      { inForce: describeSsoInForce(atStart), configured: describeSsoInForce(now) },
      `${oidcChanged ? 'oidc.config' : 'the single sign-on provider'} changed: svc reads it at start; restart svc to apply the change (until then the provider from start stays in force)`,
    );
  });
  return { name: 'sso-change-notice', close: () => Promise.resolve(unsubscribe()).then(() => undefined) };
}

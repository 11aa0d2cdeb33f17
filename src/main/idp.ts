/**
 * The bundled identity provider as a Feature: built only when idp.config has connectors at start
 * (server.ts imports this module lazily, since oidc-provider warns at import on Node 20).
 * Turning the provider on or off needs a restart; connector changes and key rotations apply live.
 *
 * Test seam: `connectors` replaces the connector source (tests give a fake PasswordConnector,
 * a double of the Connector contract). Without it, connectors are built from idp.config by
 * `buildConnector`, which the connector registry provides.
 */
import { SETTINGS_SECRET } from '../config/manifests.js';
import { createAccountStore, REMEMBERED_ACCOUNTS } from '../idp/storage/federated-accounts.js';
import { createSealer } from '../lib/sealed.js';
import { createIdpApp } from '../idp/app.js';
import { createIdentitySource } from '../idp/identity-source.js';
import type { IdentitySource } from '../ssotokens/recheck.js';
import type { ParsedConnector } from '../idp/connectors/config.js';
import { createConfiguredConnectors } from '../idp/connectors/configured-connectors.js';
import type { Connector } from '../../connectors/connector.js';
import type { ConnectorSource } from '../idp/connectors/connector-source.js';
import { ensureIdpKeys, nextSignerChange, parseIdpKeys, signingOrder, type IdpKeys, type SigningKey } from '../idp/keys.js';
import { issuerOf, MOUNT_PATH } from '../idp/issuer.js';
import { startKeyRotation } from '../idp/key-rotation.js';
import { openWithUpstreamFetches } from '../idp/connectors/upstream-fetch.js';
import { createPasswordGuard } from '../idp/login/password-guard.js';
import { createClientSecretGuard } from '../idp/client-secret-guard.js';
import { WEB_CLIENT_ID } from '../idp/clients.js';
import { createLoginConcurrency } from '../session/concurrency.js';
import { randomFailureDelay } from '../session/login.js';
import { createLoginThrottle } from '../session/throttle.js';
import type { Feature } from './feature.js';
import { failRequest, observeRawRequest } from '../http/entry.js';
import type { Services } from './services.js';
import { Counter } from 'prom-client';
import type { Logger } from 'pino';
import type { PendingDeps } from '../idp/pending-source.js';
import { readPendingLimits } from '../idp/request-bounds.js';
import { createPendingBound } from '../idp/storage/pending-bound.js';
import { createProviderSessionEnd, type ProviderSessionEnd } from '../idp/session-end.js';
import { createUpstreamLinks } from '../idp/storage/upstream-sessions.js';
import { upstreamLogoutFor, type UpstreamLogout } from '../idp/upstream-logout.js';
import type { SessionRegistry } from '../session/registry.js';
import { MAX_TIMER_MS } from '../lib/duration.js';

export interface IdpOptions {
  /** Replaces the connectors built from idp.config (tests). */
  readonly connectors?: (services: Services) => ConnectorSource;
  /** Replaces the random wait after a failed password (tests). */
  readonly failureDelay?: () => Promise<void>;
  /** How often idp.keyRotation is checked (tests; a minute otherwise). */
  readonly keyRotationCheckMs?: number;
}

/**
 * The provider's own ID tokens are verified by the SSO client side's verifier (main/sso.ts),
 * with the keys the provider publishes, read here in process.
 */
export interface IdpFeature extends Feature {
  /** The signing keys the provider publishes now (its JWKS), the one it signs with first. */
  readonly publishedKeys: () => readonly SigningKey[];
  /** Its users' identities and their connectors' fresh view, for personal API tokens (src/ssotokens/). */
  readonly identities: IdentitySource;
  /** Ends its sessions from svc's side (a svc session ended, an upstream back-channel logout). */
  readonly sessionEnd: ProviderSessionEnd;
  /** The upstream `oidc` connector whose logout tokens these are, ending sessions in `sessions` too. */
  upstreamLogout(sessions: Pick<SessionRegistry, 'endBySid'>): (issuer: string, audiences: readonly string[]) => UpstreamLogout | undefined;
}


export async function buildIdp(services: Services, options: IdpOptions = {}): Promise<IdpFeature> {
  const { settings, store, state, log } = services;
  const url = settings.current().url;
  const secretKey = settings.current().serverSecretKey;
  if (secretKey === undefined) throw new Error('identity provider: svc-secret has no server.secretkey');
  let keys: IdpKeys = await ensureIdpKeys(store, () => new Date(services.now()));
  const configured = options.connectors === undefined
    ? createConfiguredConnectors(() => settings.current().idp, openConnector(services), log.child({ feature: 'idp' }))
    : undefined;
  const connectors = options.connectors?.(services) ?? (configured as ConnectorSource);
  // The provider signs with the first key: the one whose time has come (see keys.ts).
  const inForce = (now = services.now()): IdpKeys => ({ ...keys, signing: signingOrder(keys.signing, new Date(now)) });
  const idpLog = log.child({ feature: 'idp' });
  // The password form is throttled as svc's own login is (idp/login/password-guard.ts).
  const limits = services.loginLimits;
  const throttle = createLoginThrottle({ state, limits, log: idpLog, registry: services.metrics.registry, now: services.now, metricPrefix: 'svc_idp_login_throttle', audit: services.audit });
  const passwordGuard = createPasswordGuard({
    state, throttle, concurrency: createLoginConcurrency(limits.maxConcurrentLogins), log: idpLog, failureDelay: options.failureDelay ?? randomFailureDelay, outcomes: services.loginOutcomes,
  });
  // So are the clients' secrets, each client with a count of its own (idp/client-secret-guard.ts).
  const clientThrottle = createLoginThrottle({ state, limits, log: idpLog, registry: services.metrics.registry, now: services.now, metricPrefix: 'svc_idp_client_throttle', audit: services.audit });
  const clientSecretGuard = createClientSecretGuard({ throttle: clientThrottle, log: idpLog, failureDelay: options.failureDelay ?? randomFailureDelay, exempt: [WEB_CLIENT_ID] });
  const pending = buildPendingBound(services, idpLog);
  const accounts = createAccountStore(state, createSealer(secretKey, 'idp-account', { rememberOpened: REMEMBERED_ACCOUNTS }));
  const upstreamLinks = createUpstreamLinks(state);
  const app = createIdpApp({ url, keys: inForce(), serverSecretKey: secretKey, state, pending, accounts, connectors, passwordGuard, clientSecretGuard, log: idpLog, outcomes: services.loginOutcomes, audit: services.audit, upstreamLinks,
    staticClients: () => settings.current().idp?.staticClients ?? [],
    groupsRecheckMs: () => settings.current().ssoTokenLimits.groupsRecheckMs,
  });
  // What the provider publishes: the keys it was last built with (createIdpApp, then publish).
  let published = inForce().signing;
  function publish(next: IdpKeys): void {
    app.reload(next);
    published = next.signing;
  }
  let signerTimer: NodeJS.Timeout | undefined;
  /**
   * Rebuilds the provider when a published key starts signing. One `now` per decision: a timer
   * may fire a millisecond before the wall clock reaches `at`; read twice, the clock once said
   * "not yet" to the signing order and then "nothing waiting" to the next schedule, and the new
   * key never signed. A timer that fires early waits out the rest.
   */
  function scheduleSignerChange(now = services.now()): void {
    clearTimeout(signerTimer);
    const at = nextSignerChange(keys.signing, new Date(now));
    if (at === undefined) return;
    signerTimer = setTimeout(() => {
      const current = services.now();
      if (current >= at) publish(inForce(current));
      scheduleSignerChange(current);
    }, Math.min(Math.max(at - now, 0), MAX_TIMER_MS)); // a later change is rescheduled from there
    signerTimer.unref();
  }
  scheduleSignerChange();
  // idp.keyRotation: the rotation lands in svc-secret, and comes back here through onChange below.
  const rotation = startKeyRotation({
    store, periodMs: () => settings.current().idpKeyRotationMs, now: services.now, log: idpLog, registry: services.metrics.registry, audit: services.audit,
    ...(options.keyRotationCheckMs !== undefined ? { checkEveryMs: options.keyRotationCheckMs } : {}),
  });
  if (url.startsWith('http:')) log.warn({ issuer: issuerOf(url) }, 'identity provider: the issuer is plain http; use an https url outside local setups');

  const unsubscribe = store.onChange((snapshot) => {
    let next: IdpKeys | undefined;
    try {
      next = parseIdpKeys(snapshot.secrets.get(SETTINGS_SECRET)?.data ?? {});
    } catch (err: unknown) {
      log.error({ err }, 'identity provider: the keys in svc-secret cannot be read; the previous keys stay in force');
      return;
    }
    if (next === undefined || JSON.stringify(next) === JSON.stringify(keys)) return;
    keys = next;
    const now = services.now();
    publish(inForce(now));
    scheduleSignerChange(now);
  });

  const sessionEnd = createProviderSessionEnd({ provider: () => app.provider(), audit: services.audit, log: idpLog, state });
  return {
    name: 'idp',
    publishedKeys: () => published,
    identities: createIdentitySource(accounts, connectors, `${issuerOf(url)}/callback`),
    sessionEnd,
    upstreamLogout: (sessions) => (issuer, audiences) => upstreamLogoutFor({ connectors, links: upstreamLinks, sessionEnd, sessions, svcIssuer: issuerOf(url) }, issuer, audiences),
    // Before Koa: svc's app would add a Koa context and its middleware to every token request.
    handle(req, res, target) {
      if (target.path !== MOUNT_PATH && !target.path.startsWith(`${MOUNT_PATH}/`)) return false;
      const requestId = observeRawRequest(req, res, MOUNT_PATH, target.path, { metrics: services.metrics, log, accessLogLevel: services.accessLogLevel });
      // Both apps answer their own errors; this is for one that escapes them.
      app.handle(req, res, target).catch((err: unknown) => failRequest(res, err, requestId, log.child({ requestId }), target.path, req.method, 'identity provider: '));
      return true;
    },
    async close() {
      unsubscribe();
      rotation.close();
      clearTimeout(signerTimer);
      await configured?.close();
      await throttle.close();
      await clientThrottle.close();
    },
  };
}

/**
 * Opens a parsed idp.config entry with what every connector gets: fetch under the upstream TLS
 * policy (its pools closed with the connector), the clock and a logger scoped to it.
 */
function openConnector(services: Services): (entry: ParsedConnector) => Connector {
  return (entry) => openWithUpstreamFetches(
    entry.open,
    { now: () => new Date(services.now()), log: services.log.child({ connector: entry.id, type: entry.type }) },
    services.settings.current().oidcTlsInsecureSkipVerify,
  );
}

/**
 * The bound on pending logins (idp/storage/pending-bound.ts), from the environment, read once,
 * keyed on the source address as Services.trustedProxies reads it.
 */
function buildPendingBound(services: Services, log: Logger): PendingDeps {
  const trustedProxies = services.trustedProxies;
  const limits = readPendingLimits(services.env, log);
  const refusals = new Counter({
    name: 'svc_idp_pending_refused_total',
    help: 'New logins refused by the bound on pending logins, by record kind and bound (source: one address held its share; total: all sources together held the whole bound)',
    labelNames: ['kind', 'bound'] as const,
    registers: [services.metrics.registry],
  });
  log.info({ trustedProxies: trustedProxies.described, ...limits }, 'identity provider: pending logins bounded per source address and in all');
  return { trustedProxies, bound: createPendingBound({ state: services.state, limits, now: services.now, log, refusals }) };
}

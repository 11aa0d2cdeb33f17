/**
 * The composition root: options -> stores -> services -> features -> app -> listening server.
 * Every dependency is built here, in one order, and passed down by hand:
 *
 *   store, settings, state, rights  (Services)
 *   → the SSO provider's token verifier (sso.ts), when oidc.config is set at start
 *   → SSO users' personal API tokens (sso-tokens.ts), checked against the bundled provider's connectors
 *   → token verifiers and the caller reading (authentication.ts)
 *   → accounts and sessions (accounts-and-sessions.ts), SSO login, callback, logout and renewal (sso.ts)
 *   → the extension proxy (extensions.ts), the login and account pages (web.ts)
 *   → the Koa app with every feature's routers, and the raw server around it.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type Router from '@koa/router';
import type { Registry } from 'prom-client';
import { NO_AUDIT, withTraceIds, type AuditTrail } from '../audit/trail.js';
import { ensureInitialConfig } from '../config/bootstrap.js';
import { openDirStore } from '../config/dir-store.js';
import { openClusterStore, type ClusterStoreOptions } from '../config/kube/open.js';
import { createLiveSettings } from '../config/live-settings.js';
import { auditConfigChanges } from '../config/config-audit.js';
import { createApp } from '../http/app.js';
import { routeTable, type DeclaredRoute } from '../http/route-access.js';
import { authMiddleware } from '../http/auth.js';
import { parseTrustedProxies, TRUSTED_PROXIES_KEY } from '../http/client-address.js';
import { createHttpMetrics } from '../http/metrics.js';
import { refuseTarget, requestTarget, type RequestTarget } from '../http/request-target.js';
import { healthRoutes, type MetricsExposition } from '../http/routes/health.js';
import type { AppState } from '../http/state.js';
import { versionRoutes } from '../http/routes/version.js';
import { svcVersion } from '../lib/version.js';
import { listenForMetrics } from './metrics-listener.js';
import { routeProviderConsole } from './provider-console.js';
import { createReadiness } from './readiness.js';
import { createStartGate, registerStartGateMetric } from './start-gate.js';
import { waitingListener } from './waiting-listener.js';
import { registerServerMetrics } from './server-metrics.js';
import { registerStateMetrics } from './state-metrics.js';
import { settingsRoutes } from '../http/routes/settings.js';
import { transportSecurityFor } from '../http/security-headers.js';
import { createUpgradeHandler, type WebSocketRoute } from '../http/upgrade.js';
import { printable } from '../lib/printable.js';
import { createRights } from '../rbac/rights.js';
import { readInt, readLoginLimits } from '../session/limits.js';
import { DEFAULT_MAX_API_TOKENS, MAX_API_TOKENS_ENV } from '../accounts/api-tokens.js';
import { createLoginOutcomes } from '../session/login-outcomes.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import { openState, type RedisTopology } from '../state/index.js';
import { buildAccounts, buildLoginThrottle } from './accounts-and-sessions.js';
import { buildExtensions } from './extensions.js';
import { loginRecorder } from '../http/routes/record-login.js';
import type { BeforeDispatch, Feature } from './feature.js';
import type { IdpFeature, IdpOptions } from './idp.js';
import { buildAuthentication, type Authentication } from './authentication.js';
import { firstStartUrl, listenUrl, urlListenMismatch, type ListenAddress } from './listen-url.js';
import { accessLogLevelFromEnv, createLogger } from './log.js';
import type { Services } from './services.js';
import { settingsParserFor } from './settings.js';
import { prepareBundledSso, prepareSso, ssoChangeNotice } from './sso.js';
import { buildWeb } from './web.js';
import { restartNotice } from './restart-notice.js';
import { prepareSsoTokens } from './sso-tokens.js';
import { prepareWorkload } from './workload.js';
import { tracedListener } from '../tracing/server-span.js';
import { activeTraceIds, tracingOn } from '../tracing/spans.js';

export interface ServerOptions {
  readonly configDir: string;
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly redisUrl?: string;
  /** Sentinel, Cluster or one Redis (wins over redisUrl). */
  readonly redis?: RedisTopology;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly log?: Logger;
  /** Extra environment read by features (throttle limits); defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Verifiers of further token issuers, beside svc's own and the SSO features' (tests). */
  readonly verifiers?: (services: Services) => readonly TokenVerifier[];
  /** The bundled identity provider's options (tests: its connector source). */
  readonly idp?: IdpOptions;
  /** Serve /metrics on this address only (--metrics-listen), not on the public one. */
  readonly metricsListen?: { readonly host: string; readonly port: number };
  /** Read and write the stores through the Kubernetes API instead of configDir (`--kube`). */
  readonly kube?: ClusterStoreOptions;
  /** Where audit events go; none unless given (the serve command gives the configured sink). */
  readonly audit?: AuditTrail;
  /** The clock features read (Services.now); Date.now unless a test moves time. */
  readonly now?: () => number;
  /**
   * The text /metrics answers, given this server's registry; by default the registry's own. A
   * cluster worker answers with every worker's metrics combined (cluster-metrics.ts).
   */
  readonly metricsText?: (registry: Registry) => () => Promise<string>;
  /**
   * The primary of a cluster already read the environment's settings and warned about bad
   * values (serve.ts): a worker reads them quietly, so one typo is one warning, not one per worker.
   */
  readonly environmentChecked?: boolean;
}

/** Where a cluster worker's environment warnings go: the primary said them once already. */
const QUIET: Pick<Logger, 'warn'> = { warn: () => undefined };

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** The metrics listener's URL, when --metrics-listen is set. */
  readonly metricsUrl?: string;
  readonly services: Services;
  /** Every route of the Koa app with its access declaration (route-access.ts, docs/routes.md). */
  readonly routes: readonly DeclaredRoute[];
  /**
   * Stops accepting, lets in-flight requests finish (up to graceMs), then closes the stores.
   * Upgraded connections (WebSocket relays) are cut at the deadline too: closeAllConnections()
   * does not see them, yet server.close() waits for them.
   */
  close(graceMs?: number): Promise<void>;
}

async function buildServices(options: ServerOptions, log: Logger): Promise<Services> {
  const env = options.env ?? process.env;
  // Before anything is opened: a bad value stops the start (TrustedProxiesInvalid names the entry);
  // guessing would either count everyone behind a proxy as one source or believe a header anyone can send.
  const trustedProxies = parseTrustedProxies(env[TRUSTED_PROXIES_KEY]);
  const metrics = createHttpMetrics();
  const store = options.kube !== undefined ? await openClusterStore(options.kube, log, metrics.registry) : await openDirectory(options.configDir, log, firstStartUrl(listenAddress(options)));
  const settings = createLiveSettings(store, settingsParserFor(firstStartUrl(listenAddress(options))), log);
  const state = await openState({ ...(options.redisUrl !== undefined ? { redisUrl: options.redisUrl } : {}), ...(options.redis !== undefined ? { redis: options.redis } : {}), log });
  const rights = await createRights(settings.current().policy, {}, {
    localAccountNames: () => settings.current().accounts,
    onReserved: ({ issuer, name, as, reason }) => log.warn({ issuer, name: printable(name), as }, `single sign-on ${as} '${printable(name)}' from ${issuer} is not used for rights: ${reason}; rename it at the provider, or write rules for another of the user's names (docs/rbac.md)`),
  });
  auditConfigChanges({ store, settingsProblems: () => settings.problems() }, options.audit ?? NO_AUDIT);
  settings.onChange((next, previous) => {
    if (next.policy === previous.policy) return;
    rights.update(next.policy).catch((err: unknown) => log.error({ err }, 'rights policy update failed; the previous policy stays in force'));
  });
  const envLog = options.environmentChecked === true ? QUIET : log;
  return {
    log, store, settings, state, rights, metrics,
    loginOutcomes: createLoginOutcomes(metrics.registry, options.audit ?? NO_AUDIT),
    accessLogLevel: accessLogLevelFromEnv(env, envLog),
    loginLimits: readLoginLimits(env, envLog),
    maxApiTokensPerAccount: readInt(env, envLog, MAX_API_TOKENS_ENV, DEFAULT_MAX_API_TOKENS, 1),
    env,
    audit: options.audit ?? NO_AUDIT,
    trustedProxies,
    now: options.now ?? Date.now,
  };
}

async function openDirectory(dir: string, log: Logger, firstUrl: string): Promise<Services['store']> {
  await ensureInitialConfig({ dir, log, url: firstUrl });
  return openDirStore({ dir, log });
}

/**
 * The bundled identity provider, when idp.config has connectors at start (turning it on or off
 * needs a restart). Imported only then: oidc-provider prints a runtime warning at import on Node 20.
 */
async function buildIdpIfConfigured(services: Services, options: IdpOptions | undefined): Promise<IdpFeature | undefined> {
  if ((services.settings.current().idp?.connectors.length ?? 0) === 0) return undefined;
  // Before the import: the provider may warn as it loads.
  const unroute = routeProviderConsole(services.log);
  try {
    const { buildIdp } = await import('./idp.js');
    const idp = await buildIdp(services, options);
    return { ...idp, async close() {
      await idp.close?.();
      unroute();
    } };
  } catch (err: unknown) {
    unroute();
    throw err;
  }
}

/** The authentication stage and every feature, in the build order the module header gives. */
async function buildFeatures(services: Services, options: ServerOptions): Promise<{ authentication: Authentication; features: readonly Feature[] }> {
  // An external provider (oidc.config) is in force when set; else the bundled one, when configured.
  const external = prepareSso(services);
  const idp = external === undefined ? await buildIdpIfConfigured(services, options.idp) : undefined;
  const sso = external ?? (idp !== undefined ? prepareBundledSso(services, idp) : undefined);
  const workload = prepareWorkload(services);
  // Personal API tokens need the bundled provider's connectors to check their users again.
  const ssoTokens = prepareSsoTokens(services, idp !== undefined && sso !== undefined ? { identities: idp.identities, issuer: sso.verifier.issuer } : undefined);
  const authentication = await buildAuthentication(services, [...(sso !== undefined ? [sso.verifier] : []), ssoTokens.verifier, workload.verifier, ...(options.verifiers?.(services) ?? [])]);
  // A logout with an SSO user's personal token deletes its record (session/logout.ts).
  authentication.logout.deleteStoredWith('ssoApiKey', ssoTokens.deleteOwn);
  const throttle = buildLoginThrottle(services);
  const features: readonly Feature[] = [
    buildAccounts(services, authentication, throttle),
    workload.feature(throttle, loginRecorder(authentication.sessions, services.trustedProxies, services.log)),
    ...(sso !== undefined ? [sso.feature(authentication)] : []),
    ssoTokens.feature,
    ssoChangeNotice(services),
    restartNotice({ settings: services.settings, log: services.log, registry: services.metrics.registry }, idp !== undefined),
    await buildExtensions(services, authentication),
    buildWeb(services),
    ...(idp !== undefined ? [idp] : []),
  ];
  return { authentication, features };
}

/** The raw request listener: a target Node cannot parse is refused, features' raw handlers go first, then the app. */
function requestListener(services: Services, authentication: Authentication, features: readonly Feature[], health: Router<AppState>): { listener: (req: IncomingMessage, res: ServerResponse) => void; routes: readonly DeclaredRoute[] } {
  const { log, metrics, settings } = services;
  const routers = [health, versionRoutes(svcVersion()), settingsRoutes(settings.current), ...features.flatMap((f) => f.routers ?? [])];
  const app = createApp({
    log,
    metrics,
    accessLogLevel: services.accessLogLevel,
    authenticate: authMiddleware(authentication.readCaller),
    audit: services,
    routers,
  });
  const koa = app.callback();
  const handlers = features.flatMap((f) => (f.handle !== undefined ? [f.handle] : []));
  const beforeDispatch = features.flatMap((f) => (f.beforeDispatch !== undefined ? [f.beforeDispatch] : []));
  function dispatch(req: IncomingMessage, res: ServerResponse, target: RequestTarget): void {
    for (let i = 0; i < handlers.length; i++) if ((handlers[i] as (typeof handlers)[number])(req, res, target)) return;
    void koa(req, res);
  }
  /** Runs the before-dispatch work from `from` on; only a request that has some waits for it. */
  function prepareThenDispatch(req: IncomingMessage, res: ServerResponse, target: RequestTarget, from: number): void {
    for (let i = from; i < beforeDispatch.length; i++) {
      const pending = (beforeDispatch[i] as BeforeDispatch)(req, res);
      if (pending !== undefined) {
        pending.then(
          () => prepareThenDispatch(req, res, target, i + 1),
          (err: unknown) => {
            log.error({ err }, 'work before dispatching a request failed; the request goes on without it');
            prepareThenDispatch(req, res, target, i + 1);
          },
        );
        return;
      }
    }
    dispatch(req, res, target);
  }
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    // Set first: every answer carries it, the provider's and a refusal's included (a proxied backend's own value wins).
    const hsts = transportSecurityFor(settings.current().url);
    if (hsts !== undefined) res.setHeader('Strict-Transport-Security', hsts);
    const target = requestTarget(req);
    if (target === undefined) return refuseTarget(req, res, log);
    prepareThenDispatch(req, res, target, 0);
  };
  return { listener, routes: routeTable(routers) };
}

function listenAddress(options: ServerOptions): ListenAddress {
  return { host: options.host, port: options.port, tls: options.tls !== undefined };
}

/** What serves once the configuration is applied: the features, the app and its routes. */
interface Serving {
  readonly authentication: Authentication;
  readonly features: readonly Feature[];
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
  readonly routes: readonly DeclaredRoute[];
}

async function buildServing(services: Services, options: ServerOptions, health: Router<AppState>): Promise<Serving> {
  const { authentication, features } = await buildFeatures(services, options);
  return { authentication, features, ...requestListener(services, authentication, features, health) };
}

/**
 * Listens at once. The features are built from the configuration only once it is applied whole
 * (start-gate.ts): at once on a store without problems, as before; else when the store is
 * fixed, while the waiting listener answers /healthz, /readyz and /metrics and 503 to the rest.
 */
export async function startServer(given: ServerOptions): Promise<RunningServer> {
  // Traced: each event carries the ids of the request that recorded it; untouched with tracing off.
  const options = tracingOn() && given.audit !== undefined ? { ...given, audit: withTraceIds(given.audit, activeTraceIds) } : given;
  const log = options.log ?? createLogger();
  const services = await buildServices(options, log);
  registerServerMetrics(services.metrics.registry, services);
  registerStateMetrics(services.metrics.registry, services.state);
  const gate = createStartGate(services);
  registerStartGateMetric(services.metrics.registry, gate);
  const { registry } = services.metrics;
  const exposition: MetricsExposition = { contentType: registry.contentType, text: options.metricsText?.(registry) ?? (() => registry.metrics()) };
  const publicMetrics = options.metricsListen === undefined;
  let serving: Serving | undefined;
  let buildFailure: string | undefined;
  const notServing = (): string | undefined => serving !== undefined ? undefined : (gate.reason() ?? buildFailure ?? 'the configuration is applied; this replica is starting its features');
  const readiness = createReadiness(services, notServing);
  const health = healthRoutes({ metrics: exposition, readiness, publicMetrics });
  const waiting = waitingListener({ readiness, reason: () => notServing() ?? 'starting', publicMetrics, metrics: exposition });
  const untraced = (req: IncomingMessage, res: ServerResponse): void => (serving?.listener ?? waiting)(req, res);
  // Chosen once: with tracing off the listener is the plain one and pays nothing per request.
  const listener = tracingOn() ? tracedListener(untraced, services.trustedProxies, options.tls !== undefined) : untraced;
  const webSockets: WebSocketRoute[] = [];
  let closing = false;
  const built = gate.applied.then(() => (closing ? undefined : buildServing(services, options, health))).then((ready) => {
    if (ready === undefined) return;
    webSockets.push(...ready.features.flatMap((f) => (f.webSocket !== undefined ? [f.webSocket] : [])));
    serving = ready;
  });
  if (gate.reason() === undefined) await built;
  else {
    built.catch((err: unknown) => {
      // Anyone reads the public sentence (/readyz, every 503); the error, which may quote a value, goes to the log only.
      buildFailure = "the configuration is applied, but this replica could not start its features; its log says why";
      log.error({ err }, `the configuration is applied, but this replica could not start: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
  const server: Server = options.tls
    ? createHttpsServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, listener)
    : createHttpServer(listener);
  // Above the usual 5 s of load balancers, so they close idle connections first, not us.
  server.keepAliveTimeout = 65_000;
  const upgrades = createUpgradeHandler({ webSockets, serveHttp: listener });
  server.on('upgrade', upgrades.listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const bound = { ...listenAddress(options), port };
  const url = listenUrl(bound);
  const configuredUrl = services.settings.current().url;
  log.info({ listen: url, url: configuredUrl, ...(options.kube !== undefined ? { store: 'kubernetes' } : { configDir: options.configDir }), state: services.state.kind }, 'svc listening');
  const mismatch = urlListenMismatch(configuredUrl, bound);
  if (mismatch !== undefined) log.warn({ listen: url, url: configuredUrl }, mismatch);
  const metricsServer = options.metricsListen === undefined ? undefined : await listenForMetrics(services, exposition, options.metricsListen);

  return {
    url,
    port,
    ...(metricsServer !== undefined ? { metricsUrl: metricsServer.url } : {}),
    services,
    get routes() {
      return serving?.routes ?? [];
    },
    async close(graceMs = 10_000) {
      closing = true;
      gate.close();
      await metricsServer?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() drops the connections idle at this moment; a keep-alive connection whose
      // request finishes later would otherwise hold shutdown until the grace deadline.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const timer = setTimeout(() => {
        server.closeAllConnections();
        upgrades.destroyAll();
      }, graceMs);
      await closed;
      clearInterval(sweep);
      clearTimeout(timer);
      upgrades.destroyAll();
      // A gate still shut never builds anything; one that opened may be building now.
      if (gate.reason() === undefined) await built.catch(() => undefined);
      for (const feature of [...(serving?.features ?? [])].reverse()) await feature.close?.();
      await serving?.authentication.close();
      services.settings.close();
      await services.store.close();
      await services.state.close();
    },
  };
}

/**
 * The bundled identity provider at /api/idp: oidc-provider, and beside it the login app, a small
 * Koa app serving the login pages (interactions.ts). A request is answered by one of the two,
 * each called on the raw request: the token endpoint, the busiest, passes through no Koa app but
 * the provider's own (docs/decisions.md).
 * - The provider is served as koa-mount would serve it: the URL under the mount in `req.url`,
 *   and the mount in `ctx.mountPath`, from which oidc-provider builds its links.
 * - The login app has its own `keys`: the provider's cookie keys, so that the interaction
 *   cookies it reads through the provider (interactionDetails) verify.
 * - `proxy`: with an https `url` behind a TLS-terminating ingress the provider must see https
 *   (secure cookies, https endpoints in discovery). Rather than trusting forwarded headers from
 *   anyone, the scheme and host are pinned to the configured `url`; with an http `url` no
 *   forwarded header is trusted, as in the rest of svc, and the Host header is replaced by
 *   `url`'s, so that a client's Host never names the provider's endpoints.
 * The provider is rebuilt when the keys in svc-secret change (rotate-keys); what it stores lives
 * in the state backend, so logins under way carry on.
 */
import type { LoginOutcomes } from '../session/login-outcomes.js';
import Koa from 'koa';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { RequestTarget } from '../http/request-target.js';
import { interactionRoutes, isLoginAppPath } from './login/interactions.js';
import { sealRoutes } from '../http/route-access.js';
import { createCookieKeys } from '../lib/cookie-keys.js';
import type { IdpKeys } from './keys.js';
import { createLoginFlow } from './login/login-flow.js';
import { pageErrors } from './login/page-errors.js';
import { issuerOf, MOUNT_PATH } from './issuer.js';
import type { PasswordGuard } from './login/password-guard.js';
import type { ClientSecretGuard } from './client-secret-guard.js';
import { createProvider, type ProviderDeps } from './provider.js';
import { publicClientBasic } from './public-client-basic.js';
import { pendingOf, requestSource } from './pending-source.js';
import { noRouteBody } from './route-spelling.js';

/** What the provider needs, and the password form's limits. */
export interface IdpAppDeps extends ProviderDeps {
  readonly passwordGuard: PasswordGuard;
  /** Throttles the clients' secret checks (./client-secret-guard.ts); none in unit tests. */
  readonly clientSecretGuard?: ClientSecretGuard;
  readonly outcomes?: LoginOutcomes;
}

export interface IdpApp {
  /** Serves a request whose path is /api/idp or under it. */
  handle(req: IncomingMessage, res: ServerResponse, target: RequestTarget): Promise<void>;
  /** New keys (rotation): a new provider over the same storage. */
  reload(keys: IdpKeys): void;
  /** The provider in force (a rotation builds a new one). */
  provider(): Provider;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createIdpApp(deps: IdpAppDeps): IdpApp {
  const secure = new URL(deps.url).protocol === 'https:';
  const host = new URL(deps.url).host;
  // One bound for the provider's records and the login app's transactions, whatever the keys.
  const pending = pendingOf(deps, deps.now ?? Date.now);
  function build(keys: IdpKeys): { provider: Handler; login: Handler; instance: Provider } {
    const provider: Provider = createProvider({ ...deps, keys, pending });
    provider.proxy = secure;
    deps.clientSecretGuard?.install(provider);
    const guard = deps.clientSecretGuard;
    provider.use(publicClientBasic(provider, guard === undefined ? {} : { countPresentedSecret: (id) => guard.countPresentedSecret(id) }));
    provider.use(function underMount(ctx, next) {
      (ctx as typeof ctx & { mountPath: string }).mountPath = MOUNT_PATH;
      return next();
    });
    provider.use(async function providerNoRoute(ctx, next) {
      await next();
      noRoute(ctx, `${MOUNT_PATH}${ctx.path === '/' ? '' : ctx.path}`);
    });
    const app = new Koa();
    app.keys = createCookieKeys(keys.cookie);
    app.proxy = secure;
    app.silent = true;
    app.use(pageErrors(deps.log));
    const flow = createLoginFlow({
      state: deps.state, accounts: deps.accounts, callbackUrl: `${issuerOf(deps.url)}/callback`, csrfKey: keys.cookie[0] as string, log: deps.log, ...(deps.outcomes !== undefined ? { outcomes: deps.outcomes } : {}),
      pending: pending.bound,
    });
    const sourceOf = (req: IncomingMessage): string => requestSource(req, pending.trustedProxies);
    const login = interactionRoutes({ provider: () => provider, flow, guard: deps.passwordGuard, connectors: deps.connectors, log: deps.log, sourceOf });
    // As in svc's own app (route-access.ts): a route without a declaration refuses everyone.
    for (const route of sealRoutes([login])) deps.log.error({ path: route.path, methods: route.methods }, `route ${route.methods.join(',')} ${route.path} declares no access; it refuses every caller until it does`);
    app.use(login.routes());
    app.use(function loginNoRoute(ctx) {
      noRoute(ctx, ctx.path);
    });
    return { provider: provider.callback(), login: app.callback(), instance: provider };
  }
  let handlers = build(deps.keys);
  return {
    handle(req, res, { path, query }) {
      if (secure) {
        req.headers['x-forwarded-proto'] = 'https';
        req.headers['x-forwarded-host'] = host;
      } else {
        // The provider builds its endpoints (discovery, redirects) from the host: `url`'s, never the client's.
        req.headers.host = host;
      }
      if (isLoginAppPath(path)) return handlers.login(req, res);
      const rest = path.slice(MOUNT_PATH.length) || '/';
      req.url = query === '' ? rest : `${rest}?${query}`;
      return handlers.provider(req, res);
    },
    provider: () => handlers.instance,
    reload(keys) {
      handlers = build(keys);
      deps.log.info({ kids: keys.signing.map((k) => k.kid) }, 'identity provider: keys reloaded');
    },
  };
}

/**
 * A path under the mount that neither app serves: the JSON 404 the rest of svc answers
 * (http/app.ts), not Koa's plain-text "Not Found".
 */
function noRoute(ctx: Koa.Context, path: string): void {
  if (ctx.status !== 404 || (ctx.body !== undefined && ctx.body !== null)) return;
  ctx.status = 404;
  ctx.body = noRouteBody(ctx.method, path);
}

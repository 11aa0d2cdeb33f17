/**
 * The identity provider's own small Koa app: its login pages (interactions.ts) before the
 * provider, mounted at /api/idp with koa-mount. It is its own app, served under svc's app, for
 * two settings that are per app in Koa and must differ from svc's:
 * - `keys`: koa-mount runs the provider with the parent's ctx, whose cookies are signed with the
 *   parent's keys; they must equal the provider's cookie keys (panva/node-oidc-provider#341).
 * - `proxy`: with an https `url` behind a TLS-terminating ingress the provider must see https
 *   (secure cookies, https endpoints in discovery). Rather than trusting forwarded headers from
 *   anyone, the scheme and host are pinned to the configured `url`; with an http `url` no
 *   forwarded header is trusted, as in the rest of svc.
 * The provider is rebuilt when the keys in svc-secret change (rotate-keys); what it stores lives
 * in the state backend, so logins under way carry on.
 */
import Koa from 'koa';
import mount from 'koa-mount';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import { interactionRoutes } from './interactions.js';
import type { IdpKeys } from './keys.js';
import { createLoginFlow } from './login-flow.js';
import { errorPage } from './pages.js';
import { setPageHeaders } from '../http/security-headers.js';
import { issuerOf, MOUNT_PATH } from './issuer.js';
import { createProvider, type ProviderDeps } from './provider.js';

/** The app needs what the provider needs, no more. */
export type IdpAppDeps = ProviderDeps;

export interface IdpApp {
  /** Serves a request whose URL starts with /api/idp. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** New keys (rotation): a new provider over the same storage. */
  reload(keys: IdpKeys): void;
}

export function createIdpApp(deps: IdpAppDeps): IdpApp {
  const secure = new URL(deps.url).protocol === 'https:';
  let provider: Provider;
  let mounted: Koa.Middleware;
  function build(keys: IdpKeys): Koa {
    provider = createProvider({ ...deps, keys });
    provider.proxy = secure;
    mounted = mount(MOUNT_PATH, provider);
    const app = new Koa();
    app.keys = [...keys.cookie];
    app.proxy = secure;
    app.silent = true;
    if (secure) app.use(pinToUrl(new URL(deps.url).host));
    app.use(pageErrors(deps.log));
    const flow = createLoginFlow({
      state: deps.state, accounts: deps.accounts, callbackUrl: `${issuerOf(deps.url)}/callback`, csrfKey: keys.cookie[0] as string, log: deps.log,
    });
    const routes = interactionRoutes({ provider: () => provider, flow, connectors: deps.connectors, log: deps.log });
    app.use(routes.routes());
    app.use((ctx, next) => mounted(ctx, next));
    return app;
  }
  let handler = build(deps.keys).callback();
  return {
    handle: (req, res) => handler(req, res),
    reload(keys) {
      handler = build(keys).callback();
      deps.log.info({ kids: keys.signing.map((k) => k.kid) }, 'identity provider: keys reloaded');
    },
  };
}

function pinToUrl(host: string): Koa.Middleware {
  return async function pinnedToUrl(ctx, next) {
    ctx.req.headers['x-forwarded-proto'] = 'https';
    ctx.req.headers['x-forwarded-host'] = host;
    await next();
  };
}

/** The login pages' own failures: a page for the person, the details in the log. */
function pageErrors(log: Logger): Koa.Middleware {
  return async function loginPageErrors(ctx, next) {
    try {
      await next();
    } catch (err: unknown) {
      log.error({ err, path: ctx.path }, 'identity provider: a login page failed');
      ctx.status = 500;
      ctx.type = 'html';
      setPageHeaders(ctx, 'idp');
      ctx.body = errorPage('Login failed', 'Something went wrong on our side. Go back to the application and try again.');
    }
  };
}

/**
 * The bundled provider's routes, each under one spelling (issue 55 review). oidc-provider's
 * router folds the case of a path (`/TOKEN`) and drops one trailing `/` (`/token/`) before it
 * looks a route up, while svc's own middlewares in front of it (the audit of introspection and
 * revocation, the trimming of introspection's answer, the size bound on authorization requests,
 * the session re-key at a resume) compare `ctx.path` with the route's spelling. So this gate,
 * the provider's first middleware, lets a request through only when its path spells, exactly and
 * for its method, the route the router would serve it; every other request is answered 404, as a
 * path the provider does not serve: every later check reads the path the router then serves.
 *
 * Rejected: making each check read the route the router matched. The router runs after every
 * middleware svc installs (provider.use), so a check would need the router's matching again, and
 * each new check would have to remember to do so. Rejected too: redirecting a variant to its
 * route's spelling: a client that spells a path another way is misconfigured, and a POST cannot
 * be redirected with its body.
 *
 * PROVIDER_ROUTES is the router's table for svc's configuration (provider.ts: user info,
 * revocation, introspection, RP-initiated logout and the device flow on; registration, pushed
 * requests, CIBA and POST at /auth off), from oidc-provider's lib/helpers/initialize_app.js. A
 * route it lacks answers 404 under every spelling (fails closed); test/idp/route-spelling.test.ts
 * checks each entry against the provider's own paths (pathFor) and router.
 */

/** A route as the router registers it: literal segments, and `:name` for a parameter. */
export interface ProviderRoute {
  readonly method: 'GET' | 'POST' | 'OPTIONS';
  readonly path: string;
  /** oidc-provider's name of the route (Provider#pathFor). */
  readonly name: string;
}

export const PROVIDER_ROUTES: readonly ProviderRoute[] = [
  { method: 'GET', path: '/auth', name: 'authorization' },
  { method: 'GET', path: '/auth/:uid', name: 'resume' },
  { method: 'GET', path: '/me', name: 'userinfo' },
  { method: 'POST', path: '/me', name: 'userinfo' },
  { method: 'OPTIONS', path: '/me', name: 'cors.userinfo' },
  { method: 'POST', path: '/token', name: 'token' },
  { method: 'OPTIONS', path: '/token', name: 'cors.token' },
  { method: 'GET', path: '/jwks', name: 'jwks' },
  { method: 'OPTIONS', path: '/jwks', name: 'cors.jwks' },
  { method: 'GET', path: '/.well-known/oauth-authorization-server', name: 'discovery' },
  { method: 'OPTIONS', path: '/.well-known/oauth-authorization-server', name: 'cors.discovery' },
  { method: 'GET', path: '/.well-known/openid-configuration', name: 'discovery' },
  { method: 'OPTIONS', path: '/.well-known/openid-configuration', name: 'cors.discovery' },
  { method: 'POST', path: '/token/revocation', name: 'revocation' },
  { method: 'OPTIONS', path: '/token/revocation', name: 'cors.revocation' },
  { method: 'POST', path: '/token/introspection', name: 'introspection' },
  { method: 'OPTIONS', path: '/token/introspection', name: 'cors.introspection' },
  { method: 'POST', path: '/session/end/confirm', name: 'end_session_confirm' },
  { method: 'GET', path: '/session/end', name: 'end_session' },
  { method: 'GET', path: '/session/end/success', name: 'end_session_success' },
  { method: 'POST', path: '/device/auth', name: 'device_authorization' },
  { method: 'OPTIONS', path: '/device/auth', name: 'cors.device_authorization' },
  { method: 'GET', path: '/device', name: 'code_verification' },
  { method: 'POST', path: '/device', name: 'code_verification' },
  { method: 'GET', path: '/device/:uid', name: 'device_resume' },
];

/** The router serves a GET route to HEAD too. */
const methodOf = (method: string): string => (method === 'HEAD' ? 'GET' : method);

const isParameter = (segment: string): boolean => segment.startsWith(':');

/** `path` spells `route` exactly: the same literal segments, a non-empty value for each parameter. */
function spells(route: ProviderRoute, path: string): boolean {
  if (!route.path.includes('/:')) return path === route.path;
  const want = route.path.split('/');
  const got = path.split('/');
  return want.length === got.length && want.every((segment, i) => (isParameter(segment) ? got[i] !== '' : segment === got[i]));
}

/**
 * Whether the router could take `path` for `route` once folded: case-insensitive literals. A
 * superset of the router's fold (which leaves non-ASCII letters that upper-case to ASCII alone),
 * so that a doubt refuses.
 */
function foldsTo(route: ProviderRoute, path: string): boolean {
  const want = route.path.split('/');
  const got = path.split('/');
  return want.length === got.length && want.every((segment, i) => (isParameter(segment) ? got[i] !== '' : segment.toUpperCase() === got[i]?.toUpperCase()));
}

/**
 * The route `path` spells exactly for `method`, or undefined: none, or another route of the same
 * method the router might pick for it instead (a folded literal that also matches).
 */
export function routeSpelledBy(method: string, path: string): ProviderRoute | undefined {
  const verb = methodOf(method);
  const candidates = PROVIDER_ROUTES.filter((route) => route.method === verb);
  const spelled = candidates.find((route) => spells(route, path));
  if (spelled === undefined) return undefined;
  return candidates.some((route) => route !== spelled && foldsTo(route, path)) ? undefined : spelled;
}

/** The 404 of a path under the mount that nothing serves, as the rest of svc answers it (http/app.ts). */
export function noRouteBody(method: string, path: string): { error: 'not_found'; message: string } {
  return { error: 'not_found', message: `no route for ${method} ${path}` };
}

interface GateContext {
  readonly method: string;
  readonly path: string;
  status: number;
  body: unknown;
}

/**
 * The provider middleware (provider.use, the first) that answers 404 to a request whose path is
 * not the exact spelling of a route for its method. `mountPath` is only for the message.
 */
export function onlyRouteSpellings(mountPath: string) {
  return function routeSpelling(ctx: GateContext, next: () => Promise<void>): Promise<void> {
    if (routeSpelledBy(ctx.method, ctx.path) !== undefined) return next();
    ctx.status = 404;
    ctx.body = noRouteBody(ctx.method, `${mountPath}${ctx.path === '/' ? '' : ctx.path}`);
    return Promise.resolve();
  };
}

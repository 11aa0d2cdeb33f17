/**
 * Who may call a route, declared with the route itself (docs/routes.md lists every one).
 *
 * Each route's first middleware is its gate, made by `allow()`: it decides on the route the
 * router matched, so no decision reads a path the router reads another way (an upper-case
 * `/API/`, a trailing slash, an encoded character). The routers are case-sensitive
 * (`declaredRouter`), and a route registered without a gate is given one that refuses everyone
 * when the app is assembled (`sealRoutes`): a forgotten declaration fails closed.
 *
 * The three kinds of caller:
 * - `anyone`: anonymous or any caller; a session confined to enrolment (`users.mfa.required`)
 *   keeps its principal, so the route may only show or end the caller's own session with it.
 * - `enrolment`: any caller, a confined session included: enrolling the factor the session lacks.
 * - `caller`: a caller with its full rights: 401 without a valid token, 403
 *   second_factor_enrolment_required for a confined session. What else it needs (a right on
 *   the object) is the domain's to decide and is written in `needs` for the route list.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import { PermissionDenied, SecondFactorEnrolmentRequired } from '../errors.js';
import { requirePrincipal } from './auth.js';
import type { AppState } from './state.js';

export type Who = 'anyone' | 'enrolment' | 'caller';

export interface RouteAccess {
  readonly who: Who;
  /** What the route needs beyond the caller, in words for docs/routes.md (a right, a secret). */
  readonly needs?: string;
}

/** What a gate reads of a request: the caller, when the app reads one (the provider's login app does not: no caller). */
type CallerState = Pick<AppState, 'principal' | 'authError'>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a gate sits in routers of any state type
type Gate = Koa.Middleware<any>;

const declarations = new WeakMap<Gate, RouteAccess>();

/** Throws the refusal the declaration gives to the request's caller, if any. */
export function decide(access: RouteAccess, state: Partial<CallerState>): void {
  if (access.who === 'anyone') return;
  const principal = requirePrincipal({ state: state as AppState });
  if (access.who === 'caller' && principal.enrolmentOnly === true) throw new SecondFactorEnrolmentRequired();
}

/** A route's gate: the first middleware of every route (`router.get(path, allow('caller'), handler)`). */
export function allow(who: Who, needs?: string): Gate {
  const access: RouteAccess = needs === undefined ? { who } : { who, needs };
  const gate: Gate = async function routeGate(ctx, next) {
    decide(access, ctx.state as Partial<CallerState>);
    await next();
  };
  declarations.set(gate, access);
  return gate;
}

/** The declaration of a gate made by allow(); undefined for any other middleware. */
export function accessOf(middleware: unknown): RouteAccess | undefined {
  return declarations.get(middleware as Gate);
}

/** A router whose matching is case-sensitive, as every router of the app is. */
export function declaredRouter<S = AppState>(prefix?: string): Router<S> {
  return new Router<S>({ sensitive: true, ...(prefix !== undefined ? { prefix } : {}) });
}

export interface DeclaredRoute {
  /** The pattern as the router matches it, prefix included: `/api/v1/account/:name`. */
  readonly path: string;
  /** Upper case, HEAD included where the router adds it to GET. */
  readonly methods: readonly string[];
  /** Undefined: no gate (sealRoutes gives it one that refuses everyone). */
  readonly access: RouteAccess | undefined;
}

/** Every route of the routers, with its declaration, in registration order. */
export function routeTable<S>(routers: readonly Router<S>[]): readonly DeclaredRoute[] {
  return routers.flatMap((router) =>
    router.stack
      .filter((layer) => layer.methods.length > 0)
      .map((layer) => ({ path: String(layer.path), methods: [...layer.methods], access: accessOf(layer.stack[0]) })),
  );
}

const undeclared: Gate = function undeclaredRoute() {
  throw new PermissionDenied('this route declares no access, so it refuses everyone');
};

/**
 * Gives every route without a gate one that refuses everyone, and a router that is not
 * case-sensitive is an error: the app is not assembled on a router that matches paths the
 * gates were not written for. Returns the routes it sealed, for the log.
 */
export function sealRoutes<S>(routers: readonly Router<S>[]): readonly DeclaredRoute[] {
  const sealed: DeclaredRoute[] = [];
  for (const router of routers) {
    if (router.opts.sensitive !== true) throw new Error(`a router of the app matches paths case-insensitively (prefix '${router.opts.prefix ?? ''}'): build it with declaredRouter()`);
    for (const layer of router.stack) {
      if (layer.methods.length === 0 || accessOf(layer.stack[0]) !== undefined || layer.stack[0] === undeclared) continue;
      layer.stack.unshift(undeclared);
      sealed.push({ path: String(layer.path), methods: [...layer.methods], access: undefined });
    }
  }
  return sealed;
}

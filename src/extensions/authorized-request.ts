/**
 * The one object a proxied request is decided on and then sent as: the proxy forwards exactly the
 * request it authorized (issue 51). readProxiedRequest() reads the client's request once: method,
 * extension, rest of the path, query, the application it names, the client's headers a backend
 * may see (headers.ts), and where it came from. authorize() runs the checks (access.ts) on that
 * object and returns it with what they chose: the route, the backend path, and the headers with
 * ours added. Both objects are frozen. The gateway (HTTP, with forward.ts), the WebSocket relay
 * and the recheck of an open relay decide on and send only these objects; none of them reads
 * req.method, req.url or req.headers after the decision.
 *
 * Why: the review's high findings were one class, a check that decides on one thing while the
 * code uses another. The WebSocket relay asked the rights for `get` and then forwarded the
 * client's own method, so a caller with only a `get` line ran `DELETE` on the backend by adding
 * `Upgrade: websocket`. Passing a method to the check and reading req.method again to send the
 * request is that pattern, so the method, path and headers exist here once.
 *
 * A WebSocket handshake must be a GET (RFC 6455 section 4.1): any other method with
 * `Upgrade: websocket` is refused here (400), before authentication and the rights are asked.
 */
import type { IncomingMessage } from 'node:http';
import { InvalidRequest, type SvcError } from '../errors.js';
import { declaresBody } from '../http/body.js';
import { hostOf, protocolOf } from '../http/caller.js';
import { printable } from '../lib/printable.js';
import type { Principal } from '../principal.js';
import type { Rights } from '../rbac/rights.js';
import { APPLICATION_HEADER, routeExtensionRequest, type AccessSettings, type ExtensionRoute } from './access.js';
import { handshakeApplication } from './handshake-application.js';
import { clientHeaders, withOurHeaders } from './headers.js';
import { assertionForRoute, type IdentityAssertions } from './identity-assertion.js';
import { backendTarget, forwardContextOf } from './target.js';

/** A plain HTTP request, or a WebSocket handshake (websocket.ts). */
export type RequestKind = 'request' | 'handshake';

/** The method RFC 6455 requires of a handshake, and the only one relayed as one. */
export const HANDSHAKE_METHOD = 'GET';

/** Where under /api/v1/extensions/ the request goes, as the server split its target (target.ts). */
export interface ExtensionTarget {
  readonly name: string;
  /** The raw path after `/api/v1/extensions/<name>`: `` or `/...`. */
  readonly rest: string;
  readonly query: string;
}

/** The client's request as the checks read it and the backend gets it, read once. */
export interface ProxiedRequest {
  readonly kind: RequestKind;
  /** As sent: what the rights are asked for (in lower case) and what the backend gets. */
  readonly method: string;
  readonly name: string;
  readonly rest: string;
  /** The query for the backend: a handshake's application parameter is taken out (handshake-application.ts). */
  readonly query: string;
  /** The application the request names, or why its way of naming one was refused (raised by access.ts). */
  readonly application: string | InvalidRequest | undefined;
  /** The client's headers a backend may see, flat `[name, value, ...]` (headers.ts). */
  readonly headers: readonly string[];
  /** The Host the client asked for, its address and the connection's protocol (for X-Forwarded-*). */
  readonly host: string;
  readonly clientIp: string;
  readonly protocol: string;
  /** A declared body (forwarded as the client streams it) with its Content-Length; null for none. */
  readonly body: { readonly length: number | undefined } | null;
}

/** A ProxiedRequest the checks passed, with what they chose: what is sent to the backend, and nothing else. */
export interface AuthorizedRequest {
  /** The object the checks decided on. */
  readonly request: ProxiedRequest;
  readonly route: ExtensionRoute;
  /** request.method, named here since the forwarders send it. */
  readonly method: string;
  /** The backend service's URL (parsed once per configuration, shared: only read it). */
  readonly url: URL;
  /** The backend path and query. */
  readonly path: string;
  /** Every header sent to the backend: the client's kept ones, then ours (and Host for a handshake). */
  readonly headers: readonly string[];
}

/** Who the caller is, as http/caller.ts read it. */
export interface CallerOutcome {
  readonly principal: Principal | undefined;
  readonly authError: SvcError | undefined;
}

export type DecidingRights = Pick<Rights, 'allows'> & Partial<Pick<Rights, 'explain'>>;

/** Reads the client's request once; a handshake that is not a GET is refused (400) here. */
export function readProxiedRequest(req: IncomingMessage, target: ExtensionTarget, kind: RequestKind): ProxiedRequest {
  const method = req.method ?? HANDSHAKE_METHOD;
  if (kind === 'handshake' && method !== HANDSHAKE_METHOD) {
    throw new InvalidRequest(`a WebSocket handshake must be a GET (RFC 6455), not ${printable(method)}: send ${printable(method)} requests without Upgrade: websocket`);
  }
  const header = req.headers[APPLICATION_HEADER];
  const named = typeof header === 'string' ? header : undefined;
  // Only a handshake may name its application in the query (handshake-application.ts says why).
  const { application, query } = kind === 'handshake' ? handshakeApplication(named ?? '', target.query) : { application: named, query: target.query };
  const length = req.headers['content-length'];
  const body = kind === 'request' && declaresBody(req.headers) ? Object.freeze({ length: length === undefined ? undefined : Number(length) }) : null;
  const request: ProxiedRequest = {
    kind,
    method,
    name: target.name,
    rest: target.rest,
    query,
    application,
    headers: Object.freeze(clientHeaders(req.rawHeaders, req.headers)),
    host: hostOf(req.headers),
    clientIp: req.socket.remoteAddress ?? '',
    protocol: protocolOf(req.socket),
    body,
  };
  return Object.freeze(request);
}

/** The checks (access.ts) on the request: its extension, caller, application and method. Throws what they refuse. */
export function decide(request: ProxiedRequest, caller: CallerOutcome, settings: AccessSettings, rights: DecidingRights): ExtensionRoute {
  return routeExtensionRequest({ name: request.name, principal: caller.principal, authError: caller.authError, application: request.application, method: request.method }, settings, rights);
}

/** decide(), then what is sent: the backend path and every header, frozen with the request they were decided for. */
export function authorize(request: ProxiedRequest, caller: CallerOutcome, settings: AccessSettings, rights: DecidingRights, assertions: IdentityAssertions | undefined): AuthorizedRequest {
  const route = decide(request, caller, settings, rights);
  const { url, path } = backendTarget(route, request.rest, request.query);
  const handshake = request.kind === 'handshake';
  const headers = withOurHeaders(request.headers, forwardContextOf(route, request.host, request.clientIp, request.protocol, handshake, assertionForRoute(assertions, route)));
  // node:http is given the backend's Host explicitly; undici sets it from the pool's origin.
  if (handshake) headers.push('host', url.host);
  const authorized: AuthorizedRequest = { request, route, method: request.method, url, path, headers: Object.freeze(headers) };
  return Object.freeze(authorized);
}

/**
 * What a backend is told and what the browser gets back (DESIGN §6). Inbound headers are
 * filtered, never passed as received: credentials (Cookie, Authorization), hop-by-hop headers
 * (and every header the Connection header names), `Expect` (Node has answered 100-continue; undici
 * refuses it), every client-sent `X-Forwarded-*`, `Forwarded`, `X-Real-IP` and `Svc-*` header,
 * and the identity headers other authenticating proxies send (X-WEBAUTH-USER, Remote-User,
 * X-Auth-Request-*, X-User, X-Remote-Group, ...: a backend may trust those) go, always, before ours are added. So an identity header can never be spoofed, even when
 * our derived value is empty (the gap in the reference implementation).
 *
 * Names are compared in lower case with `.` and `_` read as `-`: CGI, WSGI, PHP and Rack backends
 * turn `-` and `_` into `HTTP_SVC_USERNAME`, so a client's `Svc_Username` would otherwise land on
 * ours, and some frameworks and gateways map `.` the same way (HTTP allows it in a name, and Node
 * passes `Svc.Identity.Assertion` through: issue 51, finding 8). On a WebSocket
 * upgrade we send `Connection: upgrade` and `Upgrade: websocket` ourselves: the client's
 * Connection value could name (and so make the backend drop) headers we add.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { PROVIDER_COOKIE_NAMES } from '../idp/cookie-names.js';

/** Hop-by-hop (RFC 9110 §7.6.1) plus what must not be forwarded as received. */
const DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'host', 'expect', 'cookie', 'authorization', 'forwarded', 'x-real-ip', 'http2-settings',
  // Read by common backends and front proxies as the user or the client address (Apache's and
  // Spring's remote user, Akamai's and Cloudflare's client IP) or as the path to serve (IIS URL
  // Rewrite, Symfony, Zend): a client must not choose them.
  'x-remote-user', 'true-client-ip', 'x-client-ip', 'x-original-url', 'x-rewrite-url',
  // The user as authenticating front proxies tell it to the apps behind them, which trust it:
  // Authelia and Authentik (Remote-*), oauth2-proxy-style apps (X-User, X-Email), Kong
  // (X-Consumer-*, X-Authenticated-*), Apache and Spring (X-Auth-User, X-Proxy-User).
  'x-user', 'x-email', 'x-user-email', 'x-user-name', 'x-user-groups', 'x-groups', 'x-auth-user', 'x-auth-username',
  'x-auth-email', 'x-auth-groups', 'x-proxy-user', 'x-authenticated-user', 'x-authenticated-userid', 'x-authenticated-groups',
  'x-consumer-username', 'x-consumer-id', 'x-consumer-custom-id', 'x-credential-identifier', 'x-preferred-username',
  // Another method than the one sent, which Symfony, Laravel, Rails (Rack::MethodOverride) and
  // Express's method-override run instead of it: the rights are asked for the method sent, so a
  // `post` line would otherwise DELETE (a right is asked for the request that is sent).
  'x-http-method-override', 'x-http-method', 'x-method-override',
]);
/**
 * Header families of the same kind, by prefix: Grafana's auth proxy (X-WEBAUTH-USER, -EMAIL,
 * -NAME, -ROLE, -GROUPS), oauth2-proxy (X-Auth-Request-User, -Email, -Preferred-Username,
 * -Groups, -Access-Token), the Kubernetes front proxy and Apache (X-Remote-User, -Group,
 * -Extra-*), Authelia and Authentik (Remote-User, -Groups, -Name, -Email), AWS ALB
 * (X-Amzn-Oidc-*), Google IAP (X-Goog-Authenticated-User-*, X-Goog-Iap-*), Azure App Service
 * (X-MS-Client-Principal*), Cloudflare Access (Cf-Access-*). X-Forwarded-User, -Email, -Groups
 * and -Preferred-Username go with every X-Forwarded-* header.
 */
const DROPPED_PREFIXES = [
  'x-forwarded-', 'svc-', 'x-webauth-', 'x-auth-request-', 'x-remote-', 'remote-', 'x-amzn-oidc-', 'x-goog-authenticated-',
  'x-goog-iap-', 'x-ms-client-principal', 'cf-access-', 'x-authentik-',
];
const RESPONSE_DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate']);
/**
 * A backend must not plant a cookie of svc's (svc.token, svc.oauthstate: every svc cookie is
 * named `svc.*`) or of its identity provider on our origin: those names, and their variants
 * (`<name>.sig`, `<name>.legacy`), are refused in any case.
 */
const OUR_COOKIE = new RegExp(`^\\s*(svc\\.|(${Object.values(PROVIDER_COOKIE_NAMES).join('|')})(\\.[^=]*)?\\s*=)`, 'i');

/** Whether a Set-Cookie value sets a cookie of svc or of its identity provider. */
export function isOurCookie(setCookie: string): boolean {
  return OUR_COOKIE.test(setCookie);
}

export interface ForwardedUser {
  readonly username: string;
  readonly displayName?: string;
  readonly groups: readonly string[];
}

export interface ForwardContext {
  /** The original Host the client asked for. */
  readonly host: string;
  readonly clientIp: string;
  readonly proto: 'http' | 'https';
  readonly user: ForwardedUser;
  /** Validated `<namespace>/<name>` and its project, when the request named an application. */
  readonly application?: { readonly name: string; readonly project: string };
  readonly upgrade?: boolean;
  /** The signed identity (identity-assertion.ts), for extensions that asked for one. */
  readonly assertion?: string;
}

/** Lower case, `.` and `_` read as `-` (see the module comment). */
function canonicalName(name: string): string {
  const lower = name.toLowerCase();
  // includes() first: most names hold neither, and this runs for every header of every request.
  return lower.includes('_') || lower.includes('.') ? lower.replace(/[._]/g, '-') : lower;
}

function isDropped(name: string, named: ReadonlySet<string> | undefined): boolean {
  if (DROPPED.has(name)) return true;
  for (const prefix of DROPPED_PREFIXES) if (name.startsWith(prefix)) return true;
  return named?.has(name) ?? false;
}

/** Header names listed in a Connection header, which are hop-by-hop too. */
function connectionNamed(value: string | string[] | undefined): ReadonlySet<string> | undefined {
  if (value === undefined || value === 'keep-alive' || value === 'close') return undefined; // the usual values, cheaply
  const names = (Array.isArray(value) ? value.join(',') : value).split(',').map((n) => canonicalName(n.trim())).filter((n) => n !== '' && n !== 'close' && n !== 'keep-alive' && n !== 'upgrade');
  return names.length === 0 ? undefined : new Set(names);
}

/**
 * The request headers for the backend as a flat `[name, value, ...]` list, from the client's raw
 * headers (case and order kept). Host is left to the HTTP client: it sets the backend's.
 */
export function forwardHeaders(rawHeaders: readonly string[], parsed: IncomingHttpHeaders, context: ForwardContext): string[] {
  return withOurHeaders(clientHeaders(rawHeaders, parsed), context);
}

/** The client's headers a backend may see, as a new flat list: every dropped one left out (module comment). */
export function clientHeaders(rawHeaders: readonly string[], parsed: IncomingHttpHeaders): string[] {
  const named = connectionNamed(parsed.connection);
  const out: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (!isDropped(canonicalName(name), named)) out.push(name, rawHeaders[i + 1] as string);
  }
  return out;
}

/** `kept` (clientHeaders' list, not changed) followed by ours, as a new list. */
export function withOurHeaders(kept: readonly string[], context: ForwardContext): string[] {
  const out = kept.slice();
  if (context.upgrade === true) out.push('connection', 'upgrade', 'upgrade', 'websocket');
  out.push('x-forwarded-host', context.host, 'x-forwarded-for', context.clientIp, 'x-forwarded-proto', context.proto);
  // The stable id (what rights name) and, apart, the name to show (docs/extensions.md).
  out.push('svc-username', headerSafe(context.user.username));
  out.push('svc-user-display-name', headerSafe(context.user.displayName ?? context.user.username));
  const groups = context.user.groups.map(headerSafe).filter((g) => g !== '' && !g.includes(','));
  if (groups.length > 0) out.push('svc-user-groups', groups.join(','));
  if (context.application !== undefined) {
    out.push('svc-application-name', context.application.name, 'svc-project-name', headerSafe(context.application.project));
  }
  if (context.assertion !== undefined) out.push('svc-identity-assertion', context.assertion);
  return out;
}

/** Printable ASCII as is; anything else (non-ASCII names, control characters) percent-encoded. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : value.replace(/[^\x20-\x7e]/gu, encodeChar);
}

function encodeChar(c: string): string {
  try {
    return encodeURIComponent(c);
  } catch {
    return '%EF%BF%BD'; // a lone surrogate: U+FFFD
  }
}

export interface ResponseHeaderList {
  /** Flat `[name, value, ...]` for res.writeHead(), case and order as the backend sent them. */
  readonly list: string[];
  readonly contentLength: number | undefined;
  readonly eventStream: boolean;
}

/**
 * The backend's response headers for the browser, from its raw headers (undici's buffers, or
 * node:http's strings for a WebSocket handshake) to the flat list res.writeHead() takes:
 * hop-by-hop headers dropped (with those its Connection header names, which may be internal),
 * our cookie protected, plus `extra` pairs (our X-Request-Id, a Connection of our own) unless
 * the backend sent that name itself, plus the extension's Content-Security-Policy whatever the
 * backend sent (browsers enforce every policy they get, so the backend's can only narrow it). On a 101 (`upgrade`) the Upgrade header is kept: the
 * client's WebSocket library checks it. Also reads what the relay needs to know.
 */
export function responseHeaderList(raw: readonly (Buffer | string)[], extra: readonly string[], upgrade = false, contentSecurityPolicy?: string): ResponseHeaderList {
  const list: string[] = [];
  let contentLength: number | undefined;
  let eventStream = false;
  let connection: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = latin1(raw[i] as Buffer | string);
    const value = latin1(raw[i + 1] as Buffer | string);
    const lower = name.toLowerCase();
    if (RESPONSE_DROPPED.has(lower) && !(upgrade && lower === 'upgrade')) {
      if (lower === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
      continue;
    }
    if (lower === 'set-cookie' && isOurCookie(value)) continue;
    if (lower === 'content-length') contentLength = Number(value);
    else if (lower === 'content-type') eventStream = value.startsWith('text/event-stream');
    list.push(name, value);
  }
  const named = connectionNamed(connection);
  const kept = named === undefined ? list : withoutNamed(list, named);
  for (let i = 0; i + 1 < extra.length; i += 2) {
    const name = extra[i] as string;
    if (!hasHeader(kept, name)) kept.push(name, extra[i + 1] as string);
  }
  if (contentSecurityPolicy !== undefined) kept.push('content-security-policy', contentSecurityPolicy);
  return { list: kept, contentLength: Number.isSafeInteger(contentLength) ? contentLength : undefined, eventStream };
}

function latin1(text: Buffer | string): string {
  return typeof text === 'string' ? text : text.toString('latin1');
}

function withoutNamed(list: readonly string[], named: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < list.length; i += 2) {
    if (!named.has(canonicalName(list[i] as string))) out.push(list[i] as string, list[i + 1] as string);
  }
  return out;
}

function hasHeader(list: readonly string[], name: string): boolean {
  const lower = name.toLowerCase();
  for (let i = 0; i < list.length; i += 2) if ((list[i] as string).toLowerCase() === lower) return true;
  return false;
}

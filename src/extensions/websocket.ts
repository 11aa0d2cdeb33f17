/**
 * WebSocket upgrades under /api/v1/extensions/<name>/…, after the same checks as plain requests:
 * the app's own authenticate middleware runs on a Koa context made for the upgrade request, then
 * access.ts, path.ts and headers.ts exactly as for HTTP. (Server-sent events need nothing here:
 * they are plain HTTP responses streamed by forward.ts.) upgrade.ts decides which upgrades come here.
 *
 * One check is WebSocket-only: when the caller signed in with the `svc.token` cookie, the
 * Origin must be svc's own (the configured `url`, or the Host asked for). Browsers send cookies on
 * WebSocket handshakes and the Same-Origin Policy does not apply to them, so without it any page
 * on a same-site host (SameSite=Lax allows sibling subdomains) could open a socket as the user:
 * cross-site WebSocket hijacking. A bearer token cannot be planted that way, so it needs no check.
 * That check is also why a handshake, and only a handshake, may name its application in the query
 * (handshake-application.ts): browsers cannot set headers on `new WebSocket()`.
 *
 * The upgrade is relayed with node:http rather than http-proxy-3's `ws()`: that re-parses the
 * outgoing path with WHATWG URL (undoing our canonical path), copies `req.headers` wholesale
 * and drops `servername` from the TLS options. A dedicated socket per upgrade (agent: false) is
 * what a WebSocket is anyway.
 */
import { request as httpRequest, STATUS_CODES, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type Koa from 'koa';
import { PermissionDenied, SvcError } from '../errors.js';
import { bearerToken } from '../http/auth.js';
import { errorReply, STATUS } from '../http/errors.js';
import { requestIdFrom } from '../http/request-id.js';
import { isOwnOrigin } from '../http/same-origin.js';
import type { AppState } from '../http/state.js';
import { printable } from '../lib/printable.js';
import { APPLICATION_HEADER, findExtension, routeExtensionRequest } from './access.js';
import { mapBackendError, MAX_TIMER_MS } from './forward.js';
import { handshakeApplication } from './handshake-application.js';
import { forwardHeaders, responseHeaderList } from './headers.js';
import { CONNECT_TIMEOUT_MS } from './pools.js';
import { CLIENT_GONE, type ExtensionMetrics } from './metrics.js';
import type { OpenRelays } from './open-relays.js';
import type { ExtensionProxyDeps } from './proxy.js';
import { backendTarget, forwardContextOf } from './target.js';
import { tlsOptionsFor } from './tls.js';

export interface WebSocketDeps extends ExtensionProxyDeps {
  readonly metrics: ExtensionMetrics;
  readonly relays: OpenRelays;
  readonly authenticate: Koa.Middleware<AppState>;
  /** Keeps a backend socket for shutdown, which must be able to cut a live relay. */
  readonly track: (socket: Socket) => void;
}

type Context = Koa.ParameterizedContext<AppState>;
type Target = { readonly name: string; readonly rest: string };


/** Relays one WebSocket upgrade; every failure is answered on the socket, which then closes. */
export function relayWebSocket(deps: WebSocketDeps, ctx: Context, target: Target, head: Buffer, socket: Socket): void {
  const requestId = requestIdFrom(ctx.req.headers['x-request-id']);
  ctx.state.requestId = requestId;
  ctx.state.log = deps.log.child({ requestId });
  const start = performance.now();
  let status = CLIENT_GONE;
  const extension = findExtension(deps.settings.current(), target.name)?.name;
  if (extension !== undefined) {
    socket.once('close', () => deps.metrics.observe({ extension, status, seconds: (performance.now() - start) / 1000, bytesIn: 0, bytesOut: 0 }));
  }
  relay(deps, ctx, target, head, socket).then(
    (sent) => {
      status = sent;
    },
    (err: unknown) => {
      status = writeError(socket, err, ctx);
    },
  );
}

/** Checks, then opens the backend connection; resolves with the status sent to the client. */
async function relay(deps: WebSocketDeps, ctx: Context, target: Target, head: Buffer, socket: Socket): Promise<number> {
  await deps.authenticate(ctx, () => Promise.resolve());
  // The client may have left while we awaited; its 'close' has fired, so nothing would end the backend side.
  if (socket.destroyed) return CLIENT_GONE;
  const settings = deps.settings.current();
  const { application, query } = handshakeApplication(ctx.get(APPLICATION_HEADER), ctx.querystring);
  const route = routeExtensionRequest({ name: target.name, principal: ctx.state.principal, authError: ctx.state.authError, application }, settings, deps.rights);
  checkOrigin(ctx, settings.url);
  const { url, path } = backendTarget(route, target.rest, query);
  const req = ctx.req;
  const headers = forwardHeaders(req.rawHeaders, req.headers, forwardContextOf(route, ctx.host, ctx.ip, ctx.protocol, true));
  headers.push('host', url.host);
  const idleMs = route.extension.idleConnTimeoutMs;
  // From here the backend's idle timeout answers a handshake that stalls (408), so the client's goes.
  socket.setTimeout(0);
  const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)({
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port,
    method: req.method,
    path,
    headers,
    agent: false,
    ...(tlsOptionsFor(route.backend) ?? {}),
  });
  limitWaits(outgoing, url.protocol === 'https:', idleMs);
  const failed = { extension: route.extension.name, origin: url.origin, idleMs };
  return new Promise<number>((resolve, reject) => {
    outgoing.on('error', (err) => reject(mapBackendError(err, failed, ctx.state.log)));
    outgoing.on('upgrade', (res, backend, backendHead) => {
      deps.track(backend);
      backend.setTimeout(0);
      socket.write(statusBlock(101, res.statusMessage, responseHeaderList(res.rawHeaders, ['connection', 'upgrade', 'X-Request-Id', ctx.state.requestId], true).list));
      if (backendHead.length > 0) socket.write(backendHead);
      if (head.length > 0) backend.write(head);
      backend.on('error', () => socket.destroy());
      socket.on('error', () => backend.destroy());
      backend.on('close', () => socket.destroy());
      socket.on('close', () => backend.destroy());
      backend.pipe(socket).pipe(backend);
      const forget = deps.relays.add({
        // No token kept (none should be missing here) fails the next check: the relay is cut.
        token: ctx.state.token ?? '',
        tokenId: route.principal.tokenId,
        admit: (principal) => void routeExtensionRequest({ name: target.name, principal, authError: undefined, application }, deps.settings.current(), deps.rights),
        cut: () => {
          backend.destroy();
          socket.destroy();
        },
      });
      socket.once('close', forget);
      resolve(101);
    });
    outgoing.on('response', (res) => {
      // The backend declined the upgrade: relay its answer, then close.
      socket.write(statusBlock(res.statusCode ?? 502, res.statusMessage, responseHeaderList(res.rawHeaders, ['connection', 'close', 'X-Request-Id', ctx.state.requestId], false, route.extension.contentSecurityPolicy).list));
      socket.once('finish', () => socket.destroy());
      res.pipe(socket);
      res.on('error', () => socket.destroy());
      resolve(res.statusCode ?? 502);
    });
    socket.once('close', () => outgoing.destroy());
    outgoing.end();
  });
}

/**
 * The same limits as the pooled HTTP path: CONNECT_TIMEOUT_MS for TCP and TLS (then 504, the
 * backend never answers), then idleConnTimeout until the backend's answer (408). A single socket
 * timeout from the start would give a backend that hangs in the TLS handshake a 408 after
 * idleConnTimeout, which may be 720h.
 */
function limitWaits(outgoing: ClientRequest, tls: boolean, idleMs: number): void {
  const failWith = (code: string) => outgoing.destroy(Object.assign(new Error(code), { code }));
  outgoing.once('socket', (backend) => {
    const connectTimer = setTimeout(() => failWith('UND_ERR_CONNECT_TIMEOUT'), CONNECT_TIMEOUT_MS);
    backend.once('close', () => clearTimeout(connectTimer));
    backend.once(tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(connectTimer);
      backend.setTimeout(Math.min(idleMs, MAX_TIMER_MS), () => failWith('UND_ERR_HEADERS_TIMEOUT'));
    });
  });
}

/** 403 for a cookie-authenticated handshake from another origin (see the module comment). */
function checkOrigin(ctx: Context, configuredUrl: string): void {
  const token = ctx.state.token;
  if (token === undefined || token === bearerToken(ctx.get('authorization'))) return; // no caller, or a bearer
  const origin = ctx.get('origin');
  if (isOwnOrigin(origin, { host: ctx.get('host'), protocol: ctx.protocol }, configuredUrl)) return;
  throw new PermissionDenied(`a WebSocket signed in with the svc.token cookie must come from svc's own origin, not '${printable(origin)}'`);
}

/** A status line and headers (a flat `[name, value, ...]` list), for a socket outside node:http's writer. */
function statusBlock(status: number, message: string | undefined, headers: readonly string[]): string {
  const lines = [`HTTP/1.1 ${status} ${(message ?? STATUS_CODES[status] ?? '').replace(/[\r\n]/g, '')}`];
  for (let i = 0; i + 1 < headers.length; i += 2) lines.push(`${headers[i] as string}: ${(headers[i + 1] as string).replace(/[\r\n]/g, '')}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Answers an error as JSON, as the error middleware would (errorReply), and closes the socket. */
function writeError(socket: Socket, err: unknown, ctx: Context): number {
  const reply = errorReply(err, ctx.state.requestId, ctx.state.log, ctx.path);
  return answer(socket, reply.status, reply.body, ctx.state.requestId);
}

export function refuse(socket: Socket, err: SvcError): number {
  return answer(socket, STATUS[err.code], { error: err.code, message: err.message });
}

/** Closes after writing, whatever the client does with its side (the server allows half-open sockets). */
function answer(socket: Socket, status: number, json: { error: string; message: string }, requestId?: string): number {
  const body = JSON.stringify(json);
  if (socket.writable) {
    const headers = ['content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)), 'connection', 'close'];
    if (requestId !== undefined) headers.push('x-request-id', requestId);
    socket.end(statusBlock(status, undefined, headers) + body, () => socket.destroy());
  } else socket.destroy();
  return status;
}

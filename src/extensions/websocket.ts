/**
 * WebSocket upgrades under /api/v1/extensions/<name>/…, after the same checks as plain requests:
 * the handshake is read once (authorized-request.ts, which refuses one that is not a GET: RFC
 * 6455 requires it, and a backend without WebSocket support would serve a `DELETE` carrying
 * `Upgrade: websocket` as a plain DELETE), the caller is read as for every request
 * (http/caller.ts, in its handshake mode), then access.ts, path.ts and headers.ts exactly as for
 * HTTP, and the backend gets the object they decided on. (Server-sent events need nothing here:
 * they are plain HTTP responses streamed by forward.ts.) upgrade.ts decides which upgrades come here.
 *
 * One rule is WebSocket-only, and caller.ts applies it: when the caller signs in with the
 * `svc.token` cookie, the Origin must be svc's own (the configured `url`, or the Host asked for),
 * whatever the method. Browsers send cookies on WebSocket handshakes and the Same-Origin Policy
 * does not apply to them, so without it any page on a same-site host (SameSite=Lax allows sibling
 * subdomains) could open a socket as the user: cross-site WebSocket hijacking. That rule is also
 * why a handshake, and only a handshake, may name its application in the query
 * (handshake-application.ts): browsers cannot set headers on `new WebSocket()`.
 *
 * The upgrade is relayed with node:http rather than http-proxy-3's `ws()`: that re-parses the
 * outgoing path with WHATWG URL (undoing our canonical path), copies `req.headers` wholesale
 * and drops `servername` from the TLS options. A dedicated socket per upgrade (agent: false) is
 * what a WebSocket is anyway.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { errorReply } from '../http/errors.js';
import { answerOnSocket, statusBlock } from '../http/socket-reply.js';
import { requestIdOf } from '../http/entry.js';
import { findExtension } from './access.js';
import { authorize, decide, readProxiedRequest } from './authorized-request.js';
import { MAX_TIMER_MS } from '../lib/duration.js';
import { mapBackendError } from './forward.js';
import { responseHeaderList } from './headers.js';
import { CONNECT_TIMEOUT_MS } from './pools.js';
import { CLIENT_GONE, type ExtensionMetrics } from './metrics.js';
import type { ExtensionProxyDeps } from './deps.js';
import type { OpenRelays } from './open-relays.js';
import { tlsOptionsFor } from './tls.js';

export interface WebSocketDeps extends ExtensionProxyDeps {
  readonly metrics: ExtensionMetrics;
  /** Relays in progress, cut when their access is taken away (open-relays.ts). */
  readonly relays: OpenRelays;
  /** Keeps a backend socket for shutdown, which must be able to cut a live relay. */
  readonly track: (socket: Socket) => void;
}

/** The handshake's extension and the rest of its target, split as for HTTP (target.ts, request-target.ts). */
export interface HandshakeTarget {
  readonly name: string;
  readonly rest: string;
  readonly path: string;
  readonly query: string;
}

/** One handshake: the request, its id and logger, and where it goes. */
interface Handshake {
  readonly req: IncomingMessage;
  readonly target: HandshakeTarget;
  readonly requestId: string;
  readonly log: Logger;
}

/** Relays one WebSocket upgrade; every failure is answered on the socket, which then closes. */
export function relayWebSocket(deps: WebSocketDeps, req: IncomingMessage, target: HandshakeTarget, head: Buffer, socket: Socket): void {
  const requestId = requestIdOf(req);
  const handshake: Handshake = { req, target, requestId, log: deps.log.child({ requestId }) };
  const start = performance.now();
  let status = CLIENT_GONE;
  const extension = findExtension(deps.settings.current(), target.name)?.name;
  if (extension !== undefined) {
    socket.once('close', () => deps.metrics.observe({ extension, status, seconds: (performance.now() - start) / 1000, bytesIn: 0, bytesOut: 0 }));
  }
  relay(deps, handshake, head, socket).then(
    (sent) => {
      status = sent;
    },
    (err: unknown) => {
      status = writeError(socket, err, handshake);
    },
  );
}

/**
 * Checks, then opens the backend connection; resolves with the status sent to the client. The
 * handshake is read once (a method other than GET is refused there, before anything is asked);
 * the checks decide on that object and exactly it is sent (authorized-request.ts).
 */
async function relay(deps: WebSocketDeps, handshake: Handshake, head: Buffer, socket: Socket): Promise<number> {
  const { req, target, requestId, log } = handshake;
  const proxied = readProxiedRequest(req, target, 'handshake');
  const caller = await deps.readCaller({ method: proxied.method, headers: req.headers, protocol: proxied.protocol, socket: req.socket }, 'handshake');
  // The client may have left while we awaited; its 'close' has fired, so nothing would end the backend side.
  if (socket.destroyed) return CLIENT_GONE;
  const limited = findExtension(deps.settings.current(), target.name);
  if (limited?.enabled === true) await deps.rateLimiter.take(limited, caller.principal, () => deps.sourceOf(req.socket.remoteAddress, req.headers['x-forwarded-for']));
  if (socket.destroyed) return CLIENT_GONE;
  const authorized = authorize(proxied, caller, deps.settings.current(), deps.rights, deps.assertions);
  const { route, url } = authorized;
  const idleMs = route.extension.idleConnTimeoutMs;
  // From here the backend's idle timeout answers a handshake that stalls (408), so the client's goes.
  socket.setTimeout(0);
  const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)({
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port,
    method: authorized.method,
    path: authorized.path,
    // node:http only reads the list; its type asks for a mutable one.
    headers: authorized.headers as string[],
    agent: false,
    ...(tlsOptionsFor(route.backend) ?? {}),
  });
  limitWaits(outgoing, url.protocol === 'https:', idleMs);
  const failed = { extension: route.extension.name, origin: url.origin, idleMs };
  return new Promise<number>((resolve, reject) => {
    outgoing.on('error', (err) => reject(mapBackendError(err, failed, log)));
    outgoing.on('upgrade', (res, backend, backendHead) => {
      deps.track(backend);
      backend.setTimeout(0);
      socket.write(statusBlock(101, res.statusMessage, responseHeaderList(res.rawHeaders, ['connection', 'upgrade', 'X-Request-Id', requestId], true).list));
      if (backendHead.length > 0) socket.write(backendHead);
      if (head.length > 0) backend.write(head);
      backend.on('error', () => socket.destroy());
      socket.on('error', () => backend.destroy());
      backend.on('close', () => socket.destroy());
      socket.on('close', () => backend.destroy());
      backend.pipe(socket).pipe(backend);
      const forget = deps.relays.add({
        // No token kept (none should be missing here) fails the next check: the relay is cut.
        token: caller.token ?? '',
        tokenId: route.principal.tokenId,
        // The same handshake object, decided on again: its method, extension and application.
        admit: (principal) => void decide(proxied, { principal, authError: undefined }, deps.settings.current(), deps.rights),
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
      socket.write(statusBlock(res.statusCode ?? 502, res.statusMessage, responseHeaderList(res.rawHeaders, ['connection', 'close', 'X-Request-Id', requestId], false, route.extension.contentSecurityPolicy).list));
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

/** Answers an error as JSON, as the error middleware would (errorReply, its Retry-After included), and closes the socket. */
function writeError(socket: Socket, err: unknown, handshake: Handshake): number {
  const reply = errorReply(err, handshake.requestId, handshake.log, handshake.target.path);
  return answerOnSocket(socket, reply.status, reply.body, handshake.requestId, reply.headers);
}

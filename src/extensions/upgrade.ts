/**
 * The server's 'upgrade' event. Once anyone listens to it, Node hands it every request that
 * carries `Connection: upgrade` (Node 20 has no shouldUpgradeCallback; it came in 24.9), outside
 * the HTTP app, its header/request timeouts and the server's connection tracking. An upgrade left
 * unanswered therefore hangs forever and holds `server.close()`. So every one is answered here:
 *
 * - `Upgrade: websocket` under /api/v1/extensions/ (by the parsed pathname, as Koa's ctx.path
 *   reads it for HTTP, so absolute-form targets agree) → websocket.ts relays it;
 * - any other upgrade without a body (h2c from `curl --http2`, a WebSocket elsewhere) → served by
 *   the HTTP app as a plain request, the Upgrade ignored (RFC 9110 §7.8 allows it), on a
 *   connection closed after the response, since Node's parser has let go of it;
 * - one with a body → 400 and close: the parser stopped at the headers, so the body cannot be read.
 *
 * Every socket (and a relay's backend socket) is tracked until it closes, so shutdown can cut
 * them at its grace deadline, and a handshake has HANDSHAKE_TIMEOUT_MS to get past authentication.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import { InvalidRequest } from '../errors.js';
import type { AppState } from '../http/state.js';
import type { ExtensionMetrics } from './metrics.js';
import type { OpenRelays } from './open-relays.js';
import type { ExtensionProxyDeps } from './proxy.js';
import { BAD_TARGET, requestTarget } from '../http/request-target.js';
import { declaresBody } from '../http/body.js';
import { splitExtensionPath } from './target.js';
import { refuse, relayWebSocket } from './websocket.js';

/** Authentication and the checks: a client that says nothing for this long is let go. */
export const HANDSHAKE_TIMEOUT_MS = 30_000;

export interface UpgradeDeps extends ExtensionProxyDeps {
  readonly metrics: ExtensionMetrics;
  /** Relays in progress, cut when their access is taken away. */
  readonly relays: OpenRelays;
  readonly authenticate: Koa.Middleware<AppState>;
  /** The HTTP app, for upgrades served as plain requests. */
  readonly serveHttp: (req: IncomingMessage, res: ServerResponse) => void;
}

export interface UpgradeHandler {
  readonly listener: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Destroys every socket still open here (relays, handshakes) and any that arrives later. */
  destroyAll(): void;
}

export function createUpgradeHandler(deps: UpgradeDeps): UpgradeHandler {
  const koa = new Koa<AppState>();
  const open = new Set<Socket>();
  let closed = false;
  function track(socket: Socket): void {
    if (closed) socket.destroy();
    if (socket.destroyed) return;
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  }
  const relayDeps = { ...deps, track };
  return {
    listener: function upgradeRequest(req, duplex, head) {
      // http.Server hands over the connection's net.Socket (a TLSSocket over https), typed as Duplex.
      const socket = duplex as Socket;
      socket.on('error', () => socket.destroy());
      track(socket);
      if (socket.destroyed) return; // shutting down
      socket.setTimeout(HANDSHAKE_TIMEOUT_MS, () => socket.destroy());
      // The path the HTTP side routes by (as Koa's ctx.path, absolute-form included); a target
      // Node cannot parse is refused here, where a throw would take the process down.
      const parsed = requestTarget(req);
      if (parsed === undefined) return void refuse(socket, new InvalidRequest(BAD_TARGET));
      const target = isWebSocket(req) ? splitExtensionPath(parsed.path) : undefined;
      if (target !== undefined) relayWebSocket(relayDeps, koa.createContext(req, new ServerResponse(req)), target, head, socket);
      else if (!declaresBody(req.headers)) serveAsHttp(deps.serveHttp, req, socket);
      else refuse(socket, new InvalidRequest('Upgrade is only supported for WebSockets under /api/v1/extensions/; send this request without it'));
    },
    destroyAll() {
      closed = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
  };
}

function isWebSocket(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').split(',').some((p) => p.trim().toLowerCase() === 'websocket');
}

/** The request as if it had no Upgrade header, on a connection that closes after the answer. */
function serveAsHttp(serve: UpgradeDeps['serveHttp'], req: IncomingMessage, socket: Socket): void {
  socket.setTimeout(0); // the app and the proxy apply their own limits from here, as for any request
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false; // Node's parser has let go of this connection: nothing after this response is read
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    socket.destroySoon();
  });
  serve(req, res);
}

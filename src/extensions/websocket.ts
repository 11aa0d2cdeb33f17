/**
 * WebSocket upgrades under /api/v1/extensions/<name>/…, after the same checks as plain requests:
 * the app's own authenticate middleware runs on a Koa context made for the upgrade request, then
 * access.ts, path.ts and headers.ts exactly as for HTTP. (Server-sent events need nothing here:
 * they are plain HTTP responses streamed by forward.ts.)
 *
 * The upgrade is relayed with node:http rather than http-proxy-3's `ws()`: that re-parses the
 * outgoing path with WHATWG URL (undoing our canonical path), copies `req.headers` wholesale
 * and drops `servername` from the TLS options. A dedicated socket per upgrade (agent: false) is
 * what a WebSocket is anyway.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest, ServerResponse, STATUS_CODES, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import { SvcError } from '../errors.js';
import { STATUS } from '../http/errors.js';
import type { AppState } from '../http/state.js';
import { APPLICATION_HEADER, findExtension, routeExtensionRequest } from './access.js';
import { mapBackendError } from './forward.js';
import { forwardHeaders, responseHeaders } from './headers.js';
import type { ExtensionMetrics } from './metrics.js';
import type { BackendPools } from './pools.js';
import type { ExtensionProxyDeps } from './proxy.js';
import { backendTarget, forwardContextOf, splitExtensionPath } from './target.js';
import { tlsOptionsFor } from './tls.js';

export interface UpgradeDeps extends ExtensionProxyDeps {
  readonly pools: BackendPools;
  readonly metrics: ExtensionMetrics;
  readonly authenticate: Koa.Middleware<AppState>;
}

type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export function createUpgradeHandler(deps: UpgradeDeps): UpgradeListener {
  const koa = new Koa<AppState>();
  return function upgradeExtensionRequest(req, socket, head) {
    const target = splitExtensionPath((req.url ?? '/').split('?')[0] ?? '/');
    if (target === undefined) return; // another feature's upgrade, or none: not ours to answer
    socket.on('error', () => socket.destroy());
    const ctx = koa.createContext(req, new ServerResponse(req));
    const requestId = randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = deps.log.child({ requestId });
    const start = performance.now();
    let status = 101;
    const extension = findExtension(deps.settings.current(), target.name)?.name;
    if (extension !== undefined) {
      socket.once('close', () => deps.metrics.observe({ extension, status, seconds: (performance.now() - start) / 1000, bytesIn: 0, bytesOut: 0 }));
    }
    relay(deps, ctx, target, head, socket).then(
      (sent) => {
        status = sent;
      },
      (err: unknown) => {
        status = writeError(socket, err, ctx.state);
      },
    );
  };
}

/** Checks, then opens the backend connection; resolves with the status sent to the client. */
async function relay(deps: UpgradeDeps, ctx: Koa.ParameterizedContext<AppState>, target: { name: string; rest: string }, head: Buffer, socket: Duplex): Promise<number> {
  await deps.authenticate(ctx, () => Promise.resolve());
  const route = routeExtensionRequest({ name: target.name, principal: ctx.state.principal, authError: ctx.state.authError, application: ctx.get(APPLICATION_HEADER) }, deps.settings.current(), deps.rights);
  const { url, path } = backendTarget(route, target.rest, ctx.querystring);
  const req = ctx.req;
  const headers = forwardHeaders(req.rawHeaders, req.headers, forwardContextOf(route, ctx.host, ctx.ip, ctx.protocol, true));
  headers.push('host', url.host);
  const idleMs = route.extension.idleConnTimeoutMs;
  const outgoing = (url.protocol === 'https:' ? httpsRequest : httpRequest)({
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port,
    method: req.method,
    path,
    headers,
    agent: false,
    timeout: idleMs,
    ...(tlsOptionsFor(route.backend) ?? {}),
  });
  const failed = { extension: route.extension.name, origin: url.origin, idleMs };
  return new Promise<number>((resolve, reject) => {
    outgoing.on('timeout', () => outgoing.destroy(Object.assign(new Error('no answer'), { code: 'UND_ERR_HEADERS_TIMEOUT' })));
    outgoing.on('error', (err) => reject(mapBackendError(err, failed, ctx.state.log)));
    outgoing.on('upgrade', (res, backend, backendHead) => {
      backend.setTimeout(0);
      socket.write(statusBlock(101, res.statusMessage, responseHeaders(res.headers, true)));
      if (backendHead.length > 0) socket.write(backendHead);
      if (head.length > 0) backend.write(head);
      backend.on('error', () => socket.destroy());
      socket.on('error', () => backend.destroy());
      backend.on('close', () => socket.destroy());
      socket.on('close', () => backend.destroy());
      backend.pipe(socket).pipe(backend);
      resolve(101);
    });
    outgoing.on('response', (res) => {
      // The backend declined the upgrade: relay its answer, then close.
      socket.write(statusBlock(res.statusCode ?? 502, res.statusMessage, { ...responseHeaders(res.headers), connection: 'close' }));
      res.pipe(socket);
      res.on('error', () => socket.destroy());
      resolve(res.statusCode ?? 502);
    });
    socket.once('close', () => outgoing.destroy());
    outgoing.end();
  });
}

function statusBlock(status: number, message: string | undefined, headers: OutgoingHttpHeaders): string {
  const lines = [`HTTP/1.1 ${status} ${(message ?? STATUS_CODES[status] ?? '').replace(/[\r\n]/g, '')}`];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${String(one).replace(/[\r\n]/g, '')}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function writeError(socket: Duplex, err: unknown, state: AppState): number {
  const known = err instanceof SvcError;
  if (!known) state.log.error({ err }, 'extension upgrade failed');
  const status = known ? STATUS[err.code] : 500;
  const body = JSON.stringify(known ? { error: err.code, message: err.message } : { error: 'internal', message: `internal error (request ${state.requestId})` });
  if (socket.writable) {
    socket.end(statusBlock(status, undefined, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' }) + body);
  }
  return status;
}

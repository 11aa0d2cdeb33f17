/**
 * `ANY /api/v1/extensions/<name>[/<path>][?query]`: the Koa side of the extension proxy. It reads
 * the request, runs the checks (access.ts), joins the path (path.ts), filters the headers
 * (headers.ts) and hands over to forward.ts. It answers the whole path space itself, so it runs
 * in the app's `early` slot, after authentication and before the routers.
 */
import type { Server } from 'node:http';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { LiveSettings } from '../config/live-settings.js';
import { ExtensionNotFound } from '../errors.js';
import type { AppState } from '../http/state.js';
import type { Rights } from '../rbac/rights.js';
import { APPLICATION_HEADER, findExtension, routeExtensionRequest } from './access.js';
import { forward, type Tally } from './forward.js';
import { forwardHeaders } from './headers.js';
import { createExtensionMetrics, type ExtensionMetrics } from './metrics.js';
import { createBackendPools, type BackendPools } from './pools.js';
import { backendTarget, forwardContextOf, splitExtensionPath } from './target.js';
import { createUpgradeHandler, type UpgradeHandler } from './upgrade.js';

export interface ExtensionProxyDeps {
  readonly settings: Pick<LiveSettings, 'current' | 'onChange'>;
  readonly rights: Pick<Rights, 'can'>;
  readonly log: Logger;
  readonly registry: Registry;
}

export interface ExtensionProxy {
  readonly middleware: Koa.Middleware<AppState>;
  /** Answers the server's upgrades (upgrade.ts); `authenticate` is the app's auth middleware. */
  attach(server: Server, authenticate: Koa.Middleware<AppState>): void;
  /** Cuts the connections the HTTP server no longer tracks (WebSocket relays, handshakes): shutdown's deadline. */
  closeConnections(): void;
  close(): Promise<void>;
}

export function wireExtensionProxy(deps: ExtensionProxyDeps): ExtensionProxy {
  const pools = createBackendPools(deps.log);
  const metrics = createExtensionMetrics(deps.registry);
  const unsubscribe = deps.settings.onChange((next, previous) => {
    if (next.extensions !== previous.extensions) pools.retain(next.extensions);
  });
  const upgrades: UpgradeHandler[] = [];
  const closeConnections = (): void => upgrades.forEach((u) => u.destroyAll());
  return {
    middleware: proxyMiddleware(deps, pools, metrics),
    attach(server, authenticate) {
      const upgrade = createUpgradeHandler({ ...deps, metrics, authenticate, serveHttp: (req, res) => server.emit('request', req, res) });
      upgrades.push(upgrade);
      server.on('upgrade', upgrade.listener);
    },
    closeConnections,
    async close() {
      unsubscribe();
      closeConnections();
      await pools.close();
    },
  };
}

function proxyMiddleware(deps: ExtensionProxyDeps, pools: BackendPools, metrics: ExtensionMetrics): Koa.Middleware<AppState> {
  return async function proxyExtensionRequest(ctx, next) {
    const target = splitExtensionPath(ctx.path);
    if (target === undefined) return next();
    if (target.name === '') throw new ExtensionNotFound('name an extension: /api/v1/extensions/<name>[/<path>]');
    const settings = deps.settings.current();
    const known = findExtension(settings, target.name);
    const tally: Tally = { bytesIn: 0, bytesOut: 0 };
    if (known !== undefined) observeOnClose(ctx, known.name, metrics, tally);
    // From here to dispatch nothing awaits: the settings, the route and the pool belong together.
    const route = routeExtensionRequest(
      { name: target.name, principal: ctx.state.principal, authError: ctx.state.authError, application: ctx.get(APPLICATION_HEADER) },
      settings,
      deps.rights,
    );
    const { url, path } = backendTarget(route, target.rest, ctx.querystring);
    const req = ctx.req;
    const length = req.headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
    await forward(
      {
        dispatcher: pools.get(route.backend),
        extension: route.extension.name,
        origin: url.origin,
        method: ctx.method,
        path,
        headers: forwardHeaders(req.rawHeaders, req.headers, forwardContextOf(route, ctx.host, ctx.ip, ctx.protocol)),
        body: hasBody ? { stream: req, length: length === undefined ? undefined : Number(length) } : null,
        idleMs: route.extension.idleConnTimeoutMs,
        // A getter: the request's child logger is made only if a backend failure needs it.
        get log() {
          return ctx.state.log;
        },
      },
      ctx.res,
      tally,
      () => {
        ctx.respond = false;
      },
    );
  };
}

function observeOnClose(ctx: Koa.ParameterizedContext<AppState>, extension: string, metrics: ExtensionMetrics, tally: Tally): void {
  const start = performance.now();
  ctx.res.once('close', () => {
    metrics.observe({ extension, status: ctx.res.statusCode, seconds: (performance.now() - start) / 1000, bytesIn: tally.bytesIn, bytesOut: tally.bytesOut });
  });
}

/**
 * The extension proxy wired onto the server: `handle` answers `/api/v1/extensions/*` on the raw
 * HTTP request (gateway.ts, before Koa), `attach` answers the WebSocket upgrades (upgrade.ts).
 * Both share the backend pools, which follow the configuration, and the per-extension metrics.
 * The server reads the path once (http/request-target.ts, as Koa reads ctx.path), so an
 * absolute-form request target is routed the same way on both sides.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { LiveSettings } from '../config/live-settings.js';
import type { HttpMetrics } from '../http/metrics.js';
import type { RequestTarget } from '../http/request-target.js';
import type { AppState } from '../http/state.js';
import type { Rights } from '../rbac/rights.js';
import type { Authenticator } from '../session/authenticate.js';
import { createGateway } from './gateway.js';
import { createExtensionMetrics } from './metrics.js';
import { createOpenRelays } from './open-relays.js';
import { createBackendPools } from './pools.js';
import { splitExtensionPath } from './target.js';
import { createUpgradeHandler, type UpgradeHandler } from './upgrade.js';

export interface ExtensionProxyDeps {
  readonly settings: Pick<LiveSettings, 'current' | 'onChange'>;
  readonly rights: Pick<Rights, 'can' | 'onUpdate'>;
  readonly log: Logger;
  readonly httpMetrics: Pick<HttpMetrics, 'registry' | 'record'>;
  readonly authenticator: Pick<Authenticator, 'authenticate' | 'known' | 'onRevoked'>;
}

export interface ExtensionProxy {
  /** Answers the request when it is an extension request (true); false leaves it to the app. */
  handle(req: IncomingMessage, res: ServerResponse, target: RequestTarget): boolean;
  /** Answers the server's upgrades (upgrade.ts); `authenticate` is the app's auth middleware. */
  attach(server: Server, authenticate: Koa.Middleware<AppState>): void;
  /** Cuts the connections the HTTP server no longer tracks (WebSocket relays, handshakes): shutdown's deadline. */
  closeConnections(): void;
  close(): Promise<void>;
}

export function wireExtensionProxy(deps: ExtensionProxyDeps): ExtensionProxy {
  const pools = createBackendPools(deps.log);
  const metrics = createExtensionMetrics(deps.httpMetrics.registry);
  // Taking access away cuts the WebSockets it admitted (open-relays.ts): on a revocation, on a
  // configuration change, and once a changed policy answers (its enforcer is built after the change).
  const relays = createOpenRelays({ authenticate: (token) => deps.authenticator.authenticate(token), log: deps.log });
  const unsubscribes = [
    deps.settings.onChange((next, previous) => {
      if (next.extensions !== previous.extensions) pools.retain(next.extensions);
      relays.recheck();
    }),
    deps.rights.onUpdate(() => relays.recheck()),
    deps.authenticator.onRevoked((tokenId) => relays.revoked(tokenId)),
  ];
  const gateway = createGateway({ ...deps, pools, metrics });
  const upgrades: UpgradeHandler[] = [];
  const closeConnections = (): void => upgrades.forEach((u) => u.destroyAll());
  return {
    handle(req, res, { path, query }) {
      const extension = splitExtensionPath(path);
      if (extension === undefined) return false;
      // Fields named, not spread: an object spread here sent V8 to its slow clone path on every
      // request and kept the copies alive past young-generation collections (docs/benchmarks.md).
      gateway(req, res, { name: extension.name, rest: extension.rest, query, path });
      return true;
    },
    attach(server, authenticate) {
      const upgrade = createUpgradeHandler({ ...deps, metrics, relays, authenticate, serveHttp: (req, res) => server.emit('request', req, res) });
      upgrades.push(upgrade);
      server.on('upgrade', upgrade.listener);
    },
    closeConnections,
    async close() {
      for (const unsubscribe of unsubscribes) unsubscribe();
      closeConnections();
      await pools.close();
    },
  };
}

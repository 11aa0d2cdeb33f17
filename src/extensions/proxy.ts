/**
 * The extension proxy: `handle` answers `/api/v1/extensions/*` on the raw HTTP request
 * (gateway.ts, before Koa), `upgrade` answers WebSocket handshakes there (websocket.ts). Both
 * share the backend pools, which follow the configuration, and the per-extension metrics. The
 * server reads the path once (http/request-target.ts, as Koa reads ctx.path), so an
 * absolute-form request target is routed the same way on both sides.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestTarget } from '../http/request-target.js';
import type { ExtensionProxyDeps } from './deps.js';
import { createGateway } from './gateway.js';
import { createExtensionMetrics } from './metrics.js';
import { createOpenRelays } from './open-relays.js';
import { createBackendPools } from './pools.js';
import { splitExtensionPath } from './target.js';
import { relayWebSocket } from './websocket.js';

export interface ExtensionProxy {
  /** Answers the request when it is an extension request (true); false leaves it to the app. */
  handle(req: IncomingMessage, res: ServerResponse, target: RequestTarget): boolean;
  /**
   * Relays a WebSocket handshake under /api/v1/extensions/ (true); false leaves it to the
   * server's upgrade handling. `track` keeps the backend socket for shutdown.
   */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer, target: RequestTarget, track: (socket: Socket) => void): boolean;
  close(): Promise<void>;
}

export function createExtensionProxy(deps: ExtensionProxyDeps): ExtensionProxy {
  const pools = createBackendPools(deps.log);
  const metrics = createExtensionMetrics(deps.httpMetrics.registry);
  // Taking access away cuts the WebSockets it admitted (open-relays.ts): on a revocation, on a
  // loss of the record of revocations, on a configuration change, and once a changed policy answers (its enforcer is built after the change).
  const relays = createOpenRelays({ authenticate: (token) => deps.authenticator.authenticate(token), log: deps.log });
  const unsubscribes = [
    deps.settings.onChange((next, previous) => {
      if (next.extensions !== previous.extensions) pools.retain(next.extensions);
      relays.recheck();
    }),
    deps.rights.onUpdate(() => relays.recheck()),
    deps.authenticator.onRevoked((tokenId) => relays.revoked(tokenId)),
    // The record of revocations lost: the sessions of before are refused, open ones too.
    deps.authenticator.onCutoffMoved(() => relays.recheck()),
  ];
  const gateway = createGateway({ ...deps, pools, metrics });
  return {
    handle(req, res, { path, query }) {
      const extension = splitExtensionPath(path);
      if (extension === undefined) return false;
      // Fields named, not spread: an object spread here sent V8 to its slow clone path on every
      // request and kept the copies alive past young-generation collections (docs/benchmarks.md).
      gateway(req, res, { name: extension.name, rest: extension.rest, query, path });
      return true;
    },
    upgrade(req, socket, head, { path, query }, track) {
      const extension = splitExtensionPath(path);
      if (extension === undefined) return false;
      relayWebSocket({ ...deps, metrics, relays, track }, req, { name: extension.name, rest: extension.rest, path, query }, head, socket);
      return true;
    },
    async close() {
      for (const unsubscribe of unsubscribes) unsubscribe();
      await pools.close();
    },
  };
}

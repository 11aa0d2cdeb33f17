/**
 * The product's features wired onto the shared services: authentication, accounts and
 * sessions, the extension proxy. Each feature contributes middleware and routers.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { wireExtensionProxy } from './extensions/proxy.js';
import { wireAccounts } from './http/wire-accounts.js';
import type { RequestTarget } from './http/request-target.js';
import type { AppState } from './http/state.js';
import type { Services } from './server.js';

export interface Features {
  readonly authenticate: Koa.Middleware<AppState>;
  readonly routers: readonly Router<AppState>[];
  /** Answers a request on the raw server before Koa (the extension proxy); false leaves it to the app. */
  readonly handle: (req: IncomingMessage, res: ServerResponse, target: RequestTarget) => boolean;
  /** Hooks on the raw server (WebSocket upgrades). */
  readonly attach?: (server: Server) => void;
  /** Destroys connections the server no longer tracks (upgraded sockets); called at shutdown's grace deadline. */
  readonly closeConnections?: () => void;
  readonly close?: () => Promise<void>;
}

export async function wireFeatures(services: Services): Promise<Features> {
  // Accounts and sessions: the authenticate middleware, session and account routes.
  const accounts = await wireAccounts(services);
  // The extension proxy: answers /api/v1/extensions/* (handle, before Koa) and its WebSocket upgrades (attach).
  const proxy = wireExtensionProxy({
    settings: services.settings,
    rights: services.rights,
    log: services.log,
    httpMetrics: services.metrics,
    authenticator: accounts.authenticator,
  });
  return {
    authenticate: accounts.authenticate,
    handle: (req, res, target) => proxy.handle(req, res, target),
    routers: [...accounts.routers],
    attach: (server) => proxy.attach(server, accounts.authenticate),
    closeConnections: () => proxy.closeConnections(),
    close: async () => {
      await proxy.close();
      await accounts.close();
    },
  };
}

/**
 * The product's features wired onto the shared services: authentication, accounts and
 * sessions, the extension proxy. Each feature contributes middleware and routers.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Server } from 'node:http';
import { wireExtensionProxy } from './extensions/proxy.js';
import { wireAccounts } from './http/wire-accounts.js';
import type { AppState } from './http/state.js';
import type { Services } from './server.js';

export interface Features {
  readonly authenticate: Koa.Middleware<AppState>;
  readonly early: readonly Koa.Middleware<AppState>[];
  readonly routers: readonly Router<AppState>[];
  /** Hooks on the raw server (WebSocket upgrades). */
  readonly attach?: (server: Server) => void;
  /** Destroys connections the server no longer tracks (upgraded sockets); called at shutdown's grace deadline. */
  readonly closeConnections?: () => void;
  readonly close?: () => Promise<void>;
}

export async function wireFeatures(services: Services): Promise<Features> {
  // Accounts and sessions: the authenticate middleware, session and account routes.
  const accounts = await wireAccounts(services);
  // The extension proxy: answers /api/v1/extensions/* (early) and its WebSocket upgrades (attach).
  const proxy = wireExtensionProxy({ settings: services.settings, rights: services.rights, log: services.log, registry: services.metrics.registry });
  return {
    authenticate: accounts.authenticate,
    early: [proxy.middleware],
    routers: [...accounts.routers],
    attach: (server) => proxy.attach(server, accounts.authenticate),
    closeConnections: () => proxy.closeConnections(),
    close: async () => {
      await proxy.close();
      await accounts.close();
    },
  };
}

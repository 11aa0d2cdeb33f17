/**
 * Composition root: options -> stores -> services -> app -> listening server. Every dependency
 * is built here and passed down by hand; nothing below reaches for a module singleton.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { ensureInitialConfig } from './config/bootstrap.js';
import { openDirStore } from './config/dir-store.js';
import { createLiveSettings, type LiveSettings } from './config/live-settings.js';
import type { ConfigStore } from './config/store.js';
import { createApp } from './http/app.js';
import { refuseTarget, requestTarget } from './http/request-target.js';
import { createHttpMetrics, type HttpMetrics } from './http/metrics.js';
import { healthRoutes } from './http/routes/health.js';
import { settingsRoutes } from './http/routes/settings.js';
import { createLogger } from './log.js';
import { createRights, type Rights } from './rbac/rights.js';
import { openState } from './state/index.js';
import type { StateBackend } from './state/state.js';
import { wireFeatures } from './features.js';

export interface ServerOptions {
  readonly configDir: string;
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  readonly redisUrl?: string;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly log?: Logger;
  /** Extra environment read by features (throttle limits); defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Everything a feature needs; built once per server. */
export interface Services {
  readonly log: Logger;
  readonly store: ConfigStore;
  readonly settings: LiveSettings;
  readonly state: StateBackend;
  readonly rights: Rights;
  readonly metrics: HttpMetrics;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly secure: boolean;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  readonly services: Services;
  /**
   * Stops accepting, lets in-flight requests finish (up to graceMs), then closes the stores.
   * Upgraded connections (WebSocket relays) are cut at the deadline too: closeAllConnections()
   * does not see them, yet server.close() waits for them.
   */
  close(graceMs?: number): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log ?? createLogger();
  await ensureInitialConfig({ dir: options.configDir, log });
  const store = await openDirStore({ dir: options.configDir, log });
  const settings = createLiveSettings(store, log);
  const state = await openState({ ...(options.redisUrl !== undefined ? { redisUrl: options.redisUrl } : {}), log });
  const rights = await createRights(settings.current().policy);
  settings.onChange((next, previous) => {
    if (next.policy === previous.policy) return;
    rights.update(next.policy).catch((err: unknown) => log.error({ err }, 'rights policy update failed; the previous policy stays in force'));
  });
  const metrics = createHttpMetrics();
  const services: Services = {
    log, store, settings, state, rights, metrics,
    env: options.env ?? process.env,
    secure: options.tls !== undefined,
  };
  const features = await wireFeatures(services);
  const app = createApp({
    log,
    metrics,
    authenticate: features.authenticate,
    routers: [healthRoutes(metrics.registry), settingsRoutes(settings.current), ...features.routers],
  });
  const koa = app.callback();
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const target = requestTarget(req);
    if (target === undefined) return refuseTarget(req, res, log);
    if (!features.handle(req, res, target)) void koa(req, res);
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) }, listener)
    : createHttpServer(listener);
  // Above the usual 5 s of load balancers, so they close idle connections first, not us.
  server.keepAliveTimeout = 65_000;
  features.attach?.(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `${options.tls ? 'https' : 'http'}://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  log.info({ url, configDir: options.configDir, state: state.kind }, 'svc listening');

  return {
    url,
    port,
    services,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() drops the connections idle at this moment; a keep-alive connection whose
      // request finishes later would otherwise hold shutdown until the grace deadline.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const timer = setTimeout(() => {
        server.closeAllConnections();
        features.closeConnections?.();
      }, graceMs);
      await closed;
      clearInterval(sweep);
      clearTimeout(timer);
      await features.close?.();
      settings.close();
      await store.close();
      await state.close();
    },
  };
}

/**
 * One undici Pool per backend (origin + TLS settings). A configuration change keeps the pools of
 * unchanged backends, creates pools lazily for new ones and closes the pools of backends that are
 * gone or changed: gracefully (in-flight requests finish), then forcibly after CLOSE_GRACE_MS so a
 * long stream on a removed backend cannot pin it forever. Timeouts are per request (forward.ts),
 * so a new idleConnTimeout does not replace a pool.
 */
import { Pool } from 'undici';
import type { Logger } from 'pino';
import type { BackendService, ExtensionConfig } from './config.js';
import { tlsOptionsFor } from './tls.js';

/** Per backend and per worker process; requests beyond it wait in the pool's queue. */
export const MAX_CONNECTIONS_PER_BACKEND = 256;
/** TCP connect plus TLS handshake; past it the backend "never answers" (504). */
export const CONNECT_TIMEOUT_MS = 10_000;
/** With every connection of a pool busy, a request waits this long for one, then 504. */
export const QUEUE_WAIT_MS = 10_000;
/** Below Node's default server keep-alive (5 s), so we never reuse a socket the backend is closing. */
export const KEEP_ALIVE_TIMEOUT_MS = 4_000;
export const CLOSE_GRACE_MS = 30_000;

export interface BackendPools {
  /** The pool for a service of the current configuration. Synchronous, so it pairs with the settings just read. */
  get(service: BackendService): Pool;
  /** Keep pools for these extensions' backends, close the others. */
  retain(extensions: readonly ExtensionConfig[]): void;
  close(): Promise<void>;
  /** Number of open pools (tests, metrics). */
  readonly size: number;
}

export function backendKey(service: BackendService): string {
  const origin = new URL(service.url).origin;
  return service.tls === undefined ? origin : `${origin} ${JSON.stringify([service.tls.caData, service.tls.certData, service.tls.keyData, service.tls.serverName])}`;
}

function openPool(service: BackendService): Pool {
  const tls = tlsOptionsFor(service);
  return new Pool(new URL(service.url).origin, {
    connections: MAX_CONNECTIONS_PER_BACKEND,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connect: { timeout: CONNECT_TIMEOUT_MS, ...(tls ?? {}) },
  });
}

export function createBackendPools(log: Logger): BackendPools {
  const pools = new Map<string, Pool>();
  let byService = new WeakMap<BackendService, Pool>();

  function get(service: BackendService): Pool {
    const known = byService.get(service);
    if (known !== undefined && !known.closed) return known;
    const key = backendKey(service);
    let pool = pools.get(key);
    if (pool === undefined) {
      pool = openPool(service);
      pools.set(key, pool);
    }
    byService.set(service, pool);
    return pool;
  }

  function retire(key: string, pool: Pool): void {
    pools.delete(key);
    const force = setTimeout(() => void pool.destroy().catch(() => undefined), CLOSE_GRACE_MS);
    force.unref();
    pool.close().then(
      () => clearTimeout(force),
      (err: unknown) => log.warn({ err, backend: key.split(' ')[0] }, 'closing a backend pool failed'),
    );
    log.info({ backend: key.split(' ')[0] }, 'backend pool retired after a configuration change');
  }

  return {
    get,
    retain(extensions) {
      const live = new Set(extensions.flatMap((e) => e.services.map(backendKey)));
      for (const [key, pool] of pools) if (!live.has(key)) retire(key, pool);
      byService = new WeakMap();
    },
    async close() {
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
    },
    get size() {
      return pools.size;
    },
  };
}

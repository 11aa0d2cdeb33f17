/**
 * Workload identity (RFC 8693 token exchange): its token verifier joins the authentication stage, so
 * workload tokens are revocable and cached like every other; its route joins the app. Each
 * issuer entry of `workload.config` (read live) gets its own key cache and its own TLS policy
 * (rootCA), made again when the entry's issuer, jwksURL or rootCA change.
 */
import type { IncomingMessage } from 'node:http';
import { exchangeRoutes } from '../http/routes/exchange.js';
import type { RecordLogin } from '../http/routes/record-login.js';
import { requestSource } from '../idp/pending-source.js';
import { createTlsFetch, type TlsFetch } from '../lib/tls-fetch.js';
import type { LoginThrottle } from '../session/throttle.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import type { WorkloadIssuer } from '../workload/config.js';
import { createExchange } from '../workload/exchange.js';
import { createIssuerKeys, type IssuerKeys } from '../workload/keys.js';
import { createWorkloadVerifier } from '../workload/token-verifier.js';
import { createWorkloadTokens, type WorkloadTokens } from '../workload/tokens.js';
import type { Feature } from './feature.js';
import type { Services } from './services.js';

/** Issuers answer in well under this; a hung one must not hold an exchange for long. */
const ISSUER_TIMEOUT_MS = 5_000;

export interface WorkloadStage {
  readonly verifier: TokenVerifier;
  feature(throttle: LoginThrottle, recordLogin: RecordLogin): Feature;
}

export function prepareWorkload(services: Services): WorkloadStage {
  const { settings, now } = services;
  const tokens = createWorkloadTokens({ secretKey: () => settings.current().serverSecretKey, now });
  const verifier = createWorkloadVerifier({ tokens, issuers: () => settings.current().workloads, localAccounts: () => settings.current().accounts });
  return { verifier, feature: (throttle, recordLogin) => workloadFeature(services, tokens, throttle, recordLogin) };
}

function workloadFeature(services: Services, tokens: WorkloadTokens, throttle: LoginThrottle, recordLogin: RecordLogin): Feature {
  const { settings, state, log, now } = services;
  const keys = createKeyCaches(services);
  const exchange = createExchange({
    issuers: () => settings.current().workloads,
    keysOf: keys.of,
    tokens,
    state,
    throttle,
    localAccounts: () => settings.current().accounts,
    log,
    now,
    outcomes: services.loginOutcomes,
  });
  const trustedProxies = services.trustedProxies;
  const sourceOf = (req: IncomingMessage): string => requestSource(req, trustedProxies);
  return { name: 'workload', routers: [exchangeRoutes({ exchange, log, sourceOf, recordLogin })], close: keys.close };
}

interface CachedKeys {
  readonly fingerprint: string;
  readonly keys: IssuerKeys;
  readonly fetch: TlsFetch;
}

/** One key cache per entry name, bounded by the entries configured. */
function createKeyCaches(services: Services): { of(entry: WorkloadIssuer): IssuerKeys; close(): Promise<void> } {
  const caches = new Map<string, CachedKeys>();
  function drop(name: string): void {
    const old = caches.get(name);
    if (old === undefined) return;
    caches.delete(name);
    old.fetch.close().catch((err: unknown) => services.log.warn({ err, entry: name }, 'workload issuer connection pool did not close'));
  }
  const unsubscribe = services.settings.onChange((next) => {
    for (const name of [...caches.keys()]) if (!next.workloads.some((e) => e.name === name)) drop(name);
  });
  return {
    of(entry) {
      const fingerprint = JSON.stringify([entry.issuer, entry.jwksURL ?? null, entry.rootCA ?? null]);
      const found = caches.get(entry.name);
      if (found !== undefined && found.fingerprint === fingerprint) return found.keys;
      drop(entry.name);
      const fetch = createTlsFetch({ rootCAs: entry.rootCA !== undefined ? [entry.rootCA] : [], connectTimeoutMs: ISSUER_TIMEOUT_MS, responseTimeoutMs: ISSUER_TIMEOUT_MS });
      const made = { fingerprint, fetch, keys: createIssuerKeys(entry, { fetch: fetch.fetch, now: services.now }) };
      caches.set(entry.name, made);
      return made.keys;
    },
    async close() {
      unsubscribe();
      await Promise.all([...caches.values()].map((c) => c.fetch.close()));
      caches.clear();
    },
  };
}

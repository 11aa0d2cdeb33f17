/**
 * The identity provider's app in process (no svc around it) with idp.config's static clients
 * and a client-secret guard over a recording throttle: for the unit tests of how the provider
 * authenticates those clients. The throttle admits everything and records what it is told.
 */
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { createIdpApp } from '../../src/idp/app.js';
import { createClientSecretGuard } from '../../src/idp/client-secret-guard.js';
import { generateSigningKey } from '../../src/idp/keys.js';
import type { StaticClient } from '../../src/idp/static-clients-config.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { requestTarget, type RequestTarget } from '../../src/http/request-target.js';
import { createSealer } from '../../src/lib/sealed.js';
import type { LoginThrottle } from '../../src/session/throttle.js';
import { createMemoryState } from '../../src/state/memory.js';
import { fakePasswordConnector, singleConnector } from './fake-password-connector.js';
import { testPasswordGuard } from './password-guard.js';
import { freePort } from './peers.js';

export interface StaticClientsIdp {
  readonly url: string;
  readonly issuer: string;
  /** Every throttle call, as `<method> <name>`. */
  readonly throttleCalls: string[];
  close(): Promise<void>;
}

function recordingThrottle(calls: string[]): LoginThrottle {
  let attempt = 0;
  return {
    async admit(name) { calls.push(`admit ${name}`); return ++attempt; },
    async release(name) { calls.push(`release ${name}`); },
    async recordFailure(name) { calls.push(`recordFailure ${name}`); },
    async recordSuccess(name) { calls.push(`recordSuccess ${name}`); },
    degraded: false,
    async close() {},
  };
}

export async function startStaticClientsIdp(clients: readonly StaticClient[]): Promise<StaticClientsIdp> {
  const log = pino({ level: 'silent' });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const state = createMemoryState({ log });
  const throttleCalls: string[] = [];
  const app = createIdpApp({
    url, serverSecretKey: 'static-clients-idp-test-secret-key-0123', state, log,
    keys: { signing: [await generateSigningKey(new Date())], cookie: ['cookie-key-for-static-client-tests'] },
    accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')),
    connectors: singleConnector('dir', fakePasswordConnector({})),
    passwordGuard: testPasswordGuard(state),
    clientSecretGuard: createClientSecretGuard({ throttle: recordingThrottle(throttleCalls), log, failureDelay: async () => {}, exempt: [] }),
    staticClients: () => clients,
  });
  const server: Server = createServer((req, res) => void app.handle(req, res, requestTarget(req) as RequestTarget));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url, issuer: `${url}/api/idp`, throttleCalls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `Authorization: Basic` of an id and a secret, unencoded as oidc-agent and most clients send them. */
export const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

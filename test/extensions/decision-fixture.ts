/**
 * A bed for the tests that change the client's request between the decision and the forwarding
 * (gateway.test.ts, websocket-decision.test.ts): one extension in front of a backend that records
 * what it receives, a caller known without a look-up, and rights that answer for a `get` line
 * only, calling `during` while they decide. What `during` changes in the client's request must
 * not reach the backend: the proxy sends the object it decided on.
 */
import type { IncomingMessage } from 'node:http';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { AppCatalog } from '../../src/apps/catalog.js';
import type { ExtensionConfig } from '../../src/extensions/config.js';
import type { ProxySettings } from '../../src/extensions/deps.js';
import type { Principal } from '../../src/principal.js';

export const READER: Principal = { username: 'reader', groups: [], issuer: 'svc', kind: 'session', tokenId: 'reader-session', expiresAt: undefined };

export function decisionSettings(backendUrl: string): ProxySettings {
  const extension: ExtensionConfig = { name: 'ext3', enabled: true, idleConnTimeoutMs: 5_000, contentSecurityPolicy: undefined, services: [{ url: backendUrl }] };
  const catalog: AppCatalog = { applications: new Map(), clusters: [] };
  return { url: 'http://svc.example', extensions: [extension], catalog };
}

/** What the rights were asked, in order: `<action> <object>`. */
export interface AskedRights {
  readonly asked: string[];
  allows(principal: Principal, resource: string, action: string, object: string): boolean;
}

/** A `get` line for READER on every project's ext3; `during(req)` runs while the rights decide. */
export function getLineOnly(request: () => IncomingMessage, during: (req: IncomingMessage) => void): AskedRights {
  const asked: string[] = [];
  return {
    asked,
    allows(principal, resource, action, object) {
      asked.push(`${action} ${object}`);
      during(request());
      return principal.username === READER.username && resource === 'extensions' && action === 'get' && object === '*/ext3';
    },
  };
}

export const silentLog = pino({ level: 'silent' });

export function freshRegistry(): Registry {
  return new Registry();
}

/** What the extension proxy takes from the server, shared by its HTTP and WebSocket sides. */
import type { AccessLogLevel } from '../http/entry.js';
import type { Logger } from 'pino';
import type { AppCatalog } from '../apps/catalog.js';
import type { ReadCaller } from '../http/caller.js';
import type { Authenticator } from '../session/authenticate.js';
import type { HttpMetrics } from '../http/metrics.js';
import type { Rights } from '../rbac/rights.js';
import type { ExtensionConfig } from './config.js';
import type { IdentityAssertions } from './identity-assertion.js';
import type { RateLimiter } from './rate-limit.js';
import type { RefusalAudit } from '../http/refusal-audit.js';

/** The part of the settings the proxy reads. */
export interface ProxySettings {
  readonly url: string;
  readonly extensions: readonly ExtensionConfig[];
  readonly catalog: AppCatalog;
}

export interface ProxySettingsSource {
  current(): ProxySettings;
  onChange(listener: (settings: ProxySettings, previous: ProxySettings) => void): () => void;
}

export interface ExtensionProxyDeps {
  readonly settings: ProxySettingsSource;
  readonly rights: Pick<Rights, 'allows' | 'onUpdate'> & Partial<Pick<Rights, 'explain'>>;
  /** Where rights refusals are recorded (refusal-audit.ts). */
  readonly audit?: RefusalAudit;
  readonly log: Logger;
  /** The level of the per-request line (debug unless SVC_ACCESS_LOG=true). */
  readonly accessLogLevel?: AccessLogLevel;
  readonly httpMetrics: Pick<HttpMetrics, 'registry' | 'record'>;
  readonly readCaller: ReadCaller;
  /** Open WebSockets are checked again with it, and cut when their token is revoked (open-relays.ts). */
  readonly authenticator: Pick<Authenticator, 'authenticate' | 'onRevoked' | 'onCutoffMoved'>;
  /** Signs Svc-Identity-Assertion for extensions that ask for it; without it, those extensions answer 503. */
  readonly assertions?: IdentityAssertions;
  /** backend.rateLimit, taken before the checks (rate-limit.ts). */
  readonly rateLimiter: RateLimiter;
  /** The source address of a request (client-address.ts): what an unauthenticated caller is limited by. */
  readonly sourceOf: (peer: string | undefined, forwardedFor: string | readonly string[] | undefined) => string;
}

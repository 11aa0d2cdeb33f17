/** What every feature is built from: created once per server by server.ts, in this order. */
import type { Logger } from 'pino';
import type { AuditTrail } from '../audit/trail.js';
import type { LiveSettings } from '../config/live-settings.js';
import type { ConfigStore } from '../config/store.js';
import type { TrustedProxies } from '../http/client-address.js';
import type { HttpMetrics } from '../http/metrics.js';
import type { AccessLogLevel } from '../http/entry.js';
import type { Rights } from '../rbac/rights.js';
import type { LoginLimits } from '../session/limits.js';
import type { LoginOutcomes } from '../session/login-outcomes.js';
import type { StateBackend } from '../state/state.js';
import type { Settings } from './settings.js';

export interface Services {
  readonly log: Logger;
  readonly store: ConfigStore;
  readonly settings: LiveSettings<Settings>;
  readonly state: StateBackend;
  readonly rights: Rights;
  readonly metrics: HttpMetrics;
  /** svc_login_outcomes_total, in metrics.registry. */
  readonly loginOutcomes: LoginOutcomes;
  /** The level of the per-request line: info with SVC_ACCESS_LOG=true, else debug. */
  readonly accessLogLevel: AccessLogLevel;
  /** The login limits, read from `env` once (a bad value warns once, not once per feature that uses them). */
  readonly loginLimits: LoginLimits;
  /** API tokens an account (local or SSO) may hold, read from `env` once (SVC_MAX_API_TOKENS_PER_ACCOUNT). */
  readonly maxApiTokensPerAccount: number;
  /** Extra environment read by features (throttle limits); process.env in production. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The audit trail (docs/audit.md): one event per security decision. */
  readonly audit: AuditTrail;
  /** SVC_TRUSTED_PROXIES, parsed once at start: whose X-Forwarded-For names a request's source. */
  readonly trustedProxies: TrustedProxies;
  /** Milliseconds since the epoch; injected so tests can move time. */
  readonly now: () => number;
}

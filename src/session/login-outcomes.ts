/**
 * `svc_login_outcomes_total`: every finished login attempt, by method (how the person or
 * workload logged in), connector (the SSO connector or trust entry; empty for a local account)
 * and reason (`ok` or why it failed). Labels come from a closed list each: the free text of a
 * failure goes to the log line, never to a label, so the series stay few.
 */
import { Counter, type Registry } from 'prom-client';
import { NO_AUDIT, type AuditEvent, type AuditSource, type AuditTrail } from '../audit/trail.js';

export type LoginMethod = 'local' | 'sso' | 'idp-password' | 'idp-browser' | 'workload';

export const LOGIN_REASONS = [
  'ok', 'wrong-password', 'unknown-user', 'disabled', 'no-login-capability', 'locked', 'busy',
  'unavailable', 'refused', 'expired', 'foreign-browser', 'misconfigured', 'invalid-token', 'other',
  'second-step', 'wrong-code',
] as const;
export type LoginReason = (typeof LOGIN_REASONS)[number];

/** Who tried and from where, for the audit event of the attempt (never the password or token). */
export interface LoginAttempt {
  /** The name the attempt was for (typed, or the identity's once known). */
  readonly user?: string | undefined;
  /** The stable id of an identity that logged in (an SSO `sub`, a workload's name). */
  readonly userId?: string | undefined;
  readonly groups?: readonly string[] | undefined;
  readonly source?: AuditSource | undefined;
  /** The reason in words (for operators), beside the closed label. */
  readonly detail?: string | undefined;
  /** The external provider a single sign-on went through (its issuer). */
  readonly issuer?: string | undefined;
}

export interface LoginOutcomes {
  /** Counts the attempt, and records it in the audit trail (action `login`). */
  record(method: LoginMethod, connector: string, reason: LoginReason, attempt?: LoginAttempt): void;
}

/** Counts nothing: for tests and callers built without a registry. */
export const NO_LOGIN_OUTCOMES: LoginOutcomes = { record() {} };

/** A connector label at most 64 characters (ids are operator-written, but a label is no place for a long one). */
const MAX_CONNECTOR_LABEL = 64;

export function createLoginOutcomes(registry: Registry, audit: AuditTrail = NO_AUDIT): LoginOutcomes {
  const counter = new Counter({
    name: 'svc_login_outcomes_total',
    help: 'Finished login attempts by method (local, sso, idp-password, idp-browser, workload), connector and reason (ok or why it failed; the log line has the details)',
    labelNames: ['method', 'connector', 'reason'],
    registers: [registry],
  });
  return {
    record(method, connector, reason, attempt) {
      counter.labels(method, connector.slice(0, MAX_CONNECTOR_LABEL), reason).inc();
      audit.record(loginEvent(method, connector, reason, attempt));
    },
  };
}

function loginEvent(method: LoginMethod, connector: string, reason: LoginReason, attempt: LoginAttempt | undefined): AuditEvent {
  const user = attempt?.user !== undefined || attempt?.userId !== undefined
    ? { ...(attempt.user !== undefined ? { name: attempt.user } : {}), ...(attempt.userId !== undefined ? { id: attempt.userId } : {}), ...(attempt.groups !== undefined ? { groups: attempt.groups } : {}) }
    : undefined;
  return {
    category: 'authentication',
    type: 'start',
    action: 'login',
    outcome: reason === 'ok' ? 'success' : 'failure',
    ...(reason === 'ok' ? {} : { reason: attempt?.detail !== undefined ? `${reason}: ${attempt.detail}` : reason }),
    ...(user !== undefined ? { user } : {}),
    ...(attempt?.source !== undefined ? { source: attempt.source } : {}),
    svc: { method, ...(connector !== '' ? { connector } : {}), ...(attempt?.issuer !== undefined ? { issuer: attempt.issuer } : {}) },
  };
}

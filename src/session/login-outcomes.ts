/**
 * `svc_login_outcomes_total`: every finished login attempt, by method (how the person or
 * workload logged in), connector (the SSO connector or trust entry; empty for a local account)
 * and reason (`ok` or why it failed). Labels come from a closed list each: the free text of a
 * failure goes to the log line, never to a label, so the series stay few.
 */
import { Counter, type Registry } from 'prom-client';

export type LoginMethod = 'local' | 'sso' | 'idp-password' | 'idp-browser' | 'workload';

export const LOGIN_REASONS = [
  'ok', 'wrong-password', 'unknown-user', 'disabled', 'no-login-capability', 'locked', 'busy',
  'unavailable', 'refused', 'expired', 'foreign-browser', 'misconfigured', 'invalid-token', 'other',
  'second-step', 'wrong-code',
] as const;
export type LoginReason = (typeof LOGIN_REASONS)[number];

export interface LoginOutcomes {
  record(method: LoginMethod, connector: string, reason: LoginReason): void;
}

/** Counts nothing: for tests and callers built without a registry. */
export const NO_LOGIN_OUTCOMES: LoginOutcomes = { record() {} };

/** A connector label at most 64 characters (ids are operator-written, but a label is no place for a long one). */
const MAX_CONNECTOR_LABEL = 64;

export function createLoginOutcomes(registry: Registry): LoginOutcomes {
  const counter = new Counter({
    name: 'svc_login_outcomes_total',
    help: 'Finished login attempts by method (local, sso, idp-password, idp-browser, workload), connector and reason (ok or why it failed; the log line has the details)',
    labelNames: ['method', 'connector', 'reason'],
    registers: [registry],
  });
  return {
    record(method, connector, reason) {
      counter.labels(method, connector.slice(0, MAX_CONNECTOR_LABEL), reason).inc();
    },
  };
}

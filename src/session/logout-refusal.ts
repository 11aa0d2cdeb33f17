/**
 * A logout whose revocation could not be shared, said as what happened: the state backend did
 * not answer, or it did and took the write but no replica acknowledged it within the wait (a
 * `replicated` write on Sentinel or Cluster, state/redis.ts). The second used to read "the
 * state backend is unreachable" while Redis answered, and was not logged; it is now told apart,
 * and counted in svc_logout_refusals_total{reason}.
 *
 * The log line is written where the session end is known to be a logout someone asked for
 * (session/registry.ts: logout, a session ended from the list), not here: revocations also end
 * the oldest session of an account past its bound at each login, and while a Redis replica
 * resyncs those were logged as "logout refused", with the login's stack, though nobody logged
 * out (issue 52, finding 10). One line, no stack: what failed, the backend's reason, what to check.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { Unavailable } from '../errors.js';
import { NotReplicated, StateUnavailable } from '../state/state.js';

export type LogoutRefusalReason = 'unreachable' | 'not_replicated';

export interface LogoutRefusals {
  /** For a failed revocation write: the error to answer with (LogoutNotShared), once counted; other errors as they are. */
  explain(err: unknown): unknown;
}

/** A revocation that could not be shared: 503 with the sentence for a person, and the reason for the log. */
export class LogoutNotShared extends Unavailable {
  constructor(readonly reason: LogoutRefusalReason, options: ErrorOptions) {
    super(SENTENCES[reason], options);
  }
}

/** Who asked for the session to end, for the log line. */
export interface RefusedLogout {
  readonly account: string;
  readonly sessionId: string;
  readonly via: string;
}

/** The one log line of a logout that someone asked for and that was refused; nothing for other errors. */
export function logLogoutRefused(log: Pick<Logger, 'warn'>, err: unknown, logout: RefusedLogout): void {
  if (!(err instanceof LogoutNotShared)) return;
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  log.warn({ ...logout, reason: err.reason, ...(cause !== undefined ? { cause } : {}) }, LOG_LINES[err.reason]);
}

const SENTENCES: Readonly<Record<LogoutRefusalReason, string>> = {
  unreachable:
    'logout could not be recorded: the state backend is unreachable. The svc.token cookie is cleared, ' +
    'but the token stays valid on other replicas until it expires: log out again once the state backend is back',
  not_replicated:
    'logout could not be confirmed: Redis took it, but no replica acknowledged the write within the wait, so a failover ' +
    'could lose it. The svc.token cookie is cleared and this replica refuses the token; log out again once a Redis replica is back',
};

const LOG_LINES: Readonly<Record<LogoutRefusalReason, string>> = {
  unreachable: 'logout refused: the revocation could not be written, the state backend does not answer',
  not_replicated: 'logout refused: Redis took the revocation but no replica acknowledged it within the wait; check the Redis replicas',
};

export function createLogoutRefusals(deps: { readonly registry?: Registry }): LogoutRefusals {
  const counter = deps.registry === undefined ? undefined : new Counter({
    name: 'svc_logout_refusals_total',
    help: 'Session revocations that could not be shared (a logout or session end answered 503, or the oldest session past the bound left for the next login), by reason: unreachable (the state backend did not answer), not_replicated (no replica acknowledged the write)',
    labelNames: ['reason'],
    registers: [deps.registry],
  });
  return {
    explain(err) {
      if (!(err instanceof StateUnavailable)) return err;
      const reason: LogoutRefusalReason = err instanceof NotReplicated ? 'not_replicated' : 'unreachable';
      counter?.labels(reason).inc();
      return new LogoutNotShared(reason, { cause: err });
    },
  };
}

/**
 * A logout whose revocation could not be shared, said as what happened: the state backend did
 * not answer, or it did and took the write but no replica acknowledged it within the wait (a
 * `replicated` write on Sentinel or Cluster, state/redis.ts). The second used to read "the
 * state backend is unreachable" while Redis answered, and was not logged; it is now told apart,
 * logged with the backend's own reason, and counted in svc_logout_refusals_total{reason}.
 */
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { Unavailable } from '../errors.js';
import { NotReplicated, StateUnavailable } from '../state/state.js';

export type LogoutRefusalReason = 'unreachable' | 'not_replicated';

export interface LogoutRefusals {
  /** For a failed revocation write: the error to answer with, once logged and counted; other errors as they are. */
  explain(err: unknown): unknown;
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

export function createLogoutRefusals(deps: { readonly log: Pick<Logger, 'warn'>; readonly registry?: Registry }): LogoutRefusals {
  const counter = deps.registry === undefined ? undefined : new Counter({
    name: 'svc_logout_refusals_total',
    help: 'Logouts answered 503 because the revocation could not be shared, by reason: unreachable (the state backend did not answer), not_replicated (no replica acknowledged the write)',
    labelNames: ['reason'],
    registers: [deps.registry],
  });
  return {
    explain(err) {
      if (!(err instanceof StateUnavailable)) return err;
      const reason: LogoutRefusalReason = err instanceof NotReplicated ? 'not_replicated' : 'unreachable';
      deps.log.warn({ reason, cause: err.message }, LOG_LINES[reason]);
      counter?.labels(reason).inc();
      return new Unavailable(SENTENCES[reason], { cause: err });
    },
  };
}

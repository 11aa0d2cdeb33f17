/**
 * Enrolling a factor ends the account's other sessions (session/registry.ts `endOthers`, for the
 * local account of that name), the enrolling one kept. The registry does not record whether a
 * session proved a factor, so none of the others is known to have: all of them end, whoever
 * holds them logs in again (with the new factor). A session copied before the enrolment does
 * not outlive it.
 *
 * Twice: before the write, and a failure there refuses the enrolment (nothing written, the
 * caller tries again), so the factor is never on while the others live on unnoticed; and after
 * it, for a login that completed in between with the password alone. A failure of the second
 * pass is logged rather than thrown: the factor is on by then, and its recovery codes must still
 * reach their owner.
 */
import type { Logger } from 'pino';
import type { AuditSource } from '../audit/trail.js';
import type { Principal } from '../principal.js';
import type { EndContext } from '../session/registry.js';

/** Ends every session of the local account `account` but the one of token id `keepId`; how many ended. */
export type EndOtherSessions = (account: string, keepId: string, context: EndContext) => Promise<number>;

export interface OtherSessionsDeps {
  readonly endOtherSessions: EndOtherSessions;
  readonly log: Pick<Logger, 'warn'>;
}

/** Runs `write` between the two passes; how many other sessions ended. */
export async function enrolEndingOthers<T>(deps: OtherSessionsDeps, account: string, caller: Principal, source: AuditSource, write: () => Promise<T>): Promise<{ readonly result: T; readonly ended: number }> {
  const context = { via: 'second-factor', source } as const;
  const before = await deps.endOtherSessions(account, caller.tokenId, context);
  const result = await write();
  let after = 0;
  try {
    after = await deps.endOtherSessions(account, caller.tokenId, context);
  } catch (err: unknown) {
    deps.log.warn({ err, account }, 'second factor enrolled; the sessions that logged in while it was written could not be ended now');
  }
  return { result, ended: before + after };
}

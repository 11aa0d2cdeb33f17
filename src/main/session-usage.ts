/**
 * What each accepted request tells the session registry: the minute its session was last used,
 * written at most once a minute per session and replica, and a session svc never saw log in
 * (the CLI's SSO token, a token from before the registry) recorded the first time it is seen.
 * Runs on every authenticated request, the proxy's included: the usual cost is one clock read
 * and one Map look-up; the write is not awaited (a lost one only makes lastUsedAt older).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../principal.js';
import { personOf } from '../person.js';
import type { SessionRegistry } from '../session/registry.js';
import { clientOf, minuteOf, type SessionKind } from '../session/session-record.js';
import { clientAddressOf, type TrustedProxies } from '../http/client-address.js';

/** Sessions whose last write this replica remembers; past it, the memory starts again (one more write each). */
const REMEMBERED = 10_000;

export interface UsedRequest {
  readonly headers: IncomingHttpHeaders;
  /** The connection, read only for a session first seen. */
  readonly socket?: { readonly remoteAddress?: string | undefined };
}

export type SessionUse = (principal: Principal, request: UsedRequest, via: 'bearer' | 'cookie') => void;

export interface SessionUsageDeps {
  readonly registry: Pick<SessionRegistry, 'touch' | 'recordIfAbsent'>;
  readonly trustedProxies: TrustedProxies;
  readonly log: Pick<Logger, 'warn'>;
  readonly now: () => number;
}

// API tokens (a local account's or an SSO user's) are not sessions: they are listed as tokens.
const KIND_OF: Readonly<Record<Principal['kind'], SessionKind | undefined>> = { session: 'local', sso: 'sso', workload: 'workload', apiKey: undefined, ssoApiKey: undefined };

export function createSessionUsage(deps: SessionUsageDeps): SessionUse {
  /** token id -> the minute last written. */
  let written = new Map<string, number>();

  /** One warning per minute at most: during an outage every request would say the same. */
  let warnedAt: number | undefined;
  function failed(err: unknown): void {
    const minute = minuteOf(deps.now());
    if (warnedAt === minute) return;
    warnedAt = minute;
    deps.log.warn({ err }, 'sessions: the use of a session could not be written; it is tried again');
  }

  return function sessionUsed(principal, request, via) {
    const minute = minuteOf(deps.now());
    const last = written.get(principal.tokenId);
    if (last === minute) return;
    const kind = KIND_OF[principal.kind];
    if (kind === undefined || principal.expiresAt === undefined) return;
    if (written.size >= REMEMBERED) written = new Map();
    written.set(principal.tokenId, minute);
    const { tokenId: id, expiresAt } = principal;
    // The person's id (an SSO user's `sub`, not a mapped name), as the registry keys the session.
    const account = personOf(principal).subject;
    const first = last === undefined
      ? deps.registry.recordIfAbsent({
        id, account, kind, expiresAt, issuer: principal.issuer,
        ...(principal.sid !== undefined ? { sid: principal.sid } : {}),
        client: clientOf(request.headers['user-agent'], via === 'cookie'),
        address: clientAddressOf(request.socket?.remoteAddress, request.headers['x-forwarded-for'], deps.trustedProxies),
      })
      : Promise.resolve();
    first.then(() => deps.registry.touch(personOf(principal), id, minute, expiresAt)).catch((err: unknown) => {
      // Not recorded yet: the next request tries again (a fast StateUnavailable while Redis is down).
      if (last === undefined) written.delete(id);
      failed(err);
    });
  };
}

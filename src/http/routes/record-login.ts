/**
 * A login's session into the registry, with what only the request knows: where it came from
 * (client-address.ts, through the trusted proxies) and its user agent. A registry that cannot
 * be written does not fail the login (logins go on while Redis is down, docs/state.md): the
 * session is recorded when it is first used instead (session-usage.ts), and the log says so.
 */
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { SessionRegistry } from '../../session/registry.js';
import { clientOf, type SessionRecord } from '../../session/session-record.js';
import { clientAddressOf, type TrustedProxies } from '../client-address.js';

export type LoginSession = Pick<SessionRecord, 'id' | 'account' | 'kind' | 'issuer' | 'expiresAt' | 'sid'>;

/** `viaBrowser`: the login came through a page (the form, an SSO redirect), whatever the user agent says. */
export type RecordLogin = (req: IncomingMessage, session: LoginSession, viaBrowser: boolean) => Promise<void>;

export function loginRecorder(sessions: Pick<SessionRegistry, 'record'>, trusted: TrustedProxies, log: Pick<Logger, 'warn'>): RecordLogin {
  return async function recordLogin(req, session, viaBrowser) {
    try {
      await sessions.record({
        ...session,
        client: clientOf(req.headers['user-agent'], viaBrowser),
        address: clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted),
      });
    } catch (err: unknown) {
      log.warn({ err, account: session.account, sessionId: session.id }, 'sessions: a login could not be recorded now; it is recorded when first used');
    }
  };
}

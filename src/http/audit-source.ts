/** The request's side of an audit event: source address (through trusted proxies), user agent, request id. */
import type { IncomingMessage } from 'node:http';
import type { AuditSource } from '../audit/trail.js';
import { clientAddressOf, type TrustedProxies } from './client-address.js';

const MAX_USER_AGENT = 512;

export function auditSourceOf(req: IncomingMessage, requestId: string | undefined, trusted: TrustedProxies): AuditSource {
  const ip = clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted);
  const userAgent = req.headers['user-agent'];
  return {
    ...(ip !== '' ? { ip } : {}),
    ...(userAgent !== undefined && userAgent !== '' ? { userAgent: userAgent.slice(0, MAX_USER_AGENT) } : {}),
    ...(requestId !== undefined ? { requestId } : {}),
  };
}

/**
 * What a forwarder in front of svc passes on of a message's headers: every header but the
 * hop-by-hop ones (RFC 9110 §7.6.1), which describe one connection and not the message, and
 * those the Connection header names. A forwarder that passed svc's `Keep-Alive: timeout=65` on
 * would tell its clients to keep idle connections for a minute that it closes itself after 5 s;
 * a client that sends on one as it closes is reset.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export function endToEndHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(String(headers.connection ?? '').split(',').map((name) => name.trim().toLowerCase()));
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && !named.has(name)));
}

/**
 * The server span of each HTTP request, opened in the raw listener so that every request has one:
 * the Koa app's, the provider's and the extension gateway's (which never reaches Koa). It is named
 * `GET` at first and renamed to `GET /the/route/:as matched` by whoever matches the route
 * (nameRoute in ./spans.ts).
 *
 * A client's `traceparent` is honoured only when the connection comes from a proxy named in
 * SVC_TRUSTED_PROXIES; anyone else's starts a new trace: a client must not choose the trace an
 * operator reads, nor the sampling decision (a flood of sampled requests).
 *
 * Attributes: method, status, route template, peer address. Not url.path nor url.query: a path may
 * hold an interaction id that is also a cookie's value, a query a code or a state.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { TRACER_NAME } from './spans.js';

export interface TrustedPeers {
  has(address: string): boolean;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The methods semantic conventions name; any other is `_OTHER`. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

export function tracedListener(listener: Listener, trusted: TrustedPeers, secure: boolean): Listener {
  const tracer = trace.getTracer(TRACER_NAME);
  return function tracedRequest(req, res) {
    const peer = req.socket.remoteAddress ?? '';
    const parent = peer !== '' && trusted.has(peer) ? propagation.extract(ROOT_CONTEXT, req.headers) : ROOT_CONTEXT;
    const method = KNOWN_METHODS.has(req.method ?? '') ? (req.method as string) : '_OTHER';
    const span = tracer.startSpan(method === '_OTHER' ? 'HTTP' : method, {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': method,
        'url.scheme': secure ? 'https' : 'http',
        'network.peer.address': peer,
        'network.protocol.version': req.httpVersion,
      },
    }, parent);
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!res.writableFinished) span.setAttribute('error.type', 'connection_closed');
      span.end();
    });
    context.with(trace.setSpan(parent, span), listener, undefined, req, res);
  };
}

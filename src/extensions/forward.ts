/**
 * Sends one request to a backend with undici's dispatch() and relays the answer straight into the
 * client's response: no buffering either way, backpressure kept (a 1 GiB body costs a few socket
 * buffers: when the client is slow, the handler pauses undici's controller, which stops reading
 * the backend socket until the response drains). Fastest of the variants measured (docs/benchmarks.md).
 *
 * The client's `close` aborts the backend exchange when the client leaves early, also while the
 * request still waits for a pool connection. A client that left while authentication was awaited
 * has closed before that listener exists, so forward() first checks whether the response is
 * already closed and then sends nothing: otherwise an endless backend stream (SSE) stayed pinned
 * to a pool connection for good.
 *
 * Before the backend's headers, failures become typed errors for the caller:
 * refused/unreachable → 502, TLS → 502 (with a log line naming the certificate problem), connect
 * timeout → 504 (the backend never answers), no response byte for idleConnTimeout → 408 (SPEC:
 * "a backend connection idle longer than idleConnTimeout"). After the headers the status is
 * already sent, so a failure (reset, body idle past idleConnTimeout) cuts the client connection:
 * the client sees a truncated response, never a clean one.
 */
import type { ServerResponse } from 'node:http';
import { Transform, pipeline, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { BackendIdle, BackendTimeout, BackendTls, BackendUnreachable, type SvcError } from '../errors.js';
import { MAX_TIMER_MS } from '../lib/duration.js';
import { heldSetCookies } from '../http/entry.js';
import { onConnectionClose } from './connection-close.js';
import { responseHeaderList } from './headers.js';
import { isTlsError } from './tls.js';
import type { AuthorizedRequest } from './authorized-request.js';
import { failSpan, SpanKind, startSpan, traceHeaders, tracingOn, type Span } from '../tracing/spans.js';

export interface ForwardRequest {
  readonly dispatcher: Dispatcher;
  /**
   * What is sent: the method, path and headers the checks decided on (authorized-request.ts),
   * as they are; nothing here reads the client's request again.
   */
  readonly authorized: AuthorizedRequest;
  /** For messages; the origin (scheme, host, port) goes to logs only, never to clients. */
  readonly extension: string;
  readonly origin: string;
  /** The client's body stream, read only when authorized.request declared a body (with that length). */
  readonly body: Readable | null;
  readonly idleMs: number;
  /**
   * How long the request may wait for a free pool connection when every connection to the
   * backend is busy; then 504. undici's own queue has no limit, and its timeouts only start once
   * a connection is assigned.
   */
  readonly queueMs: number;
  /** Added to the backend's response headers unless it sent the same name (X-Request-Id). */
  readonly responseHeaders: readonly string[];
  /** The extension's Content-Security-Policy, added to the backend's response (headers.ts). */
  readonly contentSecurityPolicy: string | undefined;
  /**
   * The request's logger, made on first use (most requests never log). A function, not a getter:
   * an object literal with an accessor is built on V8's slow path and kept everything it reached
   * alive until the next full collection, which more than doubled the proxy's GC work.
   */
  readonly log: () => Logger;
}

/** Counters the caller reads when the response ends (metrics). */
export interface Tally {
  bytesIn: number;
  bytesOut: number;
}

/** Called at most once, when the exchange failed before the backend answered: the caller replies with it. */
export type OnFailure = (err: SvcError) => void;

/**
 * Relays one exchange. A callback rather than a promise: nothing awaits it on the hot path, and
 * a promise (with its resolve/reject closures and the caller's catch) was measurable per request.
 */
export function forward(request: ForwardRequest, res: ServerResponse, tally: Tally, onFailure: OnFailure): void {
  if (clientGone(res)) return; // nobody to answer, and no 'close' would ever abort the exchange
  const relay = new ResponseRelay(request, res, tally, onFailure);
  const { method, path, headers, request: decided } = request.authorized;
  // Checked first: with tracing off no span and no new header list are made.
  const span = tracingOn() ? backendSpan(method, request) : undefined;
  if (span !== undefined) relay.span = span;
  const free = request.dispatcher.dispatch(
    {
      path,
      method: method as Dispatcher.HttpMethod,
      // undici only reads the list; its type asks for a mutable one.
      headers: (span === undefined ? headers : withTraceHeaders(headers, span)) as string[],
      body: request.body === null || decided.body === null ? null : countedBody(request.body, decided.body.length, tally),
      headersTimeout: request.idleMs,
      bodyTimeout: request.idleMs,
    },
    relay,
  );
  // false: the pool has no free connection left (this request may be the one that took the last,
  // or it waits in the queue). Only then is a timer worth its cost.
  if (!free) relay.limitQueueWait(request.queueMs);
}

/** server.address and server.port of each backend origin, parsed once (a URL per request was measurable). */
const originParts = new Map<string, { readonly address: string; readonly port: number }>();

function partsOf(origin: string): { readonly address: string; readonly port: number } {
  let parts = originParts.get(origin);
  if (parts === undefined) {
    const url = new URL(origin);
    parts = { address: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
    // Origins come from the extension config: few, but a config that changes often must not grow this for good.
    if (originParts.size >= 1_000) originParts.clear();
    originParts.set(origin, parts);
  }
  return parts;
}

/** The client span of the call to the backend (semantic conventions: named after the method). */
function backendSpan(method: string, request: ForwardRequest): Span | undefined {
  const { address, port } = partsOf(request.origin);
  return startSpan(method, {
    'http.request.method': method,
    'server.address': address,
    'server.port': port,
    'svc.extension': request.extension,
  }, SpanKind.CLIENT);
}

/**
 * The header list with our span's `traceparent` (and `tracestate`) in place of any the client
 * sent: the backend joins svc's trace, whose parent is the client's only when a trusted proxy
 * sent it (tracing/server-span.ts).
 */
const TRACE_HEADERS = new Set(['traceparent', 'tracestate']);

function withTraceHeaders(headers: readonly string[], span: Span): string[] {
  const list: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i] as string;
    // Only a name of their lengths is lowercased to compare (a copy of each name was measurable).
    const trace = (name.length === 11 || name.length === 10) && TRACE_HEADERS.has(name.toLowerCase());
    if (!trace) list.push(name, headers[i + 1] as string);
  }
  for (const [name, value] of Object.entries(traceHeaders(span))) list.push(name, value);
  return list;
}


class ClientLeft extends Error {
  constructor() {
    super('the client closed the connection');
  }
}

/**
 * undici's handler hooks, relaying the backend's answer into the client's response. Written
 * against dispatch() rather than stream(): no stream, promise or async resource per request, and
 * the last chunk of a body whose length is known goes out with res.end(), so a small answer
 * costs one write to the client instead of two (together about a fifth of the floor's CPU).
 */
class ResponseRelay implements Dispatcher.DispatchHandler {
  /** undici's handle on this exchange (abort, pause, resume), given when a connection is assigned. */
  private controller: Dispatcher.DispatchController | undefined;
  private started = false;
  private ended = false;
  private settled = false;
  private clientLeft = false;
  private connected = false;
  private queueTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  /** Stops watching the connection of a response queued behind another (connection-close.ts). */
  private unwatchConnection: (() => void) | undefined;
  /** Body bytes still expected when the backend declared a length; -1 otherwise. */
  private remaining = -1;
  /** The client span of this call, when tracing is on; ended in settle(). */
  span: Span | undefined;

  constructor(
    private readonly request: ForwardRequest,
    private readonly res: ServerResponse,
    private readonly tally: Tally,
    private readonly onFailure: OnFailure,
  ) {
    res.on('close', this.onClientClose); // removed in settle(); 'close' comes once anyway
    // A pipelined response waiting behind another has no socket yet, and Node emits its 'close'
    // neither when the client leaves nor when it is destroyed: watch the connection itself.
    if (res.socket === null) this.unwatchConnection = onConnectionClose(res.req.socket, this.onClientClose);
  }

  private readonly onClientClose = (): void => {
    if (this.res.writableFinished) return;
    this.clientLeft = true;
    this.controller?.abort(new ClientLeft());
  };

  private readonly onDrain = (): void => {
    if (this.stallTimer !== undefined) {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
    }
    if (!this.settled) this.controller?.resume();
  };

  /** Gives up (504) when no pool connection is assigned within `ms`; the queued request is dropped when its turn comes. */
  limitQueueWait(ms: number): void {
    if (this.connected || this.settled) return;
    this.queueTimer = setTimeout(() => {
      if (this.connected || this.settled) return;
      this.settle();
      this.request.log().warn({ backend: this.request.origin, extension: this.request.extension, waitedMs: ms }, 'extension backend pool exhausted: every connection stayed busy; raise capacity or check the backend');
      this.onFailure(new BackendTimeout(`the backend of extension '${this.request.extension}' had no free connection for ${ms / 1000}s`));
    }, ms);
    this.queueTimer.unref();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.connected = true;
    if (this.queueTimer !== undefined) clearTimeout(this.queueTimer);
    this.controller = controller;
    // Left while the request waited for a connection, or answered 504 meanwhile: send nothing.
    if (this.clientLeft || this.settled) controller.abort(new ClientLeft());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number): void {
    if (statusCode < 200) return; // 1xx (103 Early Hints): not relayed, the final answer follows
    this.started = true;
    this.span?.setAttribute('http.response.status_code', statusCode);
    // The raw name/value list, not undici's parsed object: names keep their case and repeated
    // headers their order, and headers.ts filters it in one pass. HTTP/1.1 (the only protocol
    // the pools speak) always gives the list.
    const rawHeaders = controller.rawHeaders as readonly Buffer[];
    const { list, contentLength, eventStream } = responseHeaderList(rawHeaders, this.request.responseHeaders, false, this.request.contentSecurityPolicy);
    // The Set-Cookie a renewal set before dispatch is part of this answer (http/entry.ts, point 4).
    const held = heldSetCookies(this.res);
    if (held === undefined) this.res.writeHead(statusCode, list);
    else writeHeadKeepingCookies(this.res, statusCode, list, held);
    if (contentLength !== undefined && this.request.authorized.method !== 'HEAD') {
      this.tally.bytesOut = contentLength;
      this.remaining = contentLength;
    } else if (eventStream) {
      this.res.flushHeaders(); // the client sees the stream open before the first event
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.remaining >= 0) {
      this.remaining -= chunk.length;
      if (this.remaining === 0) {
        this.ended = true;
        this.res.end(chunk);
        return;
      }
    } else {
      this.tally.bytesOut += chunk.length;
    }
    if (this.res.write(chunk)) return;
    controller.pause();
    this.res.once('drain', this.onDrain);
    this.watchStall();
  }

  /**
   * While the backend is paused for a client that takes nothing, undici's body timeout does not
   * run and Node has no write timeout: a client that stops reading (or pipelines behind an answer
   * that never ends) would hold the pool connection for good. One that drains nothing for
   * idleConnTimeout loses its connection, which aborts the exchange.
   */
  private watchStall(): void {
    if (this.stallTimer !== undefined) return; // more data while paused: the clock runs from the first pause
    this.stallTimer = setTimeout(() => {
      if (this.settled) return;
      this.request.log().info({ backend: this.request.origin, extension: this.request.extension, idleMs: this.request.idleMs }, 'the client took nothing for idleConnTimeout (not reading, or pipelined behind a slow answer); connection closed');
      (this.res.socket ?? this.res.req.socket).destroy();
    }, Math.min(this.request.idleMs, MAX_TIMER_MS)); // a longer idleConnTimeout (720h is valid config) means no limit
    this.stallTimer.unref();
  }

  onResponseEnd(): void {
    if (!this.ended) this.res.end();
    this.settle();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return; // already answered (pool wait limit)
    if (this.span !== undefined) failSpan(this.span, err);
    this.settle();
    if (this.clientLeft) return; // nobody to answer
    if (this.started || this.res.headersSent) {
      this.request.log().info({ backend: this.request.origin, code: errorCode(err) }, 'extension backend failed mid-response; client connection closed');
      this.res.destroy();
      return;
    }
    this.onFailure(mapBackendError(err, this.request, this.request.log()));
  }

  private settle(): void {
    this.settled = true;
    this.span?.end();
    this.res.off('close', this.onClientClose);
    this.unwatchConnection?.();
    if (this.stallTimer !== undefined) clearTimeout(this.stallTimer);
  }
}

function clientGone(res: ServerResponse): boolean {
  // A pipelined request's response gets the socket only when the one before it has finished:
  // until then the request's own reference to the connection tells whether the client is there.
  return res.destroyed || res.closed || (res.socket ?? res.req.socket).destroyed;
}

/** Request bodies: Content-Length counts itself (Node's parser enforces it); a chunked body is counted as it flows. */
function countedBody(body: Readable, length: number | undefined, tally: Tally): Readable {
  if (length !== undefined) {
    tally.bytesIn = length;
    return body;
  }
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      tally.bytesIn += chunk.length;
      callback(null, chunk);
    },
  });
  pipeline(body, counter, () => undefined);
  return counter;
}

function errorCode(err: unknown): string | undefined {
  const { code, cause } = (err ?? {}) as { code?: unknown; cause?: unknown };
  const own = typeof code === 'string' ? code : undefined;
  const inner = typeof (cause as { code?: unknown } | undefined)?.code === 'string' ? (cause as { code: string }).code : undefined;
  return isTlsError(inner) ? inner : (own ?? inner);
}

export function mapBackendError(err: unknown, target: { readonly extension: string; readonly origin: string; readonly idleMs: number }, log: Logger): SvcError {
  const { extension, origin, idleMs } = target;
  const code = errorCode(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT') {
    log.info({ backend: origin, extension }, 'extension backend idle past idleConnTimeout');
    return new BackendIdle(`the backend of extension '${extension}' sent nothing for ${idleMs / 1000}s (idleConnTimeout)`, { cause: err });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return new BackendTimeout(`the backend of extension '${extension}' did not accept the connection in time`, { cause: err });
  if (isTlsError(code)) {
    log.warn({ backend: origin, extension, code, reason: (err as Error).message }, 'extension backend TLS failed: check its certificate, tls.caData, tls.serverName and the client certificate');
    return new BackendTls(`TLS with the backend of extension '${extension}' failed (${code})`, { cause: err });
  }
  log.info({ backend: origin, extension, code }, 'extension backend unreachable');
  return new BackendUnreachable(`the backend of extension '${extension}' is unreachable (${code ?? 'connection failed'})`, { cause: err });
}

/**
 * writeHead for a response that holds a Set-Cookie already (a session renewed before dispatch):
 * node's writeHead with a list, once a header was set, keeps one value per name, so the
 * backend's cookies would replace ours or each other. Every header is set by name with all its
 * values instead, ours added to the backend's cookies. Only such responses take this way.
 */
function writeHeadKeepingCookies(res: ServerResponse, statusCode: number, list: readonly string[], ours: readonly string[]): void {
  const byName = new Map<string, { name: string; values: string[] }>();
  byName.set('set-cookie', { name: 'set-cookie', values: [...ours] });
  for (let i = 0; i + 1 < list.length; i += 2) {
    const name = list[i] as string;
    const lower = name.toLowerCase();
    const entry = byName.get(lower) ?? { name, values: [] };
    entry.values.push(list[i + 1] as string);
    byName.set(lower, entry);
  }
  for (const { name, values } of byName.values()) res.setHeader(name, values.length === 1 ? values[0] as string : values);
  res.writeHead(statusCode);
}

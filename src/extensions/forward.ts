/**
 * Sends one request to a backend with undici `stream()` and streams the answer straight into the
 * client's response: no buffering either way, backpressure kept (a 1 GiB body costs a few
 * socket buffers). Fastest of the variants measured (docs/benchmarks.md).
 *
 * An abort signal tied to the client's `close` stops the backend exchange when the client
 * leaves early; with `stream()` nothing is left without an error listener, which is what crashed
 * the `ctx.body = (await request()).body` variant when a client left before the backend answered.
 * A client that left while authentication was awaited has closed before that listener exists, so
 * forward() first checks whether the response is already closed and then sends nothing: otherwise
 * an endless backend stream (SSE) stayed pinned to a pool connection for good. A write waiting for
 * `drain` fails when the response closes, for the same reason.
 *
 * Before the backend's headers, failures become typed errors for the error middleware:
 * refused/unreachable → 502, TLS → 502 (with a log line naming the certificate problem), connect
 * timeout → 504 (the backend never answers), no response byte for idleConnTimeout → 408 (SPEC:
 * "a backend connection idle longer than idleConnTimeout"). After the headers the status is
 * already sent, so a failure (reset, body idle past idleConnTimeout) cuts the client connection:
 * the client sees a truncated response, never a clean one.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { Transform, Writable, pipeline, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { BackendIdle, BackendTimeout, BackendTls, BackendUnreachable, type SvcError } from '../errors.js';
import { responseHeaders } from './headers.js';
import { isTlsError } from './tls.js';

export interface ForwardRequest {
  readonly dispatcher: Dispatcher;
  /** For messages; the origin (scheme, host, port) goes to logs only, never to clients. */
  readonly extension: string;
  readonly origin: string;
  readonly method: string;
  readonly path: string;
  readonly headers: string[];
  /** The client's body, with its Content-Length when it declared one. */
  readonly body: { readonly stream: Readable; readonly length: number | undefined } | null;
  readonly idleMs: number;
  readonly log: Logger;
}

/** Counters the caller reads when the response ends (metrics). */
export interface Tally {
  bytesIn: number;
  bytesOut: number;
}

/** Called once, when the backend's status and headers arrive and before anything is written. */
export type OnResponseStart = () => void;

/**
 * Tells undici the client has left. An EventEmitter, which undici accepts as a signal: an
 * AbortController (an EventTarget underneath) cost about a fifth of the proxy's throughput.
 */
class ClientGone extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

export async function forward(request: ForwardRequest, res: ServerResponse, tally: Tally, onStart: OnResponseStart): Promise<void> {
  if (clientGone(res)) return; // nobody to answer, and no 'close' would ever abort the exchange
  const gone = new ClientGone();
  const onClose = (): void => {
    if (!res.writableFinished) gone.abort();
  };
  res.once('close', onClose);
  let started = false;
  try {
    await request.dispatcher.stream(
      {
        path: request.path,
        method: request.method as Dispatcher.HttpMethod,
        headers: request.headers,
        body: request.body === null ? null : countedBody(request.body.stream, request.body.length, tally),
        signal: gone,
        headersTimeout: request.idleMs,
        bodyTimeout: request.idleMs,
      },
      ({ statusCode, headers }) => {
        started = true;
        onStart();
        return startResponse(res, statusCode, headers, request.method, tally);
      },
    );
  } catch (err: unknown) {
    if (gone.aborted) return; // the client left: nobody to answer
    if (started || res.headersSent) {
      request.log.info({ backend: request.origin, code: errorCode(err) }, 'extension backend failed mid-response; client connection closed');
      res.destroy();
      return;
    }
    throw mapBackendError(err, request, request.log);
  } finally {
    res.off('close', onClose);
  }
}

function clientGone(res: ServerResponse): boolean {
  return res.destroyed || res.closed || res.socket === null || res.socket.destroyed;
}

function startResponse(res: ServerResponse, status: number, headers: Record<string, string | string[] | undefined>, method: string, tally: Tally): Writable {
  res.writeHead(status, responseHeaders(headers));
  const length = headers['content-length'];
  if (typeof length === 'string' && method !== 'HEAD') {
    tally.bytesOut = Number(length);
    return res;
  }
  if (String(headers['content-type']).startsWith('text/event-stream')) res.flushHeaders();
  return countingWriter(res, tally);
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

/** Passes chunks to the response, counting them, keeping its backpressure and flushing each chunk (SSE). */
function countingWriter(res: ServerResponse, tally: Tally): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      tally.bytesOut += chunk.length;
      if (res.write(chunk)) return callback();
      if (clientGone(res)) return callback(new Error('the client connection closed'));
      const drained = (): void => {
        res.off('close', closed);
        callback();
      };
      const closed = (): void => {
        res.off('drain', drained);
        callback(new Error('the client connection closed'));
      };
      res.once('drain', drained);
      res.once('close', closed);
    },
    final(callback) {
      res.end(() => callback());
    },
    destroy(err, callback) {
      if (err !== null) res.destroy();
      callback(err);
    },
  });
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

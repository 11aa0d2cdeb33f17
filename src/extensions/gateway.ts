/**
 * `ANY /api/v1/extensions/<name>[/<path>][?query]`, answered on the raw node:http request,
 * before Koa. It does what the app's middleware does for every other route (request id, error
 * replies from http/errors.ts, HTTP metrics, the debug access line) and then the proxy's own
 * work: authentication, the checks on the request read once (authorized-request.ts: access.ts,
 * the backend path from path.ts, header filtering from headers.ts) and the exchange of exactly
 * that request (forward.ts).
 *
 * Why outside Koa: this is the one path where every microsecond counts (target: 0.6 x nginx on
 * the same machine), and a Koa context plus five async middleware cost 10-15 us of CPU per
 * request here, a third of a whole bare Node proxy (docs/benchmarks.md). A token this replica
 * has already verified, whose revocation it can answer from memory, is checked without an
 * await, so a proxied request usually makes no promise at all.
 *
 * Hot-path rule (docs/decisions.md): no object literal with a getter, no per-object accessor and
 * no object spread per request; V8 builds those on its slow path and they kept every request's
 * objects alive until the next full collection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ExtensionNotFound } from '../errors.js';
import type { Caller, ReadCaller } from '../http/caller.js';
import type { HttpMetrics } from '../http/metrics.js';
import { closeStatus, failRequest, recordRequest, requestIdOf, type AccessLogLevel, type RawRequestDeps } from '../http/entry.js';
import type { Rights } from '../rbac/rights.js';
import { findExtension } from './access.js';
import { authorize, readProxiedRequest, type ProxiedRequest } from './authorized-request.js';
import { forward, type Tally } from './forward.js';
import type { ExtensionProxyDeps, ProxySettingsSource } from './deps.js';
import type { RateLimiter } from './rate-limit.js';
import type { IdentityAssertions } from './identity-assertion.js';
import type { ExtensionMetrics } from './metrics.js';
import { QUEUE_WAIT_MS, type BackendPools } from './pools.js';
import { nameRoute } from '../tracing/spans.js';
import { auditRefusal, type RefusalAudit } from '../http/refusal-audit.js';

/** The route label of every proxied request in svc_http_requests_total. */
export const GATEWAY_ROUTE = '/api/v1/extensions/:name';

export interface GatewayDeps {
  readonly settings: Pick<ProxySettingsSource, 'current'>;
  readonly rights: Pick<Rights, 'allows'> & Partial<Pick<Rights, 'explain'>>;
  readonly audit?: RefusalAudit | undefined;
  readonly readCaller: ReadCaller;
  readonly rateLimiter: RateLimiter;
  readonly sourceOf: ExtensionProxyDeps['sourceOf'];
  readonly pools: BackendPools;
  readonly metrics: ExtensionMetrics;
  readonly httpMetrics: Pick<HttpMetrics, 'record'>;
  readonly log: Logger;
  readonly accessLogLevel?: AccessLogLevel;
  readonly assertions?: IdentityAssertions | undefined;
}

/** One proxied request: the parts of the URL the caller already split (target.ts). */
export interface GatewayRequest {
  readonly name: string;
  readonly rest: string;
  readonly query: string;
  readonly path: string;
}

export type Gateway = (req: IncomingMessage, res: ServerResponse, request: GatewayRequest) => void;

export function createGateway(deps: GatewayDeps): Gateway {
  const observed: RawRequestDeps = { metrics: deps.httpMetrics, log: deps.log, ...(deps.accessLogLevel !== undefined ? { accessLogLevel: deps.accessLogLevel } : {}) };
  return function proxyExtensionRequest(req, res, request) {
    const exchange = new Exchange(deps, observed, req, res, request);
    try {
      exchange.begin();
    } catch (err: unknown) {
      exchange.fail(err);
    }
  };
}

/** The life of one proxied request, from its headers to the metrics at close. */
class Exchange {
  private readonly start = performance.now();
  private readonly requestId: string;
  private readonly tally: Tally = { bytesIn: 0, bytesOut: 0 };
  private child: Logger | undefined;

  constructor(
    private readonly deps: GatewayDeps,
    private readonly observed: RawRequestDeps,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly request: GatewayRequest,
  ) {
    this.requestId = requestIdOf(req);
  }

  /** Made on first use: most proxied requests never log. */
  get log(): Logger {
    return (this.child ??= this.deps.log.child({ requestId: this.requestId }));
  }

  begin(): void {
    const extension = this.request.name === '' ? undefined : findExtension(this.deps.settings.current(), this.request.name);
    nameRoute(this.req.method ?? 'GET', GATEWAY_ROUTE);
    // 'close' comes once per response: on() spares the once-wrapper per request.
    this.res.on('close', () => this.observe(extension?.name));
    if (this.request.name === '') throw new ExtensionNotFound('name an extension: /api/v1/extensions/<name>[/<path>]');
    const req = this.req;
    // Read once: the cookie rule, the rights and the backend all see this object (authorized-request.ts).
    const proxied = readProxiedRequest(req, this.request, 'request');
    const caller = this.deps.readCaller({ method: proxied.method, headers: req.headers, protocol: proxied.protocol, socket: req.socket }, 'request');
    if (caller instanceof Promise) {
      caller.then(
        (found) => this.guarded(() => this.proceed(found, proxied)),
        (err: unknown) => this.guarded(() => this.fail(err)),
      );
    } else this.proceed(caller, proxied);
  }

  /** After an await nothing above catches: a failure becomes the error reply here. */
  private guarded(step: () => void): void {
    try {
      step();
    } catch (err: unknown) {
      this.fail(err);
    }
  }

  /**
   * The rate limit first (before the checks: an unauthenticated caller is limited by address);
   * when it is asked of Redis, the rest follows the answer.
   */
  private proceed(caller: Caller, proxied: ProxiedRequest): void {
    const extension = findExtension(this.deps.settings.current(), this.request.name);
    const req = this.req;
    // Checked here first: an unlimited extension makes no closure per request.
    const waiting = extension?.enabled === true && extension.rateLimit !== undefined
      ? this.deps.rateLimiter.take(extension, caller.principal, () => this.deps.sourceOf(req.socket.remoteAddress, req.headers['x-forwarded-for']))
      : undefined;
    if (waiting === undefined) this.dispatch(caller, proxied);
    else {
      waiting.then(
        () => this.guarded(() => this.dispatch(caller, proxied)),
        (err: unknown) => this.guarded(() => this.fail(err)),
      );
    }
  }

  /**
   * From the settings read here to dispatch nothing awaits: the settings, the route and the pool
   * belong together. What is sent is the authorized object, never the client's request again.
   */
  private dispatch(caller: Caller, proxied: ProxiedRequest): void {
    const authorized = authorize(proxied, caller, this.deps.settings.current(), this.deps.rights, this.deps.assertions);
    const extension = authorized.route.extension;
    forward(
      {
        dispatcher: this.deps.pools.get(authorized.route.backend),
        authorized,
        extension: extension.name,
        origin: authorized.url.origin,
        body: this.req,
        idleMs: extension.idleConnTimeoutMs,
        queueMs: QUEUE_WAIT_MS,
        responseHeaders: ['X-Request-Id', this.requestId],
        contentSecurityPolicy: extension.contentSecurityPolicy,
        log: () => this.log,
      },
      this.res,
      this.tally,
      (err) => this.fail(err),
    );
  }

  /** The error reply, as the app's error middleware writes it; a response already started is cut instead. */
  fail(err: unknown): void {
    auditRefusal(this.deps.audit, err, this.req, this.requestId, 'proxy');
    failRequest(this.res, err, this.requestId, this.log, this.request.path, this.req.method);
  }

  private observe(extension: string | undefined): void {
    const status = closeStatus(this.res);
    const seconds = (performance.now() - this.start) / 1000;
    // Configured names only: a client's made-up names would grow the label set without bound.
    if (extension !== undefined) this.deps.metrics.observe({ extension, status, seconds, bytesIn: this.tally.bytesIn, bytesOut: this.tally.bytesOut });
    recordRequest(this.observed, GATEWAY_ROUTE, this.requestId, this.req.method ?? 'GET', this.request.path, status, seconds);
  }
}

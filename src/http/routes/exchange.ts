/**
 * POST /api/v1/session/exchange: RFC 8693 token exchange for workloads. The body is
 * form-encoded as the RFC says, or JSON with the same parameter names. Answers are OAuth's, not
 * svc's `{error, message}`: RFC 8693 §2.2.1 on success, RFC 6749 §5.2 on failure
 * (`invalid_request` with a description naming the failed check, `unsupported_grant_type`),
 * and for what is not the request's fault `temporarily_unavailable` (503: an issuer or the
 * state backend cannot be reached) or `too_many_attempts` (429 with Retry-After: the throttle).
 * Every answer carries `Cache-Control: no-store` (RFC 6749 §5.1).
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type Koa from 'koa';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { InvalidRequest, SvcError, TooManyAttempts } from '../../errors.js';
import { UnsupportedGrantType, type Exchange, type ExchangeRequest } from '../../workload/exchange.js';
import { WORKLOAD_TOKEN_ISSUER } from '../../workload/tokens.js';
import { STATUS } from '../errors.js';
import type { RecordLogin } from './record-login.js';
import type { AppState } from '../state.js';

/** A subject token is at most 16 KiB (verify.ts); the other parameters are short. */
const MAX_BODY_BYTES = 64 * 1024;

export interface ExchangeRouteDeps {
  readonly exchange: Exchange;
  readonly log: Pick<Logger, 'error'>;
  /**
   * The address failures before the signature holds count under: the peer, or the address a
   * trusted front proxy reports (SVC_TRUSTED_PROXIES), so that behind an ingress one caller's
   * forged tokens do not lock out every workload coming the same way.
   */
  readonly sourceOf: (req: IncomingMessage) => string;
  /** The exchange's session into the registry (record-login.ts). */
  readonly recordLogin: RecordLogin;
}

export function exchangeRoutes({ exchange, log, sourceOf, recordLogin }: ExchangeRouteDeps): Router<AppState> {
  const router = declaredRouter();
  router.post('/api/v1/session/exchange', allow('anyone', 'a workload\'s token from a trusted issuer'), async function exchangeToken(ctx) {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    try {
      const result = await exchange({ ...(await readExchangeRequest(ctx)), clientIp: sourceOf(ctx.req) });
      await recordLogin(ctx.req, { id: result.tokenId, account: result.username, kind: 'workload', issuer: WORKLOAD_TOKEN_ISSUER, expiresAt: result.expiresAt }, false);
      ctx.body = { access_token: result.accessToken, issued_token_type: result.issuedTokenType, token_type: 'Bearer', expires_in: result.expiresIn };
    } catch (err: unknown) {
      const reply = oauthError(err);
      if (reply === undefined) {
        log.error({ err, requestId: ctx.state.requestId }, 'token exchange failed');
        ctx.status = 500;
        ctx.body = { error: 'server_error', error_description: `internal error (request ${ctx.state.requestId})` };
        return;
      }
      if (err instanceof TooManyAttempts) ctx.set('Retry-After', String(err.retryAfterSeconds));
      ctx.status = reply.status;
      ctx.body = { error: reply.error, error_description: reply.description };
    }
  });
  return router;
}

/** RFC 6749 §5.2's error for a typed error; undefined for anything else (a bug: 500). */
function oauthError(err: unknown): { status: number; error: string; description: string } | undefined {
  if (!(err instanceof SvcError)) return undefined;
  if (err instanceof UnsupportedGrantType) return { status: 400, error: 'unsupported_grant_type', description: err.message };
  if (err instanceof InvalidRequest) return { status: 400, error: 'invalid_request', description: err.message };
  if (err instanceof TooManyAttempts) return { status: 429, error: 'too_many_attempts', description: err.message.replace('failed logins', 'failed exchanges for this workload') };
  const status = STATUS[err.code];
  return { status, error: status === 503 ? 'temporarily_unavailable' : err.code, description: err.message };
}

async function readExchangeRequest(ctx: Koa.Context): Promise<Omit<ExchangeRequest, 'clientIp'>> {
  const text = await readBody(ctx);
  let get: (name: string) => string | undefined;
  if (typeof ctx.is('application/x-www-form-urlencoded') === 'string') {
    const form = new URLSearchParams(text);
    for (const name of new Set(form.keys())) {
      if (form.getAll(name).length > 1) throw new InvalidRequest(`check 'request' failed: parameter '${name}' is given more than once`);
    }
    get = (name) => form.get(name) ?? undefined;
  } else if (typeof ctx.is('application/json') === 'string') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new InvalidRequest("check 'request' failed: the body is not valid JSON");
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequest("check 'request' failed: the body must be a JSON object");
    get = (name) => {
      const value = (body as Record<string, unknown>)[name];
      if (value === undefined || value === null) return undefined;
      if (typeof value !== 'string') throw new InvalidRequest(`check 'request' failed: parameter '${name}' must be a string`);
      return value;
    };
  } else {
    throw new InvalidRequest("check 'request' failed: the body must be application/x-www-form-urlencoded (RFC 8693) or application/json");
  }
  return {
    grantType: get('grant_type'),
    subjectToken: get('subject_token'),
    subjectTokenType: get('subject_token_type'),
    requestedTokenType: get('requested_token_type'),
    actorToken: get('actor_token'),
  };
}

async function readBody(ctx: Koa.Context): Promise<string> {
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > MAX_BODY_BYTES) throw new InvalidRequest(`check 'size' failed: the request body is larger than ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new InvalidRequest(`check 'size' failed: the request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

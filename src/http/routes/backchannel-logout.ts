/**
 * POST /auth/backchannel-logout: the SSO provider's OIDC Back-Channel Logout 1.0 request (a
 * form with `logout_token`). Unauthenticated by design (the token is the proof), so it is bound
 * before anything costs: a request rate per source address (source-rate.ts) and a small body.
 * 200 when the token was accepted (whether or not a session was still open), 400 with an OAuth
 * error for a refused one (§2.8), never cached. Every refusal is one audit event and one log line.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { AuditTrail } from '../../audit/trail.js';
import { BACKCHANNEL_LOGOUT_PATH } from '../../idp/clients.js';
import { FormTooLarge, readForm } from '../../idp/login/form-body.js';
import { backchannelLogout, type BackchannelLogoutDeps } from '../../oidc/backchannel-logout.js';
import { LogoutTokenRefused } from '../../oidc/logout-token.js';
import { auditSourceOf } from '../audit-source.js';
import { clientAddressOf, sourceOf, type TrustedProxies } from '../client-address.js';
import { createSourceRate } from '../source-rate.js';
import type { AppState } from '../state.js';

export { BACKCHANNEL_LOGOUT_PATH };
/** A logout token is a few hundred bytes; the form holds nothing else. */
const MAX_BODY_BYTES = 16 * 1024;
/** Per source address: a provider sends one per logout; bursts when many users log out at once. */
export const BACKCHANNEL_RATE = { perSecond: 10, burst: 50 } as const;

export interface BackchannelRouteDeps {
  readonly logout: BackchannelLogoutDeps;
  readonly trustedProxies: TrustedProxies;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info'>;
  readonly now: () => number;
}

export function backchannelLogoutRoutes(deps: BackchannelRouteDeps): Router<AppState> {
  const router = declaredRouter();
  const rate = createSourceRate(BACKCHANNEL_RATE, deps.now);

  router.post(BACKCHANNEL_LOGOUT_PATH, allow('anyone', 'a logout token signed by the provider'), async function receiveLogoutToken(ctx) {
    ctx.set('Cache-Control', 'no-store');
    const source = auditSourceOf(ctx.req, ctx.state.requestId, deps.trustedProxies);
    const refuse = (status: number, error: string, description: string): void => {
      deps.audit.record({ category: 'authentication', type: 'end', action: 'backchannel-logout', outcome: 'failure', reason: description, source, svc: { issuer: deps.logout.token.issuer } });
      deps.log.info({ issuer: deps.logout.token.issuer, reason: description, address: source.ip }, 'back-channel logout refused');
      ctx.status = status;
      ctx.body = { error, error_description: description };
    };
    const waitMs = rate.take(sourceOf(clientAddressOf(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], deps.trustedProxies)));
    if (waitMs > 0) {
      ctx.set('Retry-After', String(Math.ceil(waitMs / 1000)));
      return refuse(429, 'temporarily_unavailable', `too many back-channel logout requests from this address; try again in ${Math.ceil(waitMs / 1000)}s`);
    }
    const token = await logoutTokenOf(ctx);
    if (typeof token !== 'string') return refuse(400, 'invalid_request', token.problem);
    try {
      const done = await backchannelLogout(deps.logout, token, source);
      deps.log.info({ issuer: done.issuer, sub: done.sub, sid: done.sid, ended: done.ended }, 'back-channel logout');
      ctx.status = 200;
      ctx.body = '';
    } catch (err: unknown) {
      if (!(err instanceof LogoutTokenRefused)) throw err;
      refuse(400, 'invalid_request', err.message);
    }
  });

  return router;
}

/** The form's one `logout_token`, or what is wrong with the request. */
async function logoutTokenOf(ctx: Koa.ParameterizedContext<AppState>): Promise<string | { readonly problem: string }> {
  if (!ctx.is('application/x-www-form-urlencoded')) return { problem: 'the back-channel logout request must be posted as application/x-www-form-urlencoded' };
  let form: URLSearchParams;
  try {
    form = await readForm(ctx.req, MAX_BODY_BYTES);
  } catch (err: unknown) {
    if (err instanceof FormTooLarge) return { problem: `the back-channel logout request is larger than ${MAX_BODY_BYTES} bytes` };
    throw err;
  }
  const tokens = form.getAll('logout_token');
  if (tokens.length !== 1 || tokens[0] === '') return { problem: "the form must hold exactly one non-empty 'logout_token'" };
  return tokens[0] as string;
}

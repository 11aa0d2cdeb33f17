/**
 * GET /api/v1/session/list and DELETE /api/v1/session/{id}, each with `?account=<name>` for an
 * admin. Thin: who may see what is session/session-access.ts's.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import { InvalidRequest } from '../../errors.js';
import type { SessionAccess } from '../../session/session-access.js';
import { auditSourceOf } from '../audit-source.js';
import { requirePrincipal } from '../auth.js';
import type { TrustedProxies } from '../client-address.js';
import type { AppState } from '../state.js';

export interface SessionListRouteDeps {
  readonly access: SessionAccess;
  readonly trustedProxies: TrustedProxies;
}

/** `?account=` once, or not at all: a repeated one is refused rather than guessed at. */
function accountOf(query: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
  const value = query['account'];
  if (Array.isArray(value)) throw new InvalidRequest("query 'account' is given more than once");
  return value;
}

export function sessionListRoutes({ access, trustedProxies }: SessionListRouteDeps): Router<AppState> {
  const router = declaredRouter('/api/v1/session');

  router.get('/list', allow('caller', 'own sessions; ?account=<local name or person key>: accounts, update <subject>'), async function listSessions(ctx) {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { items: await access.list(requirePrincipal(ctx), accountOf(ctx.query)) };
  });

  router.delete('/:id', allow('caller', 'own session; ?account=<local name or person key>: accounts, update <subject>'), async function endSession(ctx) {
    const id = ctx.params['id'] ?? '';
    await access.end(requirePrincipal(ctx), id, accountOf(ctx.query), auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies));
    ctx.body = {};
  });

  return router;
}

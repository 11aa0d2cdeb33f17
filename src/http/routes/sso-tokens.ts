/**
 * /api/v1/session/tokens: an SSO user's personal API tokens (docs/sso.md). Thin: every route
 * needs a caller, parses its input, calls ssotokens/personal-tokens.ts and maps the result.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../route-access.js';
import { InvalidRequest } from '../../errors.js';
import { parseDuration } from '../../lib/duration.js';
import type { PersonalTokens } from '../../ssotokens/personal-tokens.js';
import { auditSourceOf } from '../audit-source.js';
import { requirePrincipal } from '../auth.js';
import { readJson, requireString, type JsonObject } from '../body.js';
import type { TrustedProxies } from '../client-address.js';
import type { AppState } from '../state.js';

export interface SsoTokenRouteDeps {
  readonly tokens: PersonalTokens;
  readonly trustedProxies: TrustedProxies;
}

export function ssoTokenRoutes({ tokens, trustedProxies }: SsoTokenRouteDeps): Router<AppState> {
  const router = declaredRouter('/api/v1/session/tokens');

  router.post('/', allow('caller', 'an SSO user of the bundled provider'), async function createSsoToken(ctx) {
    const caller = requirePrincipal(ctx);
    const body = await readJson(ctx);
    ctx.body = await tokens.create(caller, { name: requireString(body, 'name'), expiresInSeconds: requiredExpiresIn(body) }, auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies));
  });

  router.get('/', allow('caller', 'an SSO user of the bundled provider'), function listSsoTokens(ctx) {
    ctx.body = { items: tokens.list(requirePrincipal(ctx)) };
  });

  router.delete('/:id', allow('caller', 'an SSO user of the bundled provider'), async function deleteSsoToken(ctx) {
    const caller = requirePrincipal(ctx);
    await tokens.remove(caller, ctx.params['id'] ?? '', auditSourceOf(ctx.req, ctx.state.requestId, trustedProxies));
    ctx.body = {};
  });

  return router;
}

/** `expiresIn`: seconds as a number, or a duration such as "720h"; required, more than 0. */
function requiredExpiresIn(body: JsonObject): number {
  const value = body['expiresIn'];
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  if (typeof value === 'string') {
    const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : parseDuration(value);
    if (ms !== undefined && ms > 0) return Math.ceil(ms / 1000);
  }
  throw new InvalidRequest("field 'expiresIn' is required: a whole number of seconds or a duration such as 720h, 90m; personal API tokens always expire");
}

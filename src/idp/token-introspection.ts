/**
 * Token introspection (RFC 7662) at `/token/introspection`, with svc's rules on top of
 * oidc-provider's feature:
 * - **Who asks.** Only a confidential application of `staticClients`, authenticated with its
 *   secret (throttled as at the token endpoint, ./client-secret-guard.ts). RFC 7662 §2.1 wants
 *   the caller authorized; a public client proves nothing (anyone can send its id), and svc's own
 *   clients never need it. Any other authenticated caller is answered `400 unauthorized_client`,
 *   whatever the token, so the answer tells nothing about the token.
 * - **Whose tokens.** A client learns about the tokens issued to it; with `introspection: any`
 *   (a resource server of the other applications) also those of every other static client, never
 *   those of svc's own clients. Another client's token answers `{"active": false}` and nothing
 *   else, as an unknown one does.
 * - **When active.** oidc-provider's checks (not expired, not revoked, its grant alive, a token
 *   without offline_access only while its provider session lives), then the user's standing at
 *   the directory (./user-standing.ts).
 * - **What it tells.** `sub`, `client_id`, `exp`, `iat`, `scope`, `iss`, `token_type` (access
 *   tokens), and `groups` when the token's scope has `groups`, from the last check. Nothing else
 *   oidc-provider would add (`sid`, `aud`, `jti`): the list above is what applications are told
 *   they get, and a provider upgrade must not widen it silently.
 *
 * The rule is read in the policy (oidc-provider's `allowedPolicy`, called once the token is
 * found and valid) and the answer is shaped after the endpoint, by the middleware below; the
 * groups pass from one to the other with the request's context.
 */
import type { KoaContextWithOIDC } from 'oidc-provider';
import { CLIENT_IDS } from './clients.js';
import { DEFAULT_INTROSPECTION, type IntrospectionReach } from './static-clients-config.js';
import type { StaticClientSource } from './static-clients.js';
import type { UserStanding } from './user-standing.js';

export const INTROSPECTION_PATH = '/token/introspection';
/** What an active answer may carry, and nothing more. */
const TOLD = ['active', 'sub', 'client_id', 'exp', 'iat', 'scope', 'iss', 'token_type'] as const;

export interface TokenIntrospectionDeps {
  readonly staticClients: StaticClientSource;
  readonly standing: UserStanding;
}

/** The parts of oidc-provider's token the policy reads. */
interface IntrospectedToken {
  readonly clientId?: string | undefined;
  readonly accountId?: string | undefined;
  readonly iat?: number | undefined;
  readonly scope?: string | undefined;
}

type Middleware = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>;

export interface TokenIntrospection {
  /** features.introspection of oidc-provider's configuration. */
  readonly feature: {
    readonly enabled: true;
    readonly allowedPolicy: (ctx: KoaContextWithOIDC, client: { readonly clientId: string }, token: IntrospectedToken) => Promise<boolean>;
  };
  /** A provider middleware (provider.use): refuses unfit callers and trims the answer. */
  readonly answer: Middleware;
}

export function createTokenIntrospection(deps: TokenIntrospectionDeps): TokenIntrospection {
  /** The groups of an allowed token, for the answer of the same request. */
  const groupsOf = new WeakMap<object, readonly string[]>();

  /** The caller's reach: undefined when it may not introspect at all. */
  function reachOf(clientId: string): IntrospectionReach | undefined {
    const entry = deps.staticClients().find((c) => c.id === clientId);
    if (entry === undefined || entry.public) return undefined;
    return entry.introspection ?? DEFAULT_INTROSPECTION;
  }

  function mayRead(reach: IntrospectionReach, callerId: string, tokenClientId: string | undefined): boolean {
    if (tokenClientId === undefined) return false;
    if (tokenClientId === callerId) return true;
    return reach === 'any' && !CLIENT_IDS.includes(tokenClientId) && deps.staticClients().some((c) => c.id === tokenClientId);
  }

  return {
    feature: {
      enabled: true,
      async allowedPolicy(ctx, client, token) {
        const reach = reachOf(client.clientId);
        if (reach === undefined || !mayRead(reach, client.clientId, token.clientId)) return false;
        // Every token of svc's provider names its user; one that does not is not vouched for.
        if (token.accountId === undefined || token.iat === undefined) return false;
        const standing = await deps.standing.check(token.accountId, token.iat * 1000);
        if (!standing.active) return false;
        groupsOf.set(ctx, standing.groups);
        return true;
      },
    },
    async answer(ctx, next) {
      if (ctx.method !== 'POST' || ctx.path !== INTROSPECTION_PATH) return next();
      await next();
      if (ctx.status !== 200) return;
      const callerId = ctx.oidc?.client?.clientId;
      if (callerId === undefined || reachOf(callerId) === undefined) {
        ctx.status = 400;
        ctx.body = { error: 'unauthorized_client', error_description: 'only a confidential application registered in staticClients may introspect tokens' };
        return;
      }
      ctx.body = toldOf(ctx.body, groupsOf.get(ctx));
    },
  };
}

/** The answer as applications are told it (see the header); `{active: false}` unless active. */
export function toldOf(body: unknown, groups: readonly string[] | undefined): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || (body as { active?: unknown }).active !== true || groups === undefined) return { active: false };
  const given = body as Record<string, unknown>;
  const told: Record<string, unknown> = {};
  for (const key of TOLD) if (given[key] !== undefined) told[key] = given[key];
  const scopes = typeof given['scope'] === 'string' ? given['scope'].split(' ') : [];
  if (scopes.includes('groups') && groups.length > 0) told['groups'] = [...groups];
  return told;
}

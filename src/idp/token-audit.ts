/**
 * The audit events of the bundled provider's token endpoint: `client-token-issued` for each grant
 * it answered (oidc-provider's `grant.success`), `client-token-refused` for each it refused
 * (`grant.error`: a wrong client secret, a used code, a wrong PKCE verifier), with the client id
 * and the grant type. A device-flow client polling before the person approved
 * (`authorization_pending`, `slow_down`) is routine, not a refusal worth an event.
 *
 * And those of introspection and revocation (RFC 7662, RFC 7009), which oidc-provider announces
 * only when they fail, so a provider middleware records them after the endpoint answered:
 * `client-token-introspected` (`svc.active`; `user.id` when active), `client-token-revoked`
 * (`svc.revoked`: whether the token was the client's own and is gone; `svc.tokenType`), each a
 * failure with the error when the request was refused (client authentication, a bad form).
 */
import type { IncomingMessage } from 'node:http';
import type { AuditTrail } from '../audit/trail.js';
import { auditSourceOf } from '../http/audit-source.js';
import type { TrustedProxies } from '../http/client-address.js';
import { printable } from '../lib/printable.js';

const ROUTINE = new Set(['authorization_pending', 'slow_down']);

/** The parts of oidc-provider's event context read here. */
interface GrantContext {
  readonly req?: IncomingMessage;
  readonly oidc?: {
    readonly client?: { readonly clientId?: string };
    readonly params?: Record<string, unknown>;
    readonly account?: { readonly accountId?: string };
  };
  readonly res?: { getHeader(name: string): unknown };
}
interface GrantError {
  readonly error?: string;
  readonly error_description?: string;
}
interface GrantEvents {
  on(event: string, listener: (ctx: GrantContext, err: GrantError) => void): unknown;
}

export function auditTokenGrants(provider: GrantEvents, audit: AuditTrail, trusted: TrustedProxies): void {
  provider.on('grant.success', (ctx) => {
    const account = ctx.oidc?.account?.accountId;
    audit.record({ category: 'authentication', type: 'start', action: 'client-token-issued', outcome: 'success', ...(account !== undefined ? { user: { id: account } } : {}), ...sourceOf(ctx, trusted), svc: grantOf(ctx) });
  });
  provider.on('grant.error', (ctx, err) => {
    const error = printable(String(err.error ?? 'invalid_request').slice(0, 60));
    if (ROUTINE.has(error)) return;
    const said = err.error_description === undefined ? '' : `: ${printable(err.error_description.slice(0, 200))}`;
    audit.record({ category: 'authentication', type: 'start', action: 'client-token-refused', outcome: 'failure', reason: `${error}${said}`, ...sourceOf(ctx, trusted), svc: { ...grantOf(ctx), error } });
  });
}

/** The parts of a request to introspection or revocation read here, after the endpoint answered. */
interface TokenCheckContext extends GrantContext {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly body: unknown;
  readonly oidc?: GrantContext['oidc'] & {
    readonly entities?: { readonly AccessToken?: EntityToken; readonly RefreshToken?: EntityToken };
  };
}
interface EntityToken {
  readonly clientId?: string | undefined;
  readonly accountId?: string | undefined;
}

/** A provider middleware (provider.use) recording an event for each request to either endpoint. */
export function auditTokenChecks(audit: AuditTrail, trusted: TrustedProxies) {
  return async function auditIntrospectionAndRevocation(ctx: TokenCheckContext, next: () => Promise<void>): Promise<void> {
    const endpoint = ctx.method === 'POST' ? ENDPOINTS[ctx.path] : undefined;
    if (endpoint === undefined) return next();
    await next();
    const clientId = clientOf(ctx);
    const source = sourceOf(ctx, trusted);
    if (ctx.status !== 200) {
      const body = ctx.body as GrantError | undefined;
      const error = printable(String(body?.error ?? 'invalid_request').slice(0, 60));
      const said = body?.error_description === undefined ? '' : `: ${printable(String(body.error_description).slice(0, 200))}`;
      audit.record({ ...endpoint, outcome: 'failure', reason: `${error}${said}`, ...source, svc: { clientId, error } });
      return;
    }
    if (endpoint.action === 'client-token-introspected') {
      const told = ctx.body as { active?: unknown; sub?: unknown; client_id?: unknown };
      const active = told.active === true;
      audit.record({
        ...endpoint, outcome: 'success', ...(active && typeof told.sub === 'string' ? { user: { id: told.sub } } : {}), ...source,
        svc: { clientId, active, ...(active && typeof told.client_id === 'string' ? { tokenClientId: told.client_id } : {}) },
      });
      return;
    }
    const entities = ctx.oidc?.entities;
    const token = entities?.RefreshToken ?? entities?.AccessToken;
    // The revocation policy's own rule (provider.ts): only the caller's own token is revoked.
    const revoked = token !== undefined && token.clientId === ctx.oidc?.client?.clientId;
    const tokenType = entities?.RefreshToken !== undefined ? 'refresh_token' : entities?.AccessToken !== undefined ? 'access_token' : '(unknown)';
    audit.record({
      ...endpoint, outcome: 'success', ...(revoked && token.accountId !== undefined ? { user: { id: token.accountId } } : {}), ...source,
      svc: { clientId, revoked, tokenType },
    });
  };
}

const ENDPOINTS: Readonly<Record<string, { category: 'authentication' | 'session'; type: 'info' | 'end'; action: string }>> = {
  '/token/introspection': { category: 'authentication', type: 'info', action: 'client-token-introspected' },
  '/token/revocation': { category: 'session', type: 'end', action: 'client-token-revoked' },
};

function clientOf(ctx: GrantContext): string {
  const named = ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.['client_id'];
  return typeof named === 'string' ? printable(named.slice(0, 100)) : '(none)';
}

function grantOf(ctx: GrantContext): { clientId: string; grant: string } {
  const named = ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.['client_id'];
  const grant = ctx.oidc?.params?.['grant_type'];
  return { clientId: typeof named === 'string' ? printable(named.slice(0, 100)) : '(none)', grant: typeof grant === 'string' ? printable(grant.slice(0, 100)) : '(none)' };
}

function sourceOf(ctx: GrantContext, trusted: TrustedProxies): { source?: ReturnType<typeof auditSourceOf> } {
  if (ctx.req === undefined) return {};
  const requestId = ctx.res?.getHeader('X-Request-Id');
  return { source: auditSourceOf(ctx.req, typeof requestId === 'string' ? requestId : undefined, trusted) };
}

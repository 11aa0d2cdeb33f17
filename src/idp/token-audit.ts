/**
 * The audit events of the bundled provider's token endpoint: `client-token-issued` for each grant
 * it answered (oidc-provider's `grant.success`), `client-token-refused` for each it refused
 * (`grant.error`: a wrong client secret, a used code, a wrong PKCE verifier), with the client id
 * and the grant type. A device-flow client polling before the person approved
 * (`authorization_pending`, `slow_down`) is routine, not a refusal worth an event.
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
